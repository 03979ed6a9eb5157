"""Redaction reads only the parts of a long text that can hold a match (``bot.redaction``):
the lines with ``://`` or ``=`` for URL credentials, and the token expressions only when a
mark of a token is there. Whatever the text, the result is the whole-text expressions' own."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from bot.redaction import (
    _TOKEN_PATTERNS,
    _URL_CREDENTIALS,
    REDACTED,
    _hide_url_credentials,
    redact,
    strip_url_credentials,
)

PIECES = st.sampled_from(
    [
        "\n",
        "\r\n",
        " ",
        "=",
        "://",
        "@",
        "?",
        "&",
        ";",
        "#",
        "/",
        '"',
        "https",
        "u:p",
        "token",
        "X-Amz-Signature",
        "client_secret",
        "abc",
        "Authorization",
        "AUTHORIZATION: ",
        "authorızation",  # a dotless i: matched by the case-insensitive part
        "Bearer ",
        "basic ",
        "ghp_",
        "github_pat_",
        "x-access-token:",
        "A1b2C3d4E5f6G7h8I9j0K1",
        "é",
    ]
)
TEXTS = st.lists(PIECES, max_size=40).map("".join)


def _whole(text: str) -> str:
    return _TOKEN_PATTERNS.sub(REDACTED, _URL_CREDENTIALS.sub(_hide_url_credentials, text))


@given(TEXTS)
@example("a line\nurl ?token=abc\nnext https://u:p@host/")
@example("k = 1\nauthorızation: bearer A1b2C3d4E5f6G7h8I9j0K1")
@example("Authorization:\nToken A1b2\n=")
@example("x\nauthorızation: token A1b2")
def test_redacting_the_lines_that_can_match_is_redacting_the_whole_text(text):
    assert strip_url_credentials(text) == _URL_CREDENTIALS.sub(_hide_url_credentials, text)
    assert redact(text) == _whole(text)


def test_a_long_text_keeps_every_credential_it_holds_hidden():
    lines = ["a plain line of a plan, with no credential in it"] * 5000
    lines[10] = "see https://user:pass@example.com/x?token=abc&x=1 here"
    lines[4000] = 'header "Authorization: Bearer abcdefghijklmnopqrstuvwxyz" and k = 1'
    text = "\n".join(lines)
    out = redact(text)
    assert out == _whole(text)
    assert "pass" not in out and "abc&" not in out and "abcdefghijkl" not in out
    assert out.count(REDACTED) == 3
