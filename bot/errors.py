"""Exit codes shared by the CLI (see ``docs/cli.md``).

Package errors live in each package's own ``errors.py``::

    ConfigError                 bot.config.errors
    ManifestError               bot.manifests.errors
    MetricsError                bot.metrics.errors
    ForgeError, GitError        bot.forge.errors
"""

EXIT_OK = 0
"""Every repository succeeded."""
EXIT_FAILED = 1
"""At least one repository (or the requested workload) failed; the others were still done."""
EXIT_USAGE = 2
"""Bad bot configuration, bad input file or bad command line."""
EXIT_INTERNAL = 3
"""A bug: an unexpected exception reached the CLI boundary."""
EXIT_INTERRUPTED = 130
"""Interrupted by Ctrl-C."""


class UsageError(Exception):
    """Bad command-line input or input file; the CLI prints it and exits with ``EXIT_USAGE``."""
