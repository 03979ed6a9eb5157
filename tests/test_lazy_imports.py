"""A command imports only what it uses: checked by the modules a fresh interpreter holds after
it (no timing; ``benchmarks/README.md`` has the start-up figures)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import PROJECT

HEAVY = ("numpy", "pydantic", "ruamel", "rich", "jinja2", "requests", "github", "cryptography")
"""Third-party packages that cost start-up time."""
PUBLISHING = ("github", "cryptography", "requests", "jinja2", "apscheduler")
"""What only serving repositories on GitHub (``run``, ``serve``) needs."""


def loaded_after(*argv: str) -> set[str]:
    """Top-level packages a new interpreter holds after ``tortoise-bot ARGV``."""
    code = (
        "import contextlib, io, json, sys\n"
        "from bot.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({list(argv)!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(json.dumps(sorted({m.partition('.')[0] for m in sys.modules})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize("argv", [["--help"], ["--version"]], ids=["help", "version"])
def test_top_level_help_imports_no_command_and_no_heavy_package(argv):
    loaded = loaded_after(*argv)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_plan_imports_nothing_of_publishing():
    loaded = loaded_after("plan", "--demo", "--color", "never")
    assert "numpy" in loaded  # it did plan
    assert not loaded & set(PUBLISHING), sorted(loaded & set(PUBLISHING))


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
