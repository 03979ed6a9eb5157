"""Outages, slowness, retries, refusals, warnings and odd answers, through a local fault proxy."""

from __future__ import annotations

import socket
import time
from email.utils import formatdate

import pytest

from bot.config.metrics import PrometheusAuth, PrometheusConfig
from bot.metrics import PrometheusSource, PrometheusUnavailableError, QueryError
from tests.metrics.faults import FaultProxy, Reply, empty_body, error_body
from tests.metrics.helpers import assert_matches_truth, requests_for
from tests.support.prometheus import TEST_LABELS

pytestmark = pytest.mark.prometheus


class Sleeps(list[float]):
    """Records the waits between retries instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def _source(url: str, sleeps: Sleeps | None = None, env=None, **overrides) -> PrometheusSource:
    settings = {"gzip": False, "backoff_s": 0.01, **overrides}
    return PrometheusSource(
        PrometheusConfig(url=url, **settings),
        sleep=sleeps if sleeps is not None else Sleeps(),
        env=env,
    )


def _window(cluster):
    return {"start_s": float(cluster.t_s[0]), "end_s": float(cluster.t_s[-1])}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_prometheus_down_is_an_outage_after_retries(sim_cluster):
    sleeps = Sleeps()
    source = _source(f"http://127.0.0.1:{_free_port()}", sleeps, retries=2, concurrency=1)
    with pytest.raises(PrometheusUnavailableError, match="cannot connect") as caught:
        source.fetch(requests_for(sim_cluster), **_window(sim_cluster))
    assert caught.value.url and caught.value.query
    assert sleeps[:2] == [0.01, 0.02]


def test_slow_prometheus_times_out(sim_cluster):
    with FaultProxy(None, lambda n, seen: Reply(200, b"{}", delay_s=1.0)) as proxy:
        source = _source(proxy.url, timeout_s=0.2, retries=1, concurrency=2)
        began = time.monotonic()
        with pytest.raises(PrometheusUnavailableError, match="timed out"):
            source.fetch(requests_for(sim_cluster), **_window(sim_cluster))
        assert time.monotonic() - began < 5


def test_a_fractional_timeout_is_a_duration_prometheus_accepts(sim_cluster, sim_prometheus):
    """``timeout_s: 9.5`` once went to Prometheus as ``9.5s``, which it refuses (HTTP 400)."""
    with FaultProxy(sim_prometheus.url, lambda n, seen: None) as proxy:
        result = _source(proxy.url, timeout_s=9.5, retries=0, query_mode="range").fetch(
            requests_for(sim_cluster, TEST_LABELS), **_window(sim_cluster)
        )
    assert not result.errors, result.errors
    assert {seen.form["timeout"] for seen in proxy.seen} == {"9500ms"}
    for history in result.histories.values():
        assert_matches_truth(sim_cluster, history)


def test_5xx_then_recovery(sim_cluster, sim_prometheus):
    def rule(n, seen):
        return Reply(503, b"upstream overloaded") if n < 3 else None

    sleeps = Sleeps()
    with FaultProxy(sim_prometheus.url, rule) as proxy:
        result = _source(proxy.url, sleeps, concurrency=1, retries=3).fetch(
            requests_for(sim_cluster, TEST_LABELS), **_window(sim_cluster)
        )
    assert not result.errors
    assert result.stats.retries == 3
    assert sleeps == [0.01, 0.02, 0.04]  # exponential backoff
    for history in result.histories.values():
        assert_matches_truth(sim_cluster, history)


def test_5xx_forever_is_an_outage(sim_cluster):
    with FaultProxy(None, lambda n, seen: Reply(502, b"bad gateway")) as proxy:
        with pytest.raises(PrometheusUnavailableError) as caught:
            _source(proxy.url, retries=2, concurrency=1).fetch(
                requests_for(sim_cluster), **_window(sim_cluster)
            )
        assert caught.value.status == 502
        assert len(proxy.seen) == 3  # first try + 2 retries, then the fetch stops


@pytest.mark.parametrize("header", ["2", "date"], ids=["seconds", "http-date"])
def test_429_honours_retry_after(sim_cluster, sim_prometheus, header):
    value = "2" if header == "2" else formatdate(time.time() + 3, usegmt=True)

    def rule(n, seen):
        return Reply(429, b"slow down", {"Retry-After": value}) if n == 0 else None

    sleeps = Sleeps()
    with FaultProxy(sim_prometheus.url, rule) as proxy:
        result = _source(proxy.url, sleeps, concurrency=1).fetch(
            requests_for(sim_cluster, TEST_LABELS), **_window(sim_cluster)
        )
    assert not result.errors
    assert len(sleeps) == 1
    assert (sleeps[0] == 2.0) if header == "2" else (1.0 <= sleeps[0] <= 3.0)


def test_retry_after_is_capped(sim_cluster, sim_prometheus):
    def rule(n, seen):
        return Reply(429, b"", {"Retry-After": "3600"}) if n == 0 else None

    sleeps = Sleeps()
    with FaultProxy(sim_prometheus.url, rule) as proxy:
        _source(proxy.url, sleeps, concurrency=1, max_backoff_s=5).fetch(
            requests_for(sim_cluster, TEST_LABELS)[:1], **_window(sim_cluster)
        )
    assert sleeps == [5.0]


def test_refused_query_fails_its_namespace_only(sim_cluster, sim_prometheus):
    def rule(n, seen):
        if 'namespace="ns-1"' in seen.form.get("query", ""):
            return Reply(
                422, error_body("execution", "query processing would load too many samples")
            )
        return None

    with FaultProxy(sim_prometheus.url, rule) as proxy:
        result = _source(proxy.url).fetch(
            requests_for(sim_cluster, TEST_LABELS), **_window(sim_cluster)
        )
    failed = {ref.namespace for ref in result.errors}
    assert failed == {"ns-1"}
    error = next(iter(result.errors.values()))
    assert isinstance(error, QueryError)
    assert error.status == 422 and "too many samples" in str(error)
    for history in result.histories.values():
        assert history.ref.namespace == "ns-0"
        assert_matches_truth(sim_cluster, history)


def test_warnings_are_surfaced(sim_cluster, sim_prometheus):
    def rule(n, seen):
        return lambda payload: {**payload, "warnings": ["partial response: store b is down"]}

    with FaultProxy(sim_prometheus.url, rule) as proxy:  # JSON answers carry the warnings
        result = _source(proxy.url, raw_api="query").fetch(
            requests_for(sim_cluster, TEST_LABELS), **_window(sim_cluster)
        )
    assert result.warnings == ("partial response: store b is down",)
    for history in result.histories.values():
        assert ("prometheus-warning", "partial response: store b is down") in [
            (n.code, n.message) for n in history.quality
        ]


def test_nan_and_inf_samples_are_dropped_and_counted(sim_cluster, sim_prometheus):
    def poison(payload):
        for series in payload["data"]["result"]:
            for pair in series.get("values", [])[:3]:
                pair[1] = "NaN"
            for pair in series.get("values", [])[3:5]:
                pair[1] = "+Inf"
        return payload

    def rule(n, seen):
        return poison if "working_set" in seen.form.get("query", "") else None

    service = sim_cluster.services[1]
    with FaultProxy(sim_prometheus.url, rule) as proxy:
        result = _source(proxy.url, raw_api="query").fetch(
            requests_for(sim_cluster, TEST_LABELS), **_window(sim_cluster)
        )
    history = result.history(service.ref)
    pods = len(history.pods)
    notes = [n for n in history.quality if n.code == "non-finite"]
    assert notes and notes[0].message.startswith(f"{5 * pods} NaN/Inf")
    assert all(len(c.mem_bytes) and (c.mem_bytes > 0).all() for c in history.containers.values())


def test_empty_answers_are_no_data(sim_cluster):
    with FaultProxy(None, lambda n, seen: Reply(200, empty_body(seen))) as proxy:
        result = _source(proxy.url).fetch(requests_for(sim_cluster), **_window(sim_cluster))
    assert not result.errors
    assert all(h.quality[0].code == "no-data" for h in result.histories.values())


def test_non_json_answer_is_a_query_error(sim_cluster):
    with FaultProxy(None, lambda n, seen: Reply(200, b"<html>login</html>")) as proxy:
        result = _source(proxy.url).fetch(requests_for(sim_cluster), **_window(sim_cluster))
    assert set(result.errors) == {s.ref for s in sim_cluster.services}
    assert all(isinstance(e, QueryError) for e in result.errors.values())


def test_unauthorised_is_an_outage_without_retries(sim_cluster):
    with FaultProxy(None, lambda n, seen: Reply(401, b"unauthorized")) as proxy:
        with pytest.raises(PrometheusUnavailableError) as caught:
            _source(proxy.url, concurrency=1).fetch(
                requests_for(sim_cluster), **_window(sim_cluster)
            )
        assert caught.value.status == 401
        assert len(proxy.seen) == 1


def test_queries_are_post_form_bodies_with_auth_headers(sim_cluster, sim_prometheus, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("file-token\n")
    cases = [
        (
            PrometheusAuth(bearer_token_env="PROM_TOKEN"),
            {"PROM_TOKEN": "env-token"},
            "Bearer env-token",
        ),
        (PrometheusAuth(bearer_token_file=str(token_file)), {}, "Bearer file-token"),
        (
            PrometheusAuth(basic_username="bot", basic_password_env="PROM_PASSWORD"),
            {"PROM_PASSWORD": "s3cret"},
            "Basic Ym90OnMzY3JldA==",
        ),
    ]
    for auth, env, expected in cases:
        with FaultProxy(sim_prometheus.url, lambda n, seen: None) as proxy:
            result = _source(
                proxy.url,
                env={**env, "TENANT": "team-a"},
                auth=auth,
                headers={"X-Scope-OrgID": "tenant-1"},
                headers_from_env={"X-Extra": "TENANT"},
                extra_params={"dedup": "true"},
            ).fetch(requests_for(sim_cluster, TEST_LABELS)[:1], **_window(sim_cluster))
        assert not result.errors
        assert {seen.path for seen in proxy.seen} >= {"/api/v1/read", "/api/v1/query"}
        for seen in proxy.seen:
            assert seen.method == "POST"
            assert seen.url_query == ""  # nothing in the URL: no length limit
            if seen.path == "/api/v1/read":  # raw samples: a snappy protobuf body, no form
                assert seen.headers["Content-Type"] == "application/x-protobuf"
                assert not seen.form and seen.body
            else:
                assert "query" in seen.form and seen.form["dedup"] == "true"
            assert seen.headers["Authorization"] == expected
            assert seen.headers["X-Scope-OrgID"] == "tenant-1"
            assert seen.headers["X-Extra"] == "team-a"
            assert seen.headers["Accept-Encoding"] == "identity"


def test_gzip_switch_and_missing_secret(sim_cluster, sim_prometheus):
    with FaultProxy(sim_prometheus.url, lambda n, seen: None) as proxy:
        _source(proxy.url, gzip=True).fetch(
            requests_for(sim_cluster, TEST_LABELS)[:1], **_window(sim_cluster)
        )
        assert proxy.seen[0].headers["Accept-Encoding"] == "gzip"
    with pytest.raises(PrometheusUnavailableError, match="PROM_TOKEN unset"):
        _source(sim_prometheus.url, env={}, auth=PrometheusAuth(bearer_token_env="PROM_TOKEN"))


def _without_remote_read(n, seen):
    return Reply(404, b"404 page not found") if seen.path == "/api/v1/read" else None


def test_without_remote_read_raw_samples_come_from_the_query_api(sim_cluster, sim_prometheus):
    with FaultProxy(sim_prometheus.url, _without_remote_read) as proxy:
        result = _source(proxy.url, concurrency=1).fetch(
            requests_for(sim_cluster, TEST_LABELS), **_window(sim_cluster)
        )
    assert not result.errors
    paths = [seen.path for seen in proxy.seen]
    assert paths[0] == "/api/v1/read" and paths.count("/api/v1/read") == 1  # asked once
    assert any(seen.form.get("query", "").endswith("ms]") for seen in proxy.seen)
    for history in result.histories.values():
        assert_matches_truth(sim_cluster, history)


def test_remote_read_required_but_refused_is_a_query_error(sim_cluster, sim_prometheus):
    with FaultProxy(sim_prometheus.url, _without_remote_read) as proxy:
        result = _source(proxy.url, raw_api="remote_read").fetch(
            requests_for(sim_cluster, TEST_LABELS), **_window(sim_cluster)
        )
    assert set(result.errors) == {s.ref for s in sim_cluster.services}
    error = next(iter(result.errors.values()))
    assert isinstance(error, QueryError) and error.status == 404
    assert "remote read refused" in str(error) and "/api/v1/read" in str(error)


def test_remote_read_5xx_is_retried(sim_cluster, sim_prometheus):
    def rule(n, seen):
        return Reply(503, b"overloaded") if n == 0 and seen.path == "/api/v1/read" else None

    sleeps = Sleeps()
    with FaultProxy(sim_prometheus.url, rule) as proxy:
        result = _source(proxy.url, sleeps, concurrency=1, raw_api="remote_read").fetch(
            requests_for(sim_cluster, TEST_LABELS), **_window(sim_cluster)
        )
    assert not result.errors and sleeps == [0.01]
    assert [s.path for s in proxy.seen[:2]] == ["/api/v1/read", "/api/v1/read"]
    for history in result.histories.values():
        assert_matches_truth(sim_cluster, history)
