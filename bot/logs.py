"""Logging set-up: human-readable or JSON lines on stderr, with secrets redacted."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from typing import Literal

LogFormat = Literal["text", "json"]

SECRET_ENV_VARS = (
    "GITHUB_TOKEN",
    "TORTOISE_BOT_GITHUB_TOKEN",
    "TORTOISE_BOT_GITHUB_APP_PRIVATE_KEY",
    "TORTOISE_BOT_PROMETHEUS_TOKEN",
    "TORTOISE_BOT_PROMETHEUS_PASSWORD",
)
"""Environment variables whose values are never printed."""

_TOKEN_PATTERNS = re.compile(
    r"(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|"
    r"(?i:authorization:\s*(?:bearer|token|basic)\s+)\S+|x-access-token:[^@\s]+)"
)


def redact(text: str) -> str:
    """``text`` with known secret values and token-shaped strings replaced by ``***``."""
    for var in SECRET_ENV_VARS:
        value = os.environ.get(var)
        if value and len(value) >= 4:
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
