"""CLI commands, one module each; the registry is this literal dict."""

from __future__ import annotations

import argparse
from types import ModuleType
from typing import Protocol

from bot.commands import (
    explain,
    plan,
    recommend,
    run,
    schema,
    serve,
    set_values,
    simulate,
    snapshot,
    validate,
)


class Command(Protocol):
    """What a command module provides."""

    HELP: str

    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


COMMANDS: dict[str, ModuleType] = {
    "plan": plan,
    "run": run,
    "explain": explain,
    "validate": validate,
    "serve": serve,
    "recommend": recommend,
    "set": set_values,
    "snapshot": snapshot,
    "simulate": simulate,
    "schema": schema,
}
