"""DaemonSets: one request for every node's pod, sized on all pods (the busiest governs), with
the pods' spread in the notes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bot.config.recommend import upstream_settings
from bot.model import GIB, MIB, WorkloadRef
from bot.recommend.engine import recommend
from bot.recommend.spread import pod_spread
from bot.recommend.window import Window
from tests.recommend.factories import NOW_S, container, container_history, history, workload

DEFAULT = upstream_settings()
DAEMONSET = WorkloadRef("DaemonSet", "shop", "log-shipper")


def _per_pod(values: list[float], days: float = 8.0) -> np.ndarray:
    """A per-sample array for ``container_history(pods=len(values))``: pod ``i`` uses
    ``values[i]``, with a ±10 % ripple."""
    n = int(days * 86400 / 60)
    ripple = 1 + 0.1 * np.sin(np.arange(n) / 50)
    return np.concatenate([v * ripple for v in values])


def _input(cpu: list[float], kind: str = "DaemonSet"):
    ch = container_history(
        "shipper", _per_pod(cpu), _per_pod([300 * MIB] * len(cpu)), pods=len(cpu)
    )
    hist = replace(history(ch), ref=replace(DAEMONSET, kind=kind))
    return replace(
        workload(container("shipper", 0.2, 256 * MIB, mem_limit=GIB), hist=hist),
        ref=hist.ref,
    )


def test_busiest_pod_governs_and_the_spread_is_noted():
    rec = recommend(_input([0.1, 0.12, 0.31]), DEFAULT, now_s=NOW_S)
    (note,) = [n for n in rec.notes if n.code == "pod-spread"]
    assert note.container == "shipper"
    assert "pods differ 3.1× in p90 cpu" in note.message
    assert "one size for all pods here" in note.message
    assert "on pod-2" in note.message and "on pod-0" in note.message
    cpu = rec.containers[0].cpu.request.proposed
    # sized on every pod's samples: the busiest node (0.31 cores), not the mean (0.18)
    assert cpu is not None and cpu >= 0.3
    quiet = recommend(_input([0.31, 0.31, 0.31]), DEFAULT, now_s=NOW_S)
    assert not [n for n in quiet.notes if n.code == "pod-spread"]


def test_spread_is_for_daemonsets_only():
    inp = _input([0.1, 0.31], kind="Deployment")
    assert pod_spread(inp, Window(NOW_S)) == ()
    assert len(pod_spread(_input([0.1, 0.31]), Window(NOW_S))) == 1


def test_small_spread_and_lone_pods_are_not_noted():
    assert pod_spread(_input([0.2, 0.25]), Window(NOW_S)) == ()  # 1.25×
    assert pod_spread(_input([0.2]), Window(NOW_S)) == ()
