"""The ``tortoise-bot`` command line: argument parsing and the single error boundary.

Each command is one module in ``bot/commands/`` with ``configure(parser)`` and
``run(args) -> int``; the registry is the literal dict ``bot.commands.COMMANDS``. Only the
command the arguments name is imported and configured (``tortoise-bot --help`` imports no
command, no pydantic, numpy or GitHub client). Exit codes: see ``bot.errors``.
"""

from __future__ import annotations

import argparse
import difflib
import gc
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

from bot import __version__
from bot.commands import COMMANDS
from bot.config.errors import ConfigError
from bot.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE, UsageError
from bot.logs import setup_logging
from bot.redaction import RedactingStream, redact

log = logging.getLogger("bot.cli")


GLOBAL_DEFAULTS = {"log_format": "text", "log_level": "WARNING", "color": "auto"}
"""Defaults of the global options (see ``add_global_options``)."""


def add_global_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """``--log-format``, ``--log-level`` and ``--color``, accepted before or after the command.

    The top-level parser holds the defaults; each command's parser declares the same options
    without a default (``SUPPRESS``), so a value given before the command is kept unless the
    same option is given again after it.
    """

    def default(dest: str) -> str:
        return GLOBAL_DEFAULTS[dest] if defaults else argparse.SUPPRESS

    group = parser.add_argument_group("global options")
    group.add_argument(
        "--log-format",
        choices=("text", "json"),
        default=default("log_format"),
        help="Log format on stderr.",
    )
    group.add_argument(
        "--log-level",
        type=str.upper,
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        default=default("log_level"),
        help="Log level.",
    )
    group.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default=default("color"),
        help="Colours and rich tables: auto (on a terminal), always or never (plain text).",
    )


_GLOBAL_PARSER = argparse.ArgumentParser(add_help=False)
add_global_options(_GLOBAL_PARSER, defaults=True)
"""The global options alone: which of them take a value (``command_named``)."""


class CommandParser(argparse.ArgumentParser):
    """A command's parser: an unknown argument is reported with this command's usage (not the
    top-level one), with the closest option it may have meant."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extra = super().parse_known_args(args, namespace)
        if extra:
            message = f"unrecognized arguments: {' '.join(extra)}"
            options = [o for a in self._actions for o in a.option_strings]
            for word in extra:
                close = difflib.get_close_matches(word.split("=")[0], options, n=1)
                if word.startswith("-") and close:
                    message += f" (did you mean {close[0]}?)"
                    break
            self.error(message)
        return parsed, extra


def command_named(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not a global option or an option's
    value (None: none, e.g. ``--help``)."""
    valued = [o for a in _GLOBAL_PARSER._actions if a.nargs is None for o in a.option_strings]
    words = iter(argv)
    for word in words:
        if not word.startswith("-"):
            return word
        if word.startswith("--") and "=" not in word and any(o.startswith(word) for o in valued):
            next(words, None)  # the option's value
    return None


class VersionAction(argparse.Action):
    """``--version``: the version and which XOR-chunk decoder this installation runs (the
    compiled one, or the numpy one when it was installed without a C compiler); the decoder is
    looked up only when asked, so ``--help`` loads nothing of it (and ``--version`` no numpy)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from bot.metrics.xor_library import DECODER  # noqa: PLC0415 (for --version only)

        sys.stdout.write(f"tortoise-bot {__version__}\nXOR-chunk decoder: {DECODER}\n")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with one sub-command per entry of ``COMMANDS``; with ``command``, only that
    one is configured (only its module is imported), else every one."""
    parser = argparse.ArgumentParser(
        prog="tortoise-bot",
        description="Right-size Kubernetes workloads in GitOps repositories, one pull request at a time.",
    )
    parser.add_argument("--version", action=VersionAction, help="show the version and exit")
    add_global_options(parser, defaults=True)
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=CommandParser
    )
    for name, entry in COMMANDS.items():
        command_parser = sub.add_parser(name, help=entry.help, description=entry.help)
        if command is None or command == name:
            entry.load().configure(command_parser)
            add_global_options(command_parser, defaults=False)
    return parser


BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"
"""numpy's OpenBLAS starts one thread per core when numpy is imported; the bot does no linear
algebra (no matrix product, no ``numpy.linalg``), so its command line asks for one unless the
environment already names a number: about 20 ms less CPU at start-up on 2 cores, more on
larger machines, and no idle threads per worker process."""


@contextmanager
def loading_once() -> Iterator[None]:
    """No garbage collection while the command's modules load, then those objects frozen.

    Loading a command builds ~50,000 objects (classes, functions, pydantic validators) that live
    as long as the process; collections during the load only scan them again and again (about
    60 ms of CPU for ``plan --demo``, a tenth of its start-up). ``gc.freeze`` then keeps every
    later collection off them. Collection is on again before the command runs (``serve`` runs
    for days). For the process's own command line only: a caller's objects are not frozen."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit code. Everything the command writes to stdout and
    stderr passes through ``bot.redaction`` (no secret is ever printed). Without ``argv`` (the
    process's own command line: the console script, ``python -m bot``), the command loads
    ``loading_once`` with one BLAS thread (``BLAS_THREADS_ENV``)."""
    own = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    if own:
        os.environ.setdefault(BLAS_THREADS_ENV, "1")
    with loading_once() if own else nullcontext():
        parser = build_parser(command_named(argv) or "")
    args = parser.parse_args(argv)
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(out), RedactingStream(err)
    try:
        setup_logging(args.log_format, args.log_level)
        return _run(args)
    finally:
        sys.stdout, sys.stderr = out, err


def _run(args: argparse.Namespace) -> int:
    """The command, inside the one error boundary."""
    try:
        code: int = COMMANDS[args.command].load().run(args)
        return code
    except ConfigError as exc:
        print(f"tortoise-bot: invalid configuration:\n{redact(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except UsageError as exc:
        print(f"tortoise-bot: {redact(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("tortoise-bot: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the one boundary: anything else is a bug
        log.exception("internal error")
        print(f"tortoise-bot: internal error: {redact(repr(exc))}", file=sys.stderr)
        return EXIT_INTERNAL
