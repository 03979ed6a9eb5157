"""The console script: help, version, exit codes at the error boundary."""

from __future__ import annotations

import subprocess
import sys

from bot import __version__
from bot.cli import build_parser
from bot.commands import COMMANDS


def test_version_through_console_script(cli):
    result = cli("--version")
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        f"tortoise-bot {__version__}",
        "XOR-chunk decoder: compiled",  # scripts/setup installs a C compiler
    ]


def test_every_command_has_help(cli):
    result = cli("--help")
    assert result.returncode == 0
    for name in COMMANDS:
        assert name in result.stdout


def test_unknown_command_is_a_usage_error(cli):
    result = cli("frobnicate")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_python_dash_m_bot_is_the_same_entry_point():
    out = subprocess.run(
        [sys.executable, "-m", "bot", "--version"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0 and __version__ in out.stdout


def test_parser_registers_each_command_once():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert sub.choices is not None
    assert sorted(sub.choices) == sorted(COMMANDS)
