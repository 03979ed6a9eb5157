"""No secret leaves the process: the registry of every secret the bot holds, in every encoding it
sends, and ``redact``, the one step every sink passes its text through.

Sinks and where they redact: log records and tracebacks (``bot.logs``), stdout and stderr
(``RedactingStream`` around both at the CLI boundary), ``$GITHUB_STEP_SUMMARY``
(``bot.commands.run``), and everything written to GitHub: issue and pull-request titles and
bodies, comments and commit messages (``bot.forge.github``). Error bodies of servers enter
messages only as ``excerpt`` (bounded, redacted first, control characters removed), so a
truncation can never leave half a secret behind.

Registered values (``add_secret`` and friends, called by whoever reads or builds a
credential): the raw value and each of its lines (PEM keys); a bearer token; basic
authentication as ``user:password`` and its base64 in both encodings ``requests`` and git may
use (latin-1 and UTF-8); the credentials a URL carries (``add_url``). Each value is redacted in
every form a server may echo it back: raw, JSON-escaped, percent-encoded (``quote`` and
``quote_plus``), base64 (standard and URL-safe), and each of these broken by line breaks
(``\n`` or ``\r\n`` between any two characters, as a wrapping proxy page shows it); a sink
may pass more encodings (the forge passes Markdown escaping). All forms are matched by one
regular expression (built once per set of secrets), in time linear in the text.

Token shapes (``ghp_``, ``github_pat_``, ``Authorization: ...`` headers) and URL credentials
(``strip_url_credentials``: the user-info part and query parameters named like secrets) are
redacted whether registered or not.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import threading
from collections.abc import Callable, Iterable
from typing import TextIO
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

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

SECRET_QUERY_WORDS = (
    "token",
    "access_token",
    "auth",
    "api_key",
    "apikey",
    "key",
    "password",
    "passwd",
    "pwd",
    "secret",
    "signature",
    "sig",
    "credential",
    "credentials",
)
"""Query parameters whose value is a secret: these names, alone or after a prefix ending in
``_``, ``-`` or ``.`` (``id_token``, ``client_secret``, ``X-Amz-Signature``), any case."""

_SECRET_PARAM = rf"(?:[A-Za-z0-9_.-]*[_.-])?(?:{'|'.join(SECRET_QUERY_WORDS)})"

_URL_CREDENTIALS = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s@'\"<>]+@"
    rf"|(?P<param>[?&;](?i:{_SECRET_PARAM})=)[^&;#\s'\"<>]+"
)
"""The user-info of a URL (``scheme://user:password@``) and the value of a query parameter
named like a secret."""

_SECRET_NAME = re.compile(rf"(?i:{_SECRET_PARAM})")

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


def _hide_url_credentials(match: re.Match[str]) -> str:
    if match.group("scheme"):
        return match.group("scheme") + REDACTED + "@"
    return match.group("param") + REDACTED


def strip_url_credentials(text: str) -> str:
    """``text`` (a URL, or any text with URLs in it) with the user-info of each URL and the
    value of each query parameter named like a secret (``SECRET_QUERY_WORDS``) replaced by
    ``***``: ``http://u:p@host/?token=t&x=1`` -> ``http://***@host/?token=***&x=1``.

    Only the lines holding ``://`` or ``=`` are searched: every match holds one of them and
    none holds a line break (a line's start is a word boundary as the start of the text is),
    so a long text (a 3,000-container plan) is not walked by the expression line by line."""
    spans = _url_lines(text)
    if len(spans) == 1 and spans[0] == (0, len(text)):
        return _URL_CREDENTIALS.sub(_hide_url_credentials, text)
    out: list[str] = []
    done = 0
    for start, end in spans:
        out += (text[done:start], _URL_CREDENTIALS.sub(_hide_url_credentials, text[start:end]))
        done = end
    out.append(text[done:])
    return "".join(out)


def _url_lines(text: str) -> list[tuple[int, int]]:
    """The lines of ``text`` (start, end without the line break) holding ``://`` or ``=``, in
    order, each once."""
    found = set()
    for mark in ("://", "="):
        at = text.find(mark)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
            found.add((start, end))
            at = text.find(mark, end)
    return sorted(found)


_TOKEN_MARKS = (
    *(f"gh{kind}_" for kind in "pousr"),
    "github_pat_",
    "Bearer",
    "Basic",
    "bearer",
    "basic",
    "x-access-token:",
)
"""What every match of ``_TOKEN_PATTERNS`` but the ``authorization`` one holds."""


def _may_hold_token(text: str) -> bool:
    """Whether ``_TOKEN_PATTERNS`` may match in ``text``: False only when it holds none of
    ``_TOKEN_MARKS`` and is ASCII without ``authorization`` in any case (in ASCII text only
    ASCII letters match the pattern's case-insensitive part)."""
    if any(mark in text for mark in _TOKEN_MARKS) or not text.isascii():
        return True
    return "authorization" in text.lower()


def add_url(url: str | None) -> None:
    """The credentials ``url`` carries: its password (with the basic authentication
    ``requests`` builds from the user-info) and the value of each query parameter named like
    a secret, each as sent (percent-decoded) and as written."""
    if not url:
        return
    parts = urlsplit(url)
    if parts.password:
        add_secret(parts.password)
        add_basic(unquote(parts.username or ""), unquote(parts.password))
    for name, value in parse_qsl(parts.query):
        if _SECRET_NAME.fullmatch(name):
            add_secret(value)
    for match in _URL_CREDENTIALS.finditer(url):
        if match.group("param"):
            add_secret(match.group(0)[len(match.group("param")) :])


def _b64(value: str) -> tuple[str, ...]:
    raw = value.encode("utf-8")
    return (
        base64.b64encode(raw).decode("ascii").rstrip("="),
        base64.urlsafe_b64encode(raw).decode("ascii").rstrip("="),
    )


def _variants(value: str, encodings: Iterable[Callable[[str], str]]) -> set[str]:
    """Every form of ``value`` a server may echo: raw, JSON-escaped, percent-encoded (as
    ``quote`` with and without ``/`` kept, and ``quote_plus``), base64 and ``encodings``."""
    out = {
        value,
        json.dumps(value)[1:-1],
        quote(value, safe=""),
        quote(value),
        quote_plus(value, safe=""),
        *_b64(value),
    }
    out.update(encode(value) for encode in encodings)
    return {v for v in out if len(v) >= MIN_SECRET_CHARS}


_LINE_BREAK = r"(?:\r?\n)?"
"""What may stand between two characters of a secret: nothing or one line break."""


@functools.lru_cache(maxsize=32)
def _secrets_pattern(
    secrets: frozenset[str], encoders: tuple[Callable[[str], str], ...]
) -> re.Pattern[str] | None:
    """One expression matching every form of every secret, longest first, each allowed to be
    broken by a line break between any two characters (every alternative is a fixed sequence
    of characters and optional breaks: no nested repetition, so matching stays linear)."""
    forms: set[str] = set()
    for secret in secrets:
        forms |= _variants(secret, encoders)
    if not forms:
        return None
    ordered = sorted(forms, key=lambda f: (-len(f), f))
    return re.compile("|".join(_LINE_BREAK.join(map(re.escape, form)) for form in ordered))


def redact(text: str, *, encodings: Iterable[Callable[[str], str]] = ()) -> str:
    """``text`` with every registered secret (in each form ``_variants`` lists and each of
    ``encodings``, whole or broken by line breaks), URL credentials and every token-shaped
    string replaced by ``***``."""
    with _LOCK:
        secrets = set(_SECRETS)
    for var in SECRET_ENV_VARS:
        value = os.environ.get(var)
        if value:
            secrets.add(value.strip())
    pattern = _secrets_pattern(frozenset(secrets), tuple(encodings))
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    text = strip_url_credentials(text)
    return _TOKEN_PATTERNS.sub(REDACTED, text) if _may_hold_token(text) else text


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
