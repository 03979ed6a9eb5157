"""Comparisons between fetched and generated history, with the documented rate/step effects."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from bot.metrics import FetchResult, HistoryRequest, HistorySource
from bot.model import ContainerHistory, WorkloadHistory
from bot.sim import SimulatedCluster, SimulatedService

CPU_RTOL = 1e-9
"""rate() of a counter written with 17 significant digits: float rounding only."""


def requests_for(cluster: SimulatedCluster, selector: dict[str, str] | None = None):
    return [
        HistoryRequest(s.ref, tuple(c.name for c in s.spec.containers), selector or {})
        for s in cluster.services
    ]


def by_pod_time(history: WorkloadHistory, container: ContainerHistory, family: str):
    """``{(pod name, t): value}`` of one family (cpu, mem or oom)."""
    t = getattr(container, f"{family}_t")
    pod = getattr(container, f"{family}_pod")
    value = {
        "cpu": container.cpu_cores,
        "mem": container.mem_bytes,
        "oom": container.oom_request_bytes,
    }[family]
    return {
        (history.pods[p], ts): v
        for p, ts, v in zip(pod.tolist(), t.tolist(), value.tolist(), strict=True)
    }


def first_samples(cluster: SimulatedCluster, service: SimulatedService) -> set[tuple[str, float]]:
    """(pod, t) of the first sample of every pod life: rate() over one step has no value there."""
    return {(p.name, float(cluster.t_s[p.start])) for p in service.pods}


def assert_matches_truth(cluster: SimulatedCluster, fetched: WorkloadHistory) -> None:
    """Fetched == generated: memory, OOM rows and replicas exactly; CPU except each first sample."""
    service = cluster.service(fetched.ref.namespace, fetched.ref.name)
    truth = cluster.expected_history(service.ref)
    assert sorted(fetched.pods) == sorted(truth.pods)
    lost = first_samples(cluster, service)
    for name, want in truth.containers.items():
        got = fetched.containers[name]
        assert by_pod_time(fetched, got, "mem") == by_pod_time(truth, want, "mem")
        assert by_pod_time(fetched, got, "oom") == by_pod_time(truth, want, "oom")
        expected_cpu = {k: v for k, v in by_pod_time(truth, want, "cpu").items() if k not in lost}
        got_cpu = by_pod_time(fetched, got, "cpu")
        assert got_cpu.keys() == expected_cpu.keys()
        keys = sorted(expected_cpu)
        np.testing.assert_allclose(
            [got_cpu[k] for k in keys], [expected_cpu[k] for k in keys], rtol=CPU_RTOL
        )
        for pod_index in np.unique(got.cpu_pod):
            times = got.cpu_t[got.cpu_pod == pod_index]
            assert np.all(np.diff(times) > 0), "samples of a pod must be in time order"
    np.testing.assert_array_equal(fetched.replicas_t, truth.replicas_t)
    np.testing.assert_array_equal(fetched.replicas, truth.replicas)


class EditedSource:
    """A source whose histories are changed by ``edit``: what the engine would see otherwise."""

    def __init__(
        self, inner: HistorySource, edit: Callable[[WorkloadHistory], WorkloadHistory]
    ) -> None:
        self.inner, self.edit = inner, edit

    def fetch(
        self,
        requests: Sequence[HistoryRequest],
        *,
        start_s: float,
        end_s: float,
        budget_s: float | None = None,
    ) -> FetchResult:
        got = self.inner.fetch(requests, start_s=start_s, end_s=end_s, budget_s=budget_s)
        edited = {ref: self.edit(h) for ref, h in got.histories.items()}
        return dataclasses.replace(got, histories=edited)
