"""When merged values run: kube-state-metrics series backfilled into a real Prometheus, with
the requests of a Deployment changing mid-history during a rolling update, an HPA whose
maxReplicas and CPU target change later, and a workload whose merged values never ran."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.config.metrics import PrometheusConfig
from bot.metrics.client import PrometheusClient
from bot.metrics.live import MergedValues, find_live
from bot.model import FieldId, WorkloadRef
from tests.support.prometheus import RunningPrometheus, backfill, start_prometheus

T0 = 1_700_002_800.0
"""The start of the history (a whole hour)."""
HOUR = 3600.0
STALE_S = 300.0
"""Prometheus' lookback: a series stays present this long after its last sample."""
MERGED = T0 + HOUR
WEB = WorkloadRef("Deployment", "shop", "web")
API = WorkloadRef("Deployment", "shop", "api")
CART = WorkloadRef("Deployment", "shop", "cart")
OLD_WEB_END = T0 + 2 * HOUR
"""The last old ``web`` pod stops then (new pods started half an hour earlier)."""
HPA_CHANGE = T0 + 3 * HOUR


def _series(name: str, labels: dict[str, str], points: list[tuple[float, float]]) -> list[str]:
    text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return [f"{name}{{{text}}} {value} {t:.0f}" for t, value in points]


def _every_minute(start: float, end: float, value) -> list[tuple[float, float]]:
    return [(t, value(t)) for t in range(int(start), int(end), 60)]


def _history(path: Path) -> int:
    """Write the OpenMetrics file; return its sample count."""
    lines: list[str] = []
    requests = "kube_pod_container_resource_requests"
    lines.append(f"# TYPE {requests} gauge")
    pods = [
        ("web-7c9d8b-bcdfg", "web", 0.5, T0, OLD_WEB_END),
        ("web-7c9d8b-hjklm", "web", 0.5, T0, OLD_WEB_END - 600),
        ("web-5f6g7h-nprst", "web", 0.25, T0 + 1.5 * HOUR, T0 + 6 * HOUR),
        ("web-5f6g7h-vwxz2", "web", 0.25, T0 + 1.6 * HOUR, T0 + 6 * HOUR),
        ("api-6d7f8g-bcdfg", "app", 1.0, T0, T0 + 6 * HOUR),
        ("cart-4b5c6d-bcdfg", "app", 0.2, T0, T0 + 6 * HOUR),
    ]
    for pod, container, cores, start, end in pods:
        labels = {"namespace": "shop", "pod": pod, "container": container}
        lines += _series(
            requests,
            {**labels, "resource": "cpu", "unit": "core"},
            _every_minute(start, end, lambda _t, c=cores: c),
        )
    hpa = {"namespace": "shop", "horizontalpodautoscaler": "cart"}
    name = "kube_horizontalpodautoscaler_spec_max_replicas"
    lines.append(f"# TYPE {name} gauge")
    lines += _series(
        name, hpa, _every_minute(T0, T0 + 6 * HOUR, lambda t: 6 if t >= HPA_CHANGE else 10)
    )
    name = "kube_horizontalpodautoscaler_spec_target_metric"
    lines.append(f"# TYPE {name} gauge")
    target = {**hpa, "metric_name": "cpu", "metric_target_type": "utilization"}
    lines += _series(
        name,
        target,
        _every_minute(T0, T0 + 6 * HOUR, lambda t: 70 if t >= HPA_CHANGE + 600 else 60),
    )
    samples = sum(1 for line in lines if not line.startswith("#"))
    path.write_text("\n".join([*lines, "# EOF", ""]))
    return samples


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningPrometheus]:
    work = tmp_path_factory.mktemp("live")
    om = work / "history.om"
    written = _history(om)
    backfill([om], work / "data", expected_samples=written)
    with start_prometheus(work / "data", workdir=work) as running:
        yield running


def _client(prom: RunningPrometheus) -> tuple[PrometheusClient, PrometheusConfig]:
    config = PrometheusConfig(url=prom.url, gzip=False)
    return PrometheusClient(config), config


MERGES = (
    MergedValues(WEB, MERGED, {("web", FieldId.REQUESTS_CPU): 0.25}),
    MergedValues(API, MERGED, {("app", FieldId.REQUESTS_CPU): 0.5}),
    MergedValues(
        CART,
        MERGED,
        {(None, FieldId.HPA_MAX_REPLICAS): 6, ("app", FieldId.HPA_TARGET_CPU): 70},
        hpa="cart",
    ),
)


def test_the_merged_values_are_live_once_every_pod_and_the_hpa_run_them(prom):
    client, config = _client(prom)
    found = find_live(client, config, MERGES, now_s=T0 + 6 * HOUR)
    web = found.live_s[WEB]
    # the old pods are seen until their last sample ages out of the lookback
    assert web is not None and OLD_WEB_END - 60 <= web <= OLD_WEB_END + STALE_S + 60
    cart = found.live_s[CART]
    assert cart is not None and HPA_CHANGE + 600 <= cart <= HPA_CHANGE + 660
    assert found.live_s[API] is None  # merged, never running
    assert found.queries == 3  # requests, maxReplicas, targets: one each for three workloads


def test_queries_do_not_grow_with_the_workloads(prom):
    client, config = _client(prom)
    one = find_live(client, config, MERGES[:1], now_s=T0 + 6 * HOUR)
    two = find_live(client, config, MERGES[:2], now_s=T0 + 6 * HOUR)
    assert one.queries == two.queries == 1
    assert one.live_s[WEB] == two.live_s[WEB]


def test_before_the_rollout_nothing_is_live(prom):
    client, config = _client(prom)
    found = find_live(client, config, MERGES, now_s=T0 + 1.5 * HOUR)
    assert found.live_s == {WEB: None, API: None, CART: None}
