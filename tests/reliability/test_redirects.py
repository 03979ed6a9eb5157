"""Redirects of Prometheus queries: followed only as ``prometheus.follow_redirects`` says, never
with a configured secret to another host, and never past the request's total deadline.

A 307 to another host that trickled its answer kept ``plan`` busy past 150 s with
``timeout_s: 3`` (the deadline guarded connections to the configured host only), and an
``X-Api-Key`` header from ``headers_from_env`` went to the other host on every request.
"""

from __future__ import annotations

import pytest

from bot.config.metrics import PrometheusConfig
from bot.metrics.errors import MetricsError, PrometheusUnavailableError
from bot.metrics.exchange import same_host
from bot.metrics.prometheus import PrometheusSource
from bot.metrics.source import HistoryRequest
from bot.model import WorkloadRef
from tests.reliability.hostile import (
    Trickle,
    fake_prometheus,
    plan_against,
    redirect_to,
)

REQUEST = HistoryRequest(WorkloadRef("Deployment", "shop", "web", "default"), ("web",))
ENV = {"PROM_TOKEN": "redirect-bearer-secret-1", "PROM_KEY": "redirect-api-key-2"}
SECRET_HEADERS = {"authorization", "x-api-key"}


def _fetch(url: str, **settings: object) -> PrometheusSource:
    config = PrometheusConfig(
        url=url,
        auth={"bearer_token_env": "PROM_TOKEN"},
        headers={"X-Scope-OrgID": "tenant"},
        headers_from_env={"X-Api-Key": "PROM_KEY"},
        retries=0,
        **settings,
    )
    source = PrometheusSource(config, env=ENV)
    source.fetch([REQUEST], start_s=0, end_s=3600)
    return source


def test_a_redirect_to_another_host_is_refused_by_default_naming_where_it_led():
    with fake_prometheus() as other, fake_prometheus(redirect_to(other.url)) as prom:
        target = other.url.replace("http://", "http://user:pw-in-location@")
        prom.rule = lambda n, seen: redirect_to(target)(seen)
        with pytest.raises(PrometheusUnavailableError) as raised:
            _fetch(prom.url)
    message = str(raised.value)
    host = other.url.removeprefix("http://")
    assert f"redirected to {host}" in message and "follow_redirects" in message
    assert "pw-in-location" not in message
    assert other.seen == []  # nothing, not even the query, went to the other host


def test_a_redirect_on_the_same_host_keeps_the_credentials():
    with fake_prometheus() as prom:
        rule = prom.rule
        moved = redirect_to(prom.url + "/moved")
        prom.rule = lambda n, seen: moved(seen) if "/moved" not in seen.path else rule(n, seen)
        _fetch(prom.url)
    followed = [s for s in prom.seen if s.path.startswith("/moved")]
    assert followed and all(s.headers.get("X-Api-Key") == ENV["PROM_KEY"] for s in followed)
    assert all(s.headers.get("Authorization") == f"Bearer {ENV['PROM_TOKEN']}" for s in followed)


def test_follow_redirects_off_refuses_even_the_same_host():
    with fake_prometheus() as prom:
        prom.rule = lambda n, seen: redirect_to(prom.url + "/moved")(seen)
        with pytest.raises(PrometheusUnavailableError, match="redirects are off"):
            _fetch(prom.url, follow_redirects="off")
    assert not any(s.path.startswith("/moved") for s in prom.seen)


def test_no_secret_header_follows_a_redirect_to_another_host():
    with fake_prometheus() as other, fake_prometheus(redirect_to(other.url)) as prom:
        _fetch(prom.url, follow_redirects="any")
    assert prom.seen and all(s.headers.get("X-Api-Key") for s in prom.seen)  # sent at home
    queries = [s for s in other.seen if s.form.get("query")]
    assert queries, "the redirect was followed"
    for seen in other.seen:
        sent = {k.lower() for k in seen.headers}
        assert not sent & SECRET_HEADERS, f"{sent & SECRET_HEADERS} sent to another host"
        assert seen.headers.get("X-Scope-OrgID") == "tenant"  # plain headers still go


def test_a_basic_password_does_not_follow_a_redirect_to_another_host():
    with fake_prometheus() as other, fake_prometheus(redirect_to(other.url)) as prom:
        config = PrometheusConfig(
            url=prom.url,
            auth={"basic_username": "reader", "basic_password_env": "PROM_PASSWORD"},
            follow_redirects="any",
            retries=0,
        )
        PrometheusSource(config, env={"PROM_PASSWORD": "basic-pw-3"}).fetch(
            [REQUEST], start_s=0, end_s=3600
        )
    assert prom.seen[0].headers.get("Authorization", "").startswith("Basic ")
    assert other.seen and not any("Authorization" in s.headers for s in other.seen)


@pytest.mark.parametrize(
    ("configured", "location", "same"),
    [
        ("http://prom:9090/x", "http://prom:9090/y", True),
        ("http://PROM:9090", "http://prom:9090/", True),
        ("http://prom", "https://prom/", True),  # the https upgrade on default ports
        ("http://prom:9090", "http://prom:9091/", False),
        ("https://prom", "http://prom/", False),
        ("http://prom", "http://prom.evil/", False),
        ("http://prom", "http://evil/?prom", False),
    ],
)
def test_same_host_means_host_and_port(configured, location, same):
    assert same_host(configured, location) is same


@pytest.mark.parametrize("stage", ["body", "headers"])
def test_a_redirect_to_a_trickling_host_is_cut_off_by_the_request_deadline(cli, tmp_path, stage):
    with Trickle(stage) as slow, fake_prometheus(redirect_to(slow.url)) as prom:
        done, took = plan_against(
            cli, tmp_path, prom.url, fetch_timeout_s=10, follow_redirects="any"
        )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "timed out: no complete answer within 3 s" in done.stdout + done.stderr
    assert slow.seen == 2  # the request and its one retry, each cut off
    assert took < 30  # 2 x 3 s and start-up; 150 s and more when only the first host was bound
    print(f"\nredirect: plan against a {stage} trickle behind a 307, timeout_s 3: {took:.1f} s")


def test_a_redirect_loop_ends_with_a_clear_error():
    with fake_prometheus() as prom:
        prom.rule = lambda n, seen: redirect_to(prom.url)(seen)
        with pytest.raises(MetricsError, match="more than 5 redirects"):
            _fetch(prom.url)
