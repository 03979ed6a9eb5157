"""Markdown escaping for names that came from a repository or from Prometheus.

GitHub renders pull-request bodies as GitHub Flavored Markdown with inline HTML. A workload,
container or label value is attacker-controlled text: it must not open HTML, start a link,
mention a user or team (``@org/team`` pings people), close a table cell or an HTML comment.
Every ASCII punctuation character that can open or close inline markup, a link, a table cell,
an autolink (``:``) or math (``$``) is backslash-escaped; ``<``, ``>``,
``&`` and ``@`` become character references, which GFM shows literally and never autolinks.
"""

from __future__ import annotations

import re

_BACKSLASHED = frozenset("\\`*_{}[]()#!|~:$")
"""CommonMark's backslash-escapable ASCII punctuation that can start or end markup."""

_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;", "@": "&#64;"}
"""Characters replaced by HTML character references (raw HTML, mentions, entity injection)."""

_MERMAID_UNSAFE = re.compile(r"[^A-Za-z0-9 ._/-]")


def escape(text: object) -> str:
    """``text`` as inert Markdown on one line: no markup, no HTML, no mention, no cell break."""
    out: list[str] = []
    for char in " ".join(str(text).split()):
        if char in _ENTITIES:
            out.append(_ENTITIES[char])
        elif char in _BACKSLASHED:
            out.append("\\" + char)
        elif ord(char) < 32 or 0x202A <= ord(char) <= 0x202E or 0x2066 <= ord(char) <= 0x2069:
            out.append("\ufffd")  # control and bidirectional override characters
        else:
            out.append(char)
    return "".join(out)


def code(text: object) -> str:
    """``text`` as an inline code span (backticks inside widen the fence), one line."""
    value = " ".join(str(text).split())
    longest = max((len(m) for m in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def mermaid_label(text: object) -> str:
    """``text`` reduced to characters a Mermaid quoted label always accepts."""
    return _MERMAID_UNSAFE.sub("_", str(text))[:60]


def comment_safe(text: str) -> str:
    """``text`` that cannot close an HTML comment (``--`` is written ``-\\u002d``)."""
    return text.replace("--", "-\\u002d").replace(">", "\\u003e").replace("<", "\\u003c")
