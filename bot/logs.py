"""Logging set-up: human-readable or JSON lines on stderr, with secrets redacted."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from typing import Literal

LogFormat = Literal["text", "json"]

SECRET_ENV_VARS = ("GITHUB_TOKEN", "TORTOISE_BOT_APP_PRIVATE_KEY")
"""Environment variables whose values are never printed (the defaults of the settings that
name secret variables; commands register the configured ones with ``add_secret``)."""

MIN_SECRET_CHARS = 4
"""Shorter values are not redacted (they would blank out ordinary words)."""

_SECRETS: set[str] = set()
"""Secret values registered by the commands that read them (process-wide, like logging)."""


def add_secret(value: str | None) -> None:
    """Never print ``value`` (and each of its lines, for PEM keys) from now on."""
    if not value:
        return
    for raw in (value, *value.splitlines()):
        part = raw.strip()
        if len(part) >= MIN_SECRET_CHARS and not part.startswith("-----"):
            _SECRETS.add(part)


_TOKEN_PATTERNS = re.compile(
    r"(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|"
    r"(?i:authorization:\s*(?:bearer|token|basic)\s+)\S+|x-access-token:[^@\s]+)"
)


def redact(text: str) -> str:
    """``text`` with known secret values and token-shaped strings replaced by ``***``."""
    secrets = set(_SECRETS)
    for var in SECRET_ENV_VARS:
        value = os.environ.get(var)
        if value and len(value) >= MIN_SECRET_CHARS:
            secrets.add(value)
    for value in sorted(secrets, key=len, reverse=True):
        text = text.replace(value, "***")
    return _TOKEN_PATTERNS.sub("***", text)


class RedactingFilter(logging.Filter):
    """Redacts every record's rendered message before any handler sees it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage())
        record.args = None
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and ``extra`` fields."""

    _STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}

    def format(self, record: logging.LogRecord) -> str:
        data = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in self._STANDARD:
                data[key] = value
        if record.exc_info:
            data["exception"] = redact(self.formatException(record.exc_info))
        return json.dumps(data, default=str)


def setup_logging(fmt: LogFormat = "text", level: str = "WARNING") -> None:
    """Route the ``bot`` loggers to stderr in ``fmt``; idempotent."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RedactingFilter())
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("bot")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
