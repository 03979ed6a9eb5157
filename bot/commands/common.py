"""Options and set-up shared by the commands that plan a checkout (plan, explain, snapshot)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bot.config.bot import BotSettings, load_bot_settings
from bot.errors import UsageError
from bot.logs import add_secret
from bot.metrics.errors import SnapshotError
from bot.metrics.prometheus import PrometheusSource
from bot.metrics.snapshot import SnapshotSource
from bot.metrics.source import HistorySource

PROMETHEUS_URL_ENV = "TORTOISE_BOT_PROMETHEUS_URL"
"""Overrides ``prometheus.url`` of the bot settings."""


def add_settings_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="Bot settings file (YAML).")


def add_source_options(parser: argparse.ArgumentParser, *, snapshot: bool = True) -> None:
    """``--prometheus URL`` / ``--snapshot FILE`` and ``--now ISO8601``."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--prometheus", metavar="URL", help="Prometheus-compatible API base URL.")
    if snapshot:
        group.add_argument("--snapshot", type=Path, metavar="FILE", help="Replay a snapshot.")
    parser.add_argument(
        "--now",
        metavar="ISO8601",
        help="End of the history window (default: now, or the snapshot's end).",
    )


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
    """Redact every secret the settings point at from all output (``bot.logs``)."""
    auth = settings.prometheus.auth
    for var in (
        settings.github.token_env,
        settings.github.app_private_key_env,
        auth.bearer_token_env,
        auth.basic_password_env,
        *settings.prometheus.headers_from_env.values(),
    ):
        if var:
            add_secret(env.get(var))


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
        raise UsageError(f"--snapshot {path}: {exc}") from exc


def choose_source(args: argparse.Namespace, settings: BotSettings) -> SourceChoice:
    """A snapshot when ``--snapshot`` is given, else Prometheus; raises ``UsageError`` for neither."""
    now_s = parse_now(getattr(args, "now", None))
    snapshot_path = getattr(args, "snapshot", None)
    if snapshot_path is not None:
        source = open_snapshot(snapshot_path)
        return SourceChoice(
            source, now_s if now_s is not None else source.end_s, f"snapshot {snapshot_path}"
        )
    if not settings.prometheus.url:
        raise UsageError(
            "no history source: pass --prometheus URL or --snapshot FILE "
            f"(or set prometheus.url in --config, or {PROMETHEUS_URL_ENV})"
        )
    now = now_s if now_s is not None else datetime.now(UTC).timestamp()
    return SourceChoice(
        PrometheusSource(settings.prometheus, env=os.environ), now, settings.prometheus.url
    )
