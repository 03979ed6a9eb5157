"""``tortoise-bot schema [--out DIR]``: write the configuration JSON Schemas."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.config.schema import write_schemas

HELP = "Write the JSON Schemas of the configuration files (default: ./config)."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("config"), help="Directory to write to.")


def run(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    for path in write_schemas(args.out):
        print(path)
    return 0
