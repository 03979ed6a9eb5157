"""Logging set-up: human-readable or JSON lines on stderr, with secrets redacted
(``bot.redaction``: messages, arguments and tracebacks)."""

from __future__ import annotations

import json
import logging
import sys
from typing import Literal

from bot.redaction import redact

LogFormat = Literal["text", "json"]


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
            data["exception"] = self.formatException(record.exc_info)
        return redact(json.dumps(data, default=str))


class TextFormatter(logging.Formatter):
    """``LEVEL logger: message`` and the traceback, if any, redacted as a whole."""

    def __init__(self) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def setup_logging(fmt: LogFormat = "text", level: str = "WARNING") -> None:
    """Route the ``bot`` loggers to stderr in ``fmt``; idempotent."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RedactingFilter())
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter())
    root = logging.getLogger("bot")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
