"""Exit codes shared by the CLI (see ``docs/cli.md``).

Package errors live in each package's own ``errors.py``::

    ConfigError                 bot.config.errors
    ManifestError               bot.manifests.errors
    MetricsError                bot.metrics.errors
    ForgeError, GitError        bot.forge.errors
"""

from typing import Literal, TypeAlias

EXIT_OK = 0
"""The bot did its work; findings in the repositories are warnings (listed, on the dashboard)."""
EXIT_FAILED = 1
"""The bot failed at its own work (Prometheus or GitHub down, a repository it could not serve
at all, an internal error), or ``validate --strict`` met a finding."""
EXIT_USAGE = 2
"""Bad bot configuration, bad input file or bad command line."""
EXIT_INTERNAL = 3
"""A bug: an unexpected exception reached the CLI boundary."""
EXIT_INTERRUPTED = 130
"""Interrupted by Ctrl-C."""


class UsageError(Exception):
    """Bad command-line input or input file; the CLI prints it and exits with ``EXIT_USAGE``."""


Severity: TypeAlias = Literal["finding", "failure"]
"""Whose problem it is. ``finding``: something in the repository the bot cannot read, edit or
act on (a manifest, an overlay, an autoscaler pointing outside the repository, an edit refused
because it would not render): a warning, exit 0. ``failure``: the bot could not do its own work
(history unavailable, the forge down, an unexpected error): exit 1."""


def exit_code(*, failures: int, findings: int = 0, strict: bool = False) -> int:
    """The exit code of a command that did its work with ``failures`` and ``findings``: the one
    place that decides (``docs/cli.md``); ``strict`` (``validate --strict``) fails on findings."""
    if failures or (strict and findings):
        return EXIT_FAILED
    return EXIT_OK
