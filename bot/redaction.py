"""No secret leaves the process: the registry of every secret the bot holds, in every encoding it
sends, and ``redact``, the one step every sink passes its text through.

Sinks and where they redact: log records and tracebacks (``bot.logs``), stdout and stderr
(``RedactingStream`` around both at the CLI boundary), ``$GITHUB_STEP_SUMMARY``
(``bot.commands.run``), and everything written to GitHub: issue and pull-request titles and
bodies, comments and commit messages (``bot.forge.github``). Error bodies of servers enter
messages only as ``excerpt`` (bounded, redacted first, control characters removed), so a
truncation can never leave half a secret behind.

Registered encodings (``add_secret`` and friends, called by whoever reads or builds a
credential): the raw value and each of its lines (PEM keys); a bearer token; basic
authentication as ``user:password`` and its base64 in both encodings ``requests`` and git may
use (latin-1 and UTF-8). Each value is also redacted JSON-escaped, and a sink may pass more
encodings (the forge passes Markdown escaping). Token shapes (``ghp_``, ``github_pat_``,
``Authorization: ...`` headers, URL credentials) are redacted whether registered or not.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from collections.abc import Callable, Iterable
from typing import TextIO

REDACTED = "***"
"""What a secret is replaced by."""

MIN_SECRET_CHARS = 4
"""Shorter values are not redacted (they would blank out ordinary words)."""

SECRET_ENV_VARS = ("GITHUB_TOKEN", "TORTOISE_BOT_APP_PRIVATE_KEY")
"""Environment variables whose values are never printed even when no command registered them
(the defaults of the settings that name secret variables)."""

EXCERPT_CHARS = 200
"""Longest excerpt of a server's answer shown in a message."""

_SECRETS: set[str] = set()
"""Every registered secret in every registered encoding (process-wide, like logging)."""

_LOCK = threading.Lock()

_TOKEN_PATTERNS = re.compile(
    r"(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|"
    r"(?i:authorization\W{0,6}(?:bearer|token|basic)\s+)[^\s\"'<>,;]+|"
    r"(?:Bearer|Basic|bearer|basic)\s+[A-Za-z0-9+/=._~-]{16,}|"
    r"x-access-token:[^@\s]+)"
)
"""Token-shaped text, redacted even when nobody registered it."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Control and bidirectional-override characters, never shown from a server's answer."""


def _add(value: str) -> None:
    if len(value) >= MIN_SECRET_CHARS:
        with _LOCK:
            _SECRETS.add(value)


def add_secret(value: str | None) -> None:
    """Never show ``value`` (and each of its lines, for PEM keys) from now on."""
    if not value:
        return
    for raw in (value, *value.splitlines()):
        part = raw.strip()
        if not part.startswith("-----"):
            _add(part)


def add_bearer(token: str | None) -> None:
    """A bearer token, sent as ``Authorization: Bearer TOKEN``."""
    add_secret(token)


def add_basic(username: str, password: str | None) -> None:
    """Basic authentication, sent as ``Authorization: Basic base64(user:password)``: the
    password, and the base64 of ``user:password`` in each encoding a client may use."""
    if not password:
        return
    add_secret(password)
    pair = f"{username}:{password}"
    for encoding in ("latin-1", "utf-8"):
        try:
            _add(base64.b64encode(pair.encode(encoding)).decode("ascii"))
        except UnicodeEncodeError:
            continue


def _variants(value: str, encodings: Iterable[Callable[[str], str]]) -> set[str]:
    out = {value, json.dumps(value)[1:-1]}
    out.update(encode(value) for encode in encodings)
    return {v for v in out if len(v) >= MIN_SECRET_CHARS}


def redact(text: str, *, encodings: Iterable[Callable[[str], str]] = ()) -> str:
    """``text`` with every registered secret (raw, JSON-escaped, and in each of ``encodings``)
    and every token-shaped string replaced by ``***``."""
    with _LOCK:
        secrets = set(_SECRETS)
    for var in SECRET_ENV_VARS:
        value = os.environ.get(var)
        if value:
            secrets.add(value.strip())
    encoders = tuple(encodings)
    forms: set[str] = set()
    for secret in secrets:
        forms |= _variants(secret, encoders)
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, REDACTED)
    return _TOKEN_PATTERNS.sub(REDACTED, text)


def excerpt(content: bytes | str, limit: int = EXCERPT_CHARS) -> str:
    """A bounded, sanitised excerpt of a server's answer for a message: decoded (invalid UTF-8
    replaced), redacted before anything is cut, control characters dropped, whitespace folded,
    at most ``limit`` characters (``…`` marks a cut)."""
    text = content.decode("utf-8", errors="replace") if isinstance(content, bytes) else content
    text = " ".join(_CONTROL.sub(" ", redact(text[: limit * 64])).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def visible(text: str) -> str:
    """``text`` with every control and bidirectional-override character shown as an escape
    (``\\u202e``): names read from a repository are printed as they are spelt, never able to
    reorder or hide what the terminal shows around them."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class RedactingStream:
    """A text stream that redacts everything written to it (stdout and stderr of the CLI)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(redact(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)
