"""Markdown escaping of names from repositories and Prometheus."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.report.markdown import code, comment_safe, escape, mermaid_label


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("frontend", "frontend"),
        ("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert\\(1\\)&gt;"),
        ("@octo/security", "&#64;octo/security"),
        ("a|b", "a\\|b"),
        ("[click](http://evil)", "\\[click\\]\\(http\\://evil\\)"),
        ("**bold** _it_ `code`", "\\*\\*bold\\*\\* \\_it\\_ \\`code\\`"),
        ("line1\nline2", "line1 line2"),
        ("&amp;", "&amp;amp;"),
        ("$x$", "\\$x\\$"),
        ("\u202eevil", "\ufffdevil"),
    ],
    ids=[
        "plain",
        "html",
        "mention",
        "cell",
        "link",
        "emphasis",
        "newline",
        "entity",
        "math",
        "bidi",
    ],
)
def test_escape(raw, expected):
    assert escape(raw) == expected


@given(st.text())
def test_escaped_text_has_no_raw_markup(raw):
    out = escape(raw)
    assert "\n" not in out and "<" not in out and ">" not in out and "@" not in out
    unescaped = out.replace("\\\\", "")
    for char in "|[]`*_":
        assert all(unescaped[i - 1] == "\\" for i, c in enumerate(unescaped) if c == char and i > 0)
        assert not unescaped.startswith(char)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("a", "`a`"), ("a`b", "``a`b``"), ("`x", "`` `x ``")],
    ids=["plain", "inner-backtick", "leading-backtick"],
)
def test_code_span_widens_its_fence(raw, expected):
    assert code(raw) == expected


def test_mermaid_label_keeps_only_safe_characters():
    assert mermaid_label('web"]; click A call evil()') == "web___ click A call evil__"


def test_comment_safe_cannot_close_a_comment():
    assert "-->" not in comment_safe("x --> y")
