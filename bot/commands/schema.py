"""``tortoise-bot schema``: write the configuration JSON Schemas and the reference tables."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.config.reference import refresh
from bot.config.schema import DOC_TABLES, write_schemas

HELP = "Write the configuration JSON Schemas and refresh the tables in docs/configuration.md."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("config"), help="Directory to write to.")
    parser.add_argument(
        "--docs",
        type=Path,
        default=Path("docs/configuration.md"),
        help="Reference document whose generated tables are refreshed (skipped if absent).",
    )


def run(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    for path in write_schemas(args.out):
        print(path)
    if args.docs.is_file():
        args.docs.write_text(refresh(args.docs.read_text(), DOC_TABLES))
        print(args.docs)
    return 0
