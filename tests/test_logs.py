"""Logs: JSON lines or text on stderr, secrets never printed."""

from __future__ import annotations

import json
import logging

import pytest

from bot.logs import setup_logging
from bot.redaction import add_secret, redact


@pytest.mark.parametrize(
    "secret",
    [
        "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "Authorization: Bearer s3cr3t-value",
        "https://x-access-token:ghs_abcdefghijklmnopqrstu@github.com/o/r.git",
    ],
    ids=["classic-token", "fine-grained", "auth-header", "url-credentials"],
)
def test_token_shapes_are_redacted(secret):
    assert "s3cr3t" not in redact(f"failed: {secret}")
    assert "ABCDEFGHIJ" not in redact(secret)
    assert "***" in redact(secret)


def test_registered_secret_values_are_redacted_line_by_line():
    key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nq1w2e3r4t5y6\n-----END PRIVATE KEY-----"
    add_secret(key)
    add_secret("hunter2-prometheus")
    text = redact(f"oops {key} and MIIEvQIBADANBgkqhkiG9w0BAQEFAASC and hunter2-prometheus")
    assert "MIIEvQ" not in text and "q1w2e3" not in text and "hunter2" not in text


def test_json_log_lines_carry_extra_fields_and_are_redacted(capsys):
    setup_logging("json", "INFO")
    add_secret("tok-123456")
    logging.getLogger("bot.test").info("calling with tok-123456", extra={"repository": "o/r"})
    line = capsys.readouterr().err.strip().splitlines()[-1]
    record = json.loads(line)
    assert record["message"] == "calling with ***"
    assert record["repository"] == "o/r" and record["level"] == "info"
