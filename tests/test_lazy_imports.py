"""A command imports only what it uses: checked by the modules a fresh interpreter holds after
it (no timing; ``benchmarks/README.md`` has the start-up figures)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest

from tests.conftest import PROJECT

HEAVY = ("numpy", "pydantic", "ruamel", "rich", "jinja2", "requests", "github", "cryptography")
"""Third-party packages that cost start-up time."""
PUBLISHING = ("github", "cryptography", "requests", "jinja2", "apscheduler")
"""What only serving repositories on GitHub (``run``, ``serve``) needs."""


TERMINAL_ONLY = ("rich.progress", "rich.live", "rich.syntax", "pygments")
"""What only drawing on a terminal needs (live progress bars, the coloured diff)."""


def after(argv: Sequence[str], report: str) -> Any:
    """``report`` (a JSON-able expression) in a new interpreter after ``tortoise-bot ARGV``
    run as its own command line."""
    code = (
        "import contextlib, gc, io, json, os, sys\n"
        "from bot.cli import main\n"
        f"sys.argv = ['tortoise-bot', *{list(argv)!r}]\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(json.dumps({report}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def loaded_after(*argv: str) -> set[str]:
    """Top-level packages a new interpreter holds after ``tortoise-bot ARGV``."""
    return set(after(argv, "sorted({m.partition('.')[0] for m in sys.modules})"))


@pytest.mark.parametrize("argv", [["--help"], ["--version"]], ids=["help", "version"])
def test_top_level_help_imports_no_command_and_no_heavy_package(argv):
    loaded = loaded_after(*argv)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_plan_imports_nothing_of_publishing_nor_of_a_terminal():
    loaded = set(after(["plan", "--demo", "--color", "never"], "sorted(sys.modules)"))
    assert "numpy" in loaded  # it did plan
    packages = {m.partition(".")[0] for m in loaded}
    assert not packages & set(PUBLISHING), sorted(packages & set(PUBLISHING))
    assert not loaded & set(TERMINAL_ONLY), sorted(loaded & set(TERMINAL_ONLY))


def test_the_command_line_freezes_what_it_loaded_and_collects_again():
    """``tortoise-bot`` loads its command without garbage collection and with one BLAS thread,
    freezes what it built and runs the command with collection on (a long ``serve`` needs it)."""
    report = "[gc.isenabled(), gc.get_freeze_count(), os.environ.get('OPENBLAS_NUM_THREADS')]"
    enabled, frozen, blas_threads = after(["plan", "--demo"], report)
    assert enabled
    assert frozen > 10_000
    assert blas_threads == "1"


def test_a_command_help_loads_that_command_only():
    """``schema --help`` configures ``schema`` alone: no other command module is imported."""
    code = (
        "import sys\nfrom bot.cli import main\n"
        "try:\n    main(['schema', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('bot.commands.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines()[-1] == "['bot.commands.schema']"
