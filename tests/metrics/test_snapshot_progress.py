"""``tortoise-bot snapshot`` on a terminal: progress per namespace as Prometheus answers."""

from __future__ import annotations

import re

from bot.metrics.snapshot import SnapshotSource
from bot.sim import write_manifests
from tests.support.prometheus import TEST_SPEC
from tests.support.terminal import ANSI, in_terminal


def test_snapshot_shows_progress_per_namespace(sim_prometheus, tmp_path):
    write_manifests(TEST_SPEC, tmp_path / "repo")
    drawn = ANSI.sub(
        "",
        in_terminal(
            "snapshot", "--repo", str(tmp_path / "repo"), "--prometheus", sim_prometheus.url,
            "--out", str(tmp_path / "h.zip"),
            "--now", "2026-01-03T00:00:00Z",
        ),
    )  # fmt: skip
    namespaces = len({s.namespace for s in TEST_SPEC.services})
    assert re.search(rf"namespaces ns-\d .*1/{namespaces}", drawn)
    assert re.search(rf"namespaces ns-\d .*{namespaces}/{namespaces}", drawn)
    assert re.search(rf"workloads .*{len(TEST_SPEC.services)}/{len(TEST_SPEC.services)}", drawn)
    assert "recorded 4 workloads" in drawn
    recorded = SnapshotSource(tmp_path / "h.zip")
    assert recorded.cluster_state_missing() is None  # what ran in the cluster, for verification
    assert recorded.snapshot.cluster is not None and recorded.snapshot.cluster.groups
