"""No secret is published in any form a server may echo it in: percent-encoded (``quote`` and
``quote_plus``), base64, JSON-escaped or broken by a line break, nor through the URL it came
in (user-info, or a query parameter named like a token).

Each form drives every sink: stderr (the log), stdout (``plan``'s output and ``run``'s
summary), the dashboard issue and pull-request bodies on the GitHub emulator,
``$GITHUB_STEP_SUMMARY`` and the text of the exception a fetch raises. A percent-encoded echo
(``Bearer%20Ab%2Bcd…``) and one split by a line break reached ``plan``'s output and the
dashboard when only the raw and JSON-escaped forms were redacted.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from bot.config.metrics import PrometheusConfig
from bot.metrics.errors import MetricsError
from bot.metrics.prometheus import PrometheusSource
from bot.metrics.source import HistoryRequest
from bot.model import WorkloadRef
from bot.redaction import add_secret, redact, strip_url_credentials
from tests.metrics.faults import FaultProxy, Reply, Seen
from tests.reliability.hostile import (
    SIM_NOW,
    TOKEN,
    bot_config,
    deployment,
    fake_prometheus,
    published,
    repo_files,
    serve_repositories,
    sim_repository,
    sim_settings,
)

BEARER = "Ab+cd/EFgh_prom-7f3c9a=Kq2"
"""A bearer token whose encodings all differ from it (``+``, ``/``, ``=``)."""

API_KEY = "key+value/with space?&=1"
"""A ``headers_from_env`` value."""


def _split(text: str, newline: str) -> str:
    middle = len(text) // 2
    return text[:middle] + newline + text[middle:]


FORMS: dict[str, Callable[[str], str]] = {
    "quote": lambda v: quote(f"Bearer {v}", safe=""),
    "quote_plus": quote_plus,
    "base64": lambda v: base64.b64encode(v.encode()).decode(),
    "json": lambda v: json.dumps(v)[1:-1],
    "split-crlf": lambda v: _split(v, "\r\n"),
    "split-each": "\n".join,
}
"""How a careless server echoes a credential, by name."""


def _echo(form: Callable[[str], str], seen: Seen) -> str:
    bearer = seen.headers.get("Authorization", "").removeprefix("Bearer ")
    return f"saw [{form(bearer)}] and key [{form(seen.headers.get('X-Api-Key', ''))}]"


def _assert_clean(sinks: dict[str, str], secrets: tuple[str, ...]) -> None:
    for sink, text in sinks.items():
        flat = text.replace("\r", "").replace("\n", "")
        for secret in secrets:
            for name, form in FORMS.items():
                shown = form(secret).replace("\r", "").replace("\n", "")
                assert shown not in flat, f"{secret!r} as {name} published in {sink}"


PROMETHEUS_AUTH = {
    "auth": {"bearer_token_env": "PROM_TOKEN"},
    "headers_from_env": {"X-Api-Key": "PROM_KEY"},
}
ENV = {"PROM_TOKEN": BEARER, "PROM_KEY": API_KEY}


@pytest.mark.parametrize("form", FORMS, ids=list(FORMS))
def test_run_publishes_no_form_of_a_secret(cli, tmp_path, github_emulator, sim_prometheus, form):
    gh = github_emulator
    encode = FORMS[form]
    repos = {
        "octo/warned": sim_repository("ns-0", tmp_path / "sim"),
        "octo/down": repo_files("down"),
    }
    serve_repositories(gh, repos)
    summary = tmp_path / "step-summary.md"

    def hostile(n: int, seen: Seen):
        del n
        said = _echo(encode, seen)
        if seen.path.endswith("/api/v1/read"):
            return Reply(404, f"remote read off: {said}".encode())
        if 'namespace="down"' in seen.form.get("query", ""):
            return Reply(500, f"<pre>upstream failed {said}</pre>".encode())
        return lambda answer: {**answer, "warnings": [f"proxy {said}"]}

    with FaultProxy(sim_prometheus.url, hostile) as proxy:
        prometheus = {**sim_settings(proxy.url), **PROMETHEUS_AUTH, "retries": 0}
        config = bot_config(tmp_path / "bot.yaml", prometheus, gh.api_url, tuple(repos))
        done = cli(
            "--log-level", "DEBUG", "run", "--config", str(config), "--now", SIM_NOW,
            env={"GITHUB_TOKEN": TOKEN, "GITHUB_STEP_SUMMARY": str(summary), **ENV},
        )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "upstream failed saw [" in done.stderr and "***" in done.stderr  # echoed, redacted
    assert gh.pulls("octo/warned"), done.stdout + done.stderr  # pull-request bodies are sinks
    sinks = {
        "stdout": done.stdout,
        "stderr": done.stderr,
        "step summary": summary.read_text(),
        **{name: published(gh, name) for name in repos},
    }
    _assert_clean(sinks, (BEARER, API_KEY))


@pytest.mark.parametrize("form", FORMS, ids=list(FORMS))
def test_plan_and_exceptions_show_no_form_of_a_secret(cli, tmp_path, form):
    encode = FORMS[form]
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "deploy.yaml").write_bytes(deployment("shop"))

    def hostile(seen: Seen) -> Reply:
        return Reply(500, f"upstream failed {_echo(encode, seen)}".encode())

    with fake_prometheus(hostile) as prom:
        settings = {"url": prom.url, **PROMETHEUS_AUTH, "retries": 0}
        config = bot_config(tmp_path / "bot.yaml", settings, "http://127.0.0.1:9", ())
        done = cli("plan", "--repo", str(tmp_path / "repo"), "--config", str(config), env=ENV)
        source = PrometheusSource(PrometheusConfig(**settings), env=ENV)
        request = HistoryRequest(WorkloadRef("Deployment", "shop", "web", "default"), ("web",))
        with pytest.raises(MetricsError) as raised:
            source.fetch([request], start_s=0, end_s=3600)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "upstream failed saw [" in done.stderr and "***" in done.stderr  # echoed, redacted
    _assert_clean(
        {"stdout": done.stdout, "stderr": done.stderr, "exception": str(raised.value)},
        (BEARER, API_KEY),
    )


PASSWORD = "url-pa55+word/secret"
QUERY_TOKEN = "q-token-9f8e7d6c"


def test_credentials_in_the_prometheus_url_are_never_published(
    cli, tmp_path: Path, github_emulator
):
    gh = github_emulator
    serve_repositories(gh, {"octo/down": repo_files("down")})
    summary = tmp_path / "step-summary.md"

    def down(seen: Seen) -> Reply:
        return Reply(500, f"failed for {seen.headers.get('Authorization')}".encode())

    with fake_prometheus(down) as prom:
        host = prom.url.removeprefix("http://")
        url = f"http://reader:{quote(PASSWORD, safe='')}@{host}/?access_token={QUERY_TOKEN}"
        config = bot_config(
            tmp_path / "bot.yaml", {"url": url, "retries": 0}, gh.api_url, ("octo/down",)
        )
        done = cli(
            "run", "--config", str(config),
            env={"GITHUB_TOKEN": TOKEN, "GITHUB_STEP_SUMMARY": str(summary)},
        )  # fmt: skip
        shown = {
            "stdout": done.stdout,
            "stderr": done.stderr,
            "step summary": summary.read_text(),
            "dashboard": published(gh, "octo/down"),
        }
    assert done.returncode == 1, done.stdout + done.stderr
    assert prom.seen and prom.seen[0].headers.get("Authorization", "").startswith("Basic ")
    assert f"http://***@{host}/?access_token=***" in done.stdout  # where, without secrets
    basic = base64.b64encode(f"reader:{PASSWORD}".encode()).decode()
    _assert_clean(shown, (PASSWORD, QUERY_TOKEN, basic))


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://u:p@h:9090/x", "http://***@h:9090/x"),
        ("https://tok@h/", "https://***@h/"),
        ("http://h/?token=a&x=1&API_KEY=b", "http://h/?token=***&x=1&API_KEY=***"),
        ("http://h/?client_secret=a;X-Amz-Signature=b#k", "http://h/?client_secret=***;X-Amz-Signature=***#k"),
        ("http://h/?keyboard=a&monkey=b", "http://h/?keyboard=a&monkey=b"),
    ],
)  # fmt: skip
def test_url_credentials_are_stripped_wherever_a_url_is_shown(url, shown):
    assert strip_url_credentials(url) == shown
    assert redact(f"see {url} now") == f"see {shown} now"


def test_redaction_stays_linear_on_long_text():
    import time

    add_secret("aaaa\naaab-secret")  # every position of the text below nearly matches
    text = ("a" * 1_000 + "\n") * 500
    redact("warm")
    began = time.perf_counter()
    redact(text)
    small = time.perf_counter() - began
    began = time.perf_counter()
    redact(text * 4)
    assert time.perf_counter() - began < 4 * small * 3 + 0.5
