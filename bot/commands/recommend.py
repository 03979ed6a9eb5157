"""`tortoise-bot recommend`: Run the engine on one workload's history given as JSON.

Input: ``docs/schemas/recommend-input.schema.json``; output (``--format json``): the plan's
workload object (``docs/schemas/plan.schema.json``, ``$defs/workload``). A malformed file or
setting is a usage error (exit 2) naming the field.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bot.commands.common import print_json
from bot.config.recommend import RecommendSettings, resolve
from bot.errors import EXIT_OK, UsageError
from bot.model import RESOURCES, FieldId, Recommendation
from bot.nesting import NestingError, check_json
from bot.recommend.document import parse_document
from bot.recommend.engine import recommend
from bot.recommend.errors import InputError
from bot.report.numbers import amount, field_value
from bot.report.outcome_json import workload_json


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input", required=True, metavar="FILE", help="JSON history of one workload ('-': stdin)"
    )
    parser.add_argument("--format", choices=("table", "json"), default="table")


def _load(path: str) -> Any:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        check_json(text)
        return json.loads(text)
    except NestingError as exc:
        raise UsageError(f"{path}:{exc.line}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc


def _settings(overrides: Any, path: str) -> RecommendSettings:
    try:
        return resolve(RecommendSettings(), overrides)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            loc = ".".join(str(part) for part in error["loc"])
            problems.append(f"{path}: settings.{loc}: {error['msg']}" if loc else error["msg"])
        raise UsageError("\n".join(problems)) from exc


def _percent(value: float | int | None) -> str:
    return "—" if value is None else f"{value}%"


def table(rec: Recommendation) -> str:
    """A plain-text table of every value, its proposal and rule."""
    ref = rec.ref
    lines = [f"{ref.kind}/{ref.namespace}/{ref.name}@{ref.environment}: {rec.status}"]
    lines += [f"  {reason}" for reason in rec.reasons]
    rows = [("container", "field", "policy", "current", "proposed", "vpa target", "rule")]
    for container in rec.containers:
        for resource in RESOURCES:
            rr = container.resource(resource)
            target = amount(resource, rr.vpa.target) if rr.vpa else "—"
            for kind, value in (("request", rr.request), ("limit", rr.limit)):
                rows.append(
                    (
                        container.name,
                        f"{kind}.{resource}",
                        rr.policy,
                        amount(resource, value.current),
                        amount(resource, value.proposed),
                        target if kind == "request" else "",
                        value.rule,
                    )
                )
    if rec.hpa is not None:
        for name, value in (
            (FieldId.HPA_MIN_REPLICAS, rec.hpa.min_replicas),
            (FieldId.HPA_MAX_REPLICAS, rec.hpa.max_replicas),
        ):
            rows.append(
                (
                    "",
                    name.text,
                    "",
                    field_value(name, value.current),
                    field_value(name, value.proposed),
                    "",
                    value.rule,
                )
            )
        for t in rec.hpa.targets:
            rows.append(
                (
                    t.container,
                    FieldId.hpa_target(t.resource).text,
                    "",
                    _percent(t.value.current),
                    "removed"
                    if t.value.proposed is None and t.value.current is not None
                    else _percent(t.value.proposed),
                    "",
                    t.value.rule,
                )
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        lines.append(
            "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    data = _load(args.input)
    try:
        doc = parse_document(data)
    except InputError as exc:
        raise UsageError(f"{args.input}: {exc}") from exc
    settings = _settings(doc.settings, args.input)
    rec = recommend(doc.input, settings, now_s=doc.now_s)
    if args.format == "json":
        print_json(workload_json(rec))
    else:
        print(table(rec))
    return EXIT_OK
