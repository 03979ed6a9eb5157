"""``tortoise-bot schema``: write the configuration JSON Schemas, the reference tables and the
JSON Schemas of the documents the bot reads (``docs/schemas/``), each from its pydantic model."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.config.reference import refresh
from bot.config.schema import DOC_TABLES, schema_text, write_schemas
from bot.recommend.document import SCHEMA_FILE, InputDocument

DOCUMENT_SCHEMAS = {SCHEMA_FILE: InputDocument}
"""File name in ``docs/schemas/`` -> the model of the document it describes."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("config"), help="Directory to write to.")
    parser.add_argument(
        "--docs",
        type=Path,
        default=Path("docs/configuration.md"),
        help="Reference document whose generated tables are refreshed (skipped if absent).",
    )
    parser.add_argument(
        "--schemas",
        type=Path,
        default=Path("docs/schemas"),
        help="Directory of the input document schemas (skipped if absent).",
    )


def run(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    for path in write_schemas(args.out):
        print(path)
    if args.docs.is_file():
        args.docs.write_text(refresh(args.docs.read_text(), DOC_TABLES))
        print(args.docs)
    if args.schemas.is_dir():
        for name, model in DOCUMENT_SCHEMAS.items():
            path = args.schemas / name
            path.write_text(schema_text(model), encoding="utf-8")
            print(path)
    return 0
