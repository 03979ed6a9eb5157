"""No secret is published: a Prometheus (or a proxy in front of it) that quotes the request's
credentials in its answers, error bodies and warnings alike, never gets them onto GitHub, the
run summary, ``$GITHUB_STEP_SUMMARY``, stdout or stderr, raw or in the encoding sent.

Three repositories against the GitHub emulator, behind one hostile proxy in front of a real
Prometheus: ``octo/warned`` gets real answers with a warning quoting the credentials (pull
requests are opened, their bodies list Prometheus' warnings), ``octo/refused`` gets 400 errors
quoting them (workload errors on the dashboard), ``octo/down`` gets 500 pages quoting them
(the repository fails; the dashboard and the summary show the error). Remote read is refused
with the credentials in the body (the fallback is logged).
"""

from __future__ import annotations

import base64
import json
import sys

import pytest

from bot.redaction import (
    EXCERPT_CHARS,
    RedactingStream,
    add_basic,
    add_bearer,
    add_secret,
    excerpt,
    redact,
)
from bot.report.markdown import escape
from tests.metrics.faults import FaultProxy, Reply, Seen, error_body
from tests.reliability.hostile import (
    SIM_NOW,
    TOKEN,
    bot_config,
    published,
    repo_files,
    serve_repositories,
    sim_repository,
    sim_settings,
    summary_lines,
)

BEARER = "prom_bearer-7f3c9a+/Kq2_secret"
USER, PASSWORD = "bot-reader", "p@ss_w0rd-9931"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


def _quoting(seen: Seen) -> str:
    """What a careless server says about the request: the header, its value alone, decoded."""
    header = seen.headers.get("Authorization", "")
    value = header.split(" ", 1)[-1]
    decoded = base64.b64decode(value).decode() if header.startswith("Basic ") else value
    return f"Authorization: {header} (credentials {value}, decoded {decoded})"


def _hostile(n: int, seen: Seen):
    del n
    said = _quoting(seen)
    query = seen.form.get("query", "")
    if seen.path.endswith("/api/v1/read"):
        return Reply(404, f"remote read is off here. {said}".encode())
    if 'namespace="down"' in query:
        return Reply(500, f"<html><body>upstream failed for {said}</body></html>".encode())
    if 'namespace="ns-1"' in query:
        headers = {"Content-Type": "application/json"}
        return Reply(400, error_body("bad_data", f"refused: {said}"), headers)

    def warn(answer: dict) -> dict:
        return {**answer, "warnings": [f"proxy saw {said}"]}

    return warn


@pytest.mark.parametrize(
    ("auth", "env", "secrets", "log_format"),
    [
        ({"bearer_token_env": "PROM_TOKEN"}, {"PROM_TOKEN": BEARER}, (BEARER,), "text"),
        (
            {"basic_username": USER, "basic_password_env": "PROM_PASSWORD"},
            {"PROM_PASSWORD": PASSWORD},
            (PASSWORD, BASIC, f"{USER}:{PASSWORD}"),
            "json",
        ),
    ],
    ids=["bearer", "basic"],
)
def test_credentials_quoted_by_the_server_are_never_published(
    cli, tmp_path, github_emulator, sim_prometheus, auth, env, secrets, log_format
):
    gh = github_emulator
    repos = {
        "octo/warned": sim_repository("ns-0", tmp_path / "sim0"),
        "octo/refused": sim_repository("ns-1", tmp_path / "sim1"),
        "octo/down": repo_files("down"),
    }
    serve_repositories(gh, repos)
    summary = tmp_path / "step-summary.md"
    now = SIM_NOW
    with FaultProxy(sim_prometheus.url, _hostile) as proxy:
        prometheus = {**sim_settings(proxy.url), "auth": auth, "retries": 1, "backoff_s": 0.01}
        config = bot_config(tmp_path / "bot.yaml", prometheus, gh.api_url, tuple(repos))
        done = cli(
            "--log-level",
            "DEBUG",
            "--log-format",
            log_format,
            "run",
            "--config",
            str(config),
            "--now",
            now,
            env={"GITHUB_TOKEN": TOKEN, "GITHUB_STEP_SUMMARY": str(summary), **env},
        )
    assert any(s.headers.get("Authorization") for s in proxy.seen)  # credentials were sent

    # What the servers said did reach every sink, redacted.
    assert done.returncode == 1, done.stdout + done.stderr
    lines = summary_lines(done.stdout)
    assert lines["octo/warned"].startswith("ok") and lines["octo/refused"].startswith("FAILED")
    assert lines["octo/down"].startswith("FAILED") and "upstream failed for" in lines["octo/down"]
    assert "remote read is off here" in done.stderr
    if log_format == "json":
        assert all(json.loads(line) for line in done.stderr.splitlines() if line.startswith("{"))
    pulls = gh.pulls("octo/warned")
    warned = r"`prometheus-warning` proxy saw \*\*\* \(credentials \*\*\*, decoded "
    assert pulls and all(warned in (p.body or "") for p in pulls)
    (refused,) = gh.issues("octo/refused")
    assert r"bad\_data\: refused\: \*\*\* \(credentials \*\*\*" in (refused.body or "")
    (down,) = gh.issues("octo/down")
    assert "could not serve this repository" in (down.body or "")
    assert "upstream failed for *** (credentials ***, decoded " in (down.body or "")
    assert "octo/down" in summary.read_text()

    # ... and no secret, in any form sent, is anywhere.
    sinks = {
        "stdout": done.stdout,
        "stderr": done.stderr,
        "step summary": summary.read_text(),
        **{name: published(gh, name) for name in repos},
    }
    for sink, text in sinks.items():
        for secret in secrets:
            assert secret not in text, f"{secret!r} published in {sink}"
    gh.assert_valid()


def test_an_excerpt_is_bounded_sanitised_and_never_cuts_a_secret_in_half():
    add_bearer("tok-0123456789abcdef")
    body = ("x" * 190 + "tok-0123456789abcdef" + "\x1b[31m\u202e" + "y" * 10_000).encode()
    shown = excerpt(body)
    assert len(shown) <= EXCERPT_CHARS
    assert "tok-0123" not in shown and "\x1b" not in shown and "\u202e" not in shown
    assert shown.startswith("x" * 190 + "***") and shown.endswith("…")
    assert excerpt(b"\xff\xfeok") == "\ufffd\ufffdok"


def test_basic_credentials_are_known_in_every_encoding_sent():
    add_basic("reader", "pässwörd-1")
    for encoding in ("latin-1", "utf-8"):
        sent = base64.b64encode("reader:pässwörd-1".encode(encoding)).decode()
        assert redact(f"got {sent}") == "got ***"
    assert redact('{"error": "pässwörd-1"}') == '{"error": "***"}'
    assert redact(json.dumps({"error": "pässwörd-1"})) == '{"error": "***"}'  # JSON-escaped
    add_secret("under_score_secret")
    assert redact(escape("under_score_secret"), encodings=(escape,)) == "***"  # Markdown


def test_the_cli_streams_redact_whatever_is_written(capsys):
    add_secret("stream-secret-42")
    stream = RedactingStream(sys.stdout)
    print("leak stream-secret-42 here", file=stream)
    assert capsys.readouterr().out == "leak *** here\n"
