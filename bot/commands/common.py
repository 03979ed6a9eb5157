"""Options and set-up shared by the commands that plan a checkout (plan, explain, snapshot,
validate), including ``--demo``: the embedded demo shop instead of ``--repo``."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from pathlib import Path

from bot import metrics
from bot.clock import now_outside_history
from bot.config.bot import BotSettings, load_bot_settings
from bot.errors import UsageError
from bot.metrics.errors import SnapshotError
from bot.metrics.snapshot import SnapshotSource
from bot.metrics.source import HistorySource
from bot.model import WorkloadRef
from bot.outcome_view import environment_names
from bot.redaction import add_basic, add_secret

PROMETHEUS_URL_ENV = "TORTOISE_BOT_PROMETHEUS_URL"
"""Overrides ``prometheus.url`` of the bot settings."""

DEMO_DIR = Path(__file__).resolve().parent.parent / "demo"
"""The embedded demo: ``repo/`` (manifests), ``snapshot.zip`` (recorded history), ``bot.yaml``."""

DEMO_NAME = "demo-shop"
"""How output names the demo repository."""


def print_json(document: object) -> None:
    """``document`` as indented JSON and a newline on stdout, written at once: the redacting
    stream (``bot.redaction``) then reads the whole text in one pass, not the encoder's
    thousands of small pieces (a 3,000-container plan is millions of them)."""
    sys.stdout.write(json.dumps(document, indent=2) + "\n")


def add_target_options(parser: argparse.ArgumentParser) -> None:
    """``--repo PATH`` or ``--demo`` (one of them is required)."""
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--repo", type=Path, metavar="PATH", help="Repository checkout.")
    target.add_argument(
        "--demo", action="store_true", help="Use the embedded demo shop (no cluster needed)."
    )


@contextmanager
def demo_checkout() -> Iterator[Path]:
    """A throw-away copy of the demo repository (so ``--write`` never touches the package)."""
    with tempfile.TemporaryDirectory(prefix="tortoise-bot-demo-") as tmp:
        root = Path(tmp) / DEMO_NAME
        shutil.copytree(DEMO_DIR / "repo", root)
        yield root


def display_name(path: Path) -> str:
    """How output names a checkout: its absolute path (``.`` says nothing)."""
    return str(path.resolve())


@dataclass(frozen=True, slots=True)
class WorkloadSelector:
    """``--namespace``, ``--workload``, ``--environment``: shell globs (``pay*``, ``cell-0?``)
    a workload must all match; an environment matches by its whole name or its last path
    segments (``cell-07`` for ``clusters/…/overlays/cell-07``). Applied after discovery and
    before any history is fetched, so the queries shrink with the selection."""

    namespace: str | None = None
    workload: str | None = None
    environment: str | None = None

    def __bool__(self) -> bool:
        return any((self.namespace, self.workload, self.environment))

    def __call__(self, ref: WorkloadRef) -> bool:
        if self.namespace and not fnmatchcase(ref.namespace, self.namespace):
            return False
        if self.workload and not fnmatchcase(ref.name, self.workload):
            return False
        pattern = self.environment
        return not pattern or any(fnmatchcase(e, pattern) for e in environment_names(ref))

    def describe(self) -> str:
        """``namespace pay*, environment cell-0?``: what was asked, for messages."""
        asked = [("namespace", self.namespace), ("workload", self.workload)]
        asked.append(("environment", self.environment))
        return ", ".join(f"{k} {v}" for k, v in asked if v)


def add_selector_options(parser: argparse.ArgumentParser) -> None:
    """``--namespace GLOB``, ``--workload GLOB``, ``--environment GLOB`` (``WorkloadSelector``)."""
    group = parser.add_argument_group("selection (shell globs, all must match)")
    group.add_argument("--namespace", metavar="GLOB", help="Only workloads in these namespaces.")
    group.add_argument(
        "--workload",
        dest="workload_glob",
        metavar="GLOB",
        help="Only workloads with these names.",
    )
    group.add_argument(
        "--environment",
        metavar="GLOB",
        help="Only these environments (the whole name or its last path segments).",
    )


def selector_of(args: argparse.Namespace) -> WorkloadSelector | None:
    """The selection the arguments ask for; None: every workload."""
    chosen = WorkloadSelector(
        getattr(args, "namespace", None),
        getattr(args, "workload_glob", None),
        getattr(args, "environment", None),
    )
    return chosen if chosen else None


def add_settings_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="Bot settings file (YAML).")


def add_source_options(parser: argparse.ArgumentParser, *, snapshot: bool = True) -> None:
    """``--prometheus URL`` / ``--snapshot FILE`` and ``--now ISO8601``."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--prometheus", metavar="URL", help="Prometheus-compatible API base URL.")
    if snapshot:
        group.add_argument("--snapshot", type=Path, metavar="FILE", help="Replay a snapshot.")
        parser.add_argument(
            "--force",
            action="store_true",
            help="Replay a snapshot recorded for another repository.",
        )
    parser.add_argument(
        "--now",
        metavar="ISO8601",
        help="End of the history window (default: now, or the snapshot's end).",
    )


def snapshot_now(source: SnapshotSource, now_s: float | None, path: Path) -> float:
    """``--now`` when it lies within the snapshot's history (``now_outside_history``), the
    snapshot's end when not given; raises ``UsageError`` naming the file otherwise."""
    if now_s is None:
        return source.end_s
    outside = now_outside_history(now_s, source.start_s, source.end_s)
    if outside is not None:
        raise UsageError(f"--now: {outside} of {path}")
    return now_s


def parse_now(text: str | None) -> float | None:
    """Unix seconds of an ISO 8601 time (naive means UTC); None when not given."""
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise UsageError(
            f"--now: expected ISO 8601 such as 2026-11-23T06:00:00Z, got {text!r}"
        ) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


@dataclass(frozen=True, slots=True)
class SourceChoice:
    """The history source a command uses and the ``now`` (unix s) it plans at."""

    source: HistorySource
    now_s: float
    description: str


def register_secrets(settings: BotSettings, env: Mapping[str, str]) -> None:
    """Redact every secret the settings point at, in each encoding sent, from all output
    (``bot.redaction``); the Prometheus client adds the token it reads from a file."""
    auth = settings.prometheus.auth
    for var in (
        settings.github.token_env,
        settings.github.app_private_key_env,
        auth.bearer_token_env,
        *settings.prometheus.headers_from_env.values(),
    ):
        if var:
            add_secret(env.get(var))
    if auth.basic_username and auth.basic_password_env:
        add_basic(auth.basic_username, env.get(auth.basic_password_env))


def load_settings(args: argparse.Namespace) -> BotSettings:
    """Bot settings from ``--config`` with ``--prometheus`` / the URL variable applied."""
    settings = load_bot_settings(getattr(args, "config", None))
    register_secrets(settings, os.environ)
    url = getattr(args, "prometheus", None) or os.environ.get(PROMETHEUS_URL_ENV)
    if url:
        prometheus = settings.prometheus.model_copy(update={"url": url})
        settings = settings.model_copy(update={"prometheus": prometheus})
    return settings


def open_snapshot(path: Path) -> SnapshotSource:
    """The snapshot at ``path``; a missing or corrupt file is a usage error (exit 2)."""
    try:
        return SnapshotSource(path)
    except SnapshotError as exc:
        raise UsageError(f"--snapshot {exc}") from exc


def demo_source(args: argparse.Namespace) -> SourceChoice:
    """The demo's recorded history; ``--prometheus`` / ``--snapshot`` are usage errors."""
    if getattr(args, "prometheus", None) or getattr(args, "snapshot", None):
        raise UsageError("--demo brings its own history: drop --prometheus / --snapshot")
    path = DEMO_DIR / "snapshot.zip"
    source = open_snapshot(path)
    now_s = parse_now(getattr(args, "now", None))
    return SourceChoice(source, snapshot_now(source, now_s, path), "embedded demo")


@dataclass(frozen=True, slots=True)
class Target:
    """What a planning command works on: the checkout, its display name, settings and source."""

    root: Path
    name: str
    settings: BotSettings
    choice: SourceChoice


@contextmanager
def planning_target(args: argparse.Namespace) -> Iterator[Target]:
    """The checkout of ``--repo`` (or a copy of the demo for ``--demo``, with the demo's bot
    settings unless ``--config`` is given), its settings and its history source."""
    if args.demo:
        if args.config is None:
            args.config = DEMO_DIR / "bot.yaml"
        settings = load_settings(args)
        choice = demo_source(args)
        with demo_checkout() as root:
            yield Target(root, DEMO_NAME, settings, choice)
        return
    if not args.repo.is_dir():
        raise UsageError(f"--repo {args.repo}: not a directory")
    settings = load_settings(args)
    choice = choose_source(args, settings)
    if isinstance(choice.source, SnapshotSource):
        from bot.commands.origin import Repository, check_snapshot  # noqa: PLC0415 (a cycle)

        check_snapshot(
            choice.source,
            [Repository.of_checkout(args.repo)],
            force=args.force,
            selected=selector_of(args),
        )
    yield Target(args.repo, display_name(args.repo), settings, choice)


def choose_source(args: argparse.Namespace, settings: BotSettings) -> SourceChoice:
    """A snapshot when ``--snapshot`` is given, else Prometheus; raises ``UsageError`` for neither."""
    now_s = parse_now(getattr(args, "now", None))
    snapshot_path = getattr(args, "snapshot", None)
    if snapshot_path is not None:
        source = open_snapshot(snapshot_path)
        return SourceChoice(
            source, snapshot_now(source, now_s, snapshot_path), f"snapshot {snapshot_path}"
        )
    if not settings.prometheus.url:
        raise UsageError(
            "no history source: pass --prometheus URL or --snapshot FILE "
            f"(or set prometheus.url in --config, or {PROMETHEUS_URL_ENV})"
        )
    now = now_s if now_s is not None else datetime.now(UTC).timestamp()
    return SourceChoice(
        metrics.PrometheusSource(settings.prometheus, env=os.environ), now, settings.prometheus.url
    )
