"""Snapshots: record from the real Prometheus, replay identically, refuse bad files."""

from __future__ import annotations

import json
import socket
import zipfile
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from bot.config.metrics import PrometheusConfig
from bot.metrics import (
    HistoryRequest,
    PrometheusSource,
    PrometheusUnavailableError,
    QueryError,
    SnapshotError,
)
from bot.metrics.snapshot import SnapshotSource, read_snapshot, record_snapshot
from bot.model import ContainerHistory, WorkloadRef
from tests.metrics.helpers import requests_for
from tests.support.prometheus import TEST_LABELS

pytestmark = pytest.mark.prometheus


def _window(cluster):
    return {"start_s": float(cluster.t_s[0]), "end_s": float(cluster.t_s[-1])}


def _assert_same(a, b):
    assert a.ref == b.ref and a.pods == b.pods and a.quality == b.quality
    assert (a.start_s, a.end_s) == (b.start_s, b.end_s)
    np.testing.assert_array_equal(a.replicas_t, b.replicas_t)
    np.testing.assert_array_equal(a.replicas, b.replicas)
    assert list(a.containers) == list(b.containers)
    for name, ca in a.containers.items():
        cb = b.containers[name]
        for f in fields(ContainerHistory):
            if f.name == "name":
                continue
            x, y = getattr(ca, f.name), getattr(cb, f.name)
            assert x.dtype == y.dtype, f.name
            np.testing.assert_array_equal(x, y, err_msg=f.name)


@pytest.fixture(scope="module")
def recorded(sim_cluster, sim_prometheus, tmp_path_factory):
    path = tmp_path_factory.mktemp("snap") / "history.snapshot"
    source = PrometheusSource(PrometheusConfig(url=sim_prometheus.url, gzip=False))
    bad = HistoryRequest(WorkloadRef("ReplicationController", "ns-0", "legacy"), ("app",))
    requests = [*requests_for(sim_cluster, TEST_LABELS), bad]
    result = record_snapshot(source, requests, path=path, **_window(sim_cluster))
    return path, requests, result


def test_replay_is_identical(recorded, sim_cluster):
    path, requests, result = recorded
    assert path.stat().st_size < 5 * 1024 * 1024
    assert zipfile.is_zipfile(path)
    replay = SnapshotSource(path)
    assert (replay.start_s, replay.end_s) == (sim_cluster.t_s[0], sim_cluster.t_s[-1])
    again = replay.fetch(requests, **_window(sim_cluster))
    assert set(again.histories) == set(result.histories)
    for ref, history in result.histories.items():
        _assert_same(history, again.histories[ref])
    assert {r: (type(e), str(e)) for r, e in again.errors.items()} == {
        r: (type(e), str(e)) for r, e in result.errors.items()
    }
    assert isinstance(next(iter(again.errors.values())), QueryError)


def test_unknown_workload_or_container_is_an_error_for_it(recorded, sim_cluster):
    path, requests, _ = recorded
    ghost = HistoryRequest(WorkloadRef("Deployment", "ns-0", "ghost"), ("app",))
    extra = HistoryRequest(requests[0].ref, ("app", "new-sidecar"), requests[0].selector)
    result = SnapshotSource(path).fetch([ghost, extra, requests[1]], **_window(sim_cluster))
    assert isinstance(result.errors[ghost.ref], SnapshotError)
    assert "new-sidecar" in str(result.errors[extra.ref])
    assert requests[1].ref in result.histories


def test_shorter_window_is_cut_and_longer_is_noted(recorded, sim_cluster):
    path, requests, result = recorded
    start, end = float(sim_cluster.t_s[0]), float(sim_cluster.t_s[-1])
    ref = requests[0].ref
    half = SnapshotSource(path).fetch(requests[:1], start_s=start, end_s=start + 86_400)
    cpu = half.histories[ref].containers["app"].cpu_t
    assert len(cpu) and cpu.max() <= start + 86_400
    assert len(cpu) < len(result.histories[ref].containers["app"].cpu_t)
    longer = SnapshotSource(path).fetch(requests[:1], start_s=start - 86_400, end_s=end)
    assert longer.histories[ref].quality[-1].code == "snapshot-window"


def test_outage_while_recording_writes_nothing(sim_cluster, tmp_path: Path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    source = PrometheusSource(
        PrometheusConfig(url=f"http://127.0.0.1:{port}", retries=0), sleep=lambda s: None
    )
    path = tmp_path / "out.snapshot"
    with pytest.raises(PrometheusUnavailableError):
        record_snapshot(source, requests_for(sim_cluster), path=path, **_window(sim_cluster))
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


def _rewrite_meta(src: Path, dst: Path, change) -> None:
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, "w") as b:
        for item in a.namelist():
            data = a.read(item)
            if item == "meta.json":
                data = json.dumps(change(json.loads(data))).encode()
            b.writestr(item, data)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("missing", "not found"),
        ("garbage", "corrupt"),
        ("version", "version 99"),
        ("format", "not a tortoise-bot snapshot"),
        ("array", "corrupt"),
    ],
)
def test_bad_snapshot_files_are_refused(recorded, tmp_path: Path, damage, message):
    path, _, _ = recorded
    bad = tmp_path / "bad.snapshot"
    if damage == "garbage":
        bad.write_bytes(b"PK\x03\x04 not really a zip")
    elif damage == "version":
        _rewrite_meta(path, bad, lambda m: {**m, "version": 99})
    elif damage == "format":
        _rewrite_meta(path, bad, lambda m: {**m, "format": "other"})
    elif damage == "array":
        with zipfile.ZipFile(path) as a, zipfile.ZipFile(bad, "w") as b:
            for item in a.namelist():
                if not item.endswith("cpu_cores.npy"):
                    b.writestr(item, a.read(item))
    with pytest.raises(SnapshotError, match=message) as caught:
        read_snapshot(bad)
    assert caught.value.url == str(bad)
