"""``repository_outcome`` streams: each namespace is recommended as it arrives from a real
Prometheus, and no history outlives its recommendation."""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence

from bot.config.bot import BotSettings
from bot.config.metrics import PrometheusConfig
from bot.metrics import FetchResult, HistoryRequest, PrometheusSource
from bot.pipeline.plan import repository_outcome
from bot.sim import write_manifests
from tests.support.prometheus import TEST_SPEC


class Watched:
    """``PrometheusSource.iter_fetch`` as is, noting when each namespace is handed over and
    keeping a weak reference to every sample array it hands over."""

    def __init__(self, source: PrometheusSource, events: list[tuple[str, str]]) -> None:
        self.source = source
        self.events = events
        self.samples: list[weakref.ref[object]] = []

    def fetch(self, *args: object, **kwargs: object) -> FetchResult:
        raise AssertionError("the pipeline must stream, not fetch everything at once")

    def iter_fetch(
        self, requests: Sequence[HistoryRequest], **kwargs: float | None
    ) -> Iterator[FetchResult]:
        for part in self.source.iter_fetch(requests, **kwargs):  # type: ignore[arg-type]
            for history in part.histories.values():
                self.samples.append(weakref.ref(history.replicas))
                for c in history.containers.values():
                    self.samples += [weakref.ref(a) for a in (c.cpu_t, c.cpu_cores, c.mem_bytes)]
            self.events += [("fetched", ref.namespace) for ref in part.histories]
            yield part


def test_each_namespace_is_recommended_as_it_arrives_and_no_history_is_kept(
    sim_prometheus, sim_cluster, tmp_path
):
    repo = tmp_path / "repo"
    write_manifests(TEST_SPEC, repo)
    config = PrometheusConfig(url=sim_prometheus.url, gzip=False, window_days=2)
    events: list[tuple[str, str]] = []
    source = Watched(PrometheusSource(config), events)
    plan = repository_outcome(
        repo,
        source,
        BotSettings(prometheus=config),
        now_s=float(sim_cluster.t_s[-1]),
        on_workload=lambda ref: events.append(("decided", ref.namespace)),
    )
    namespaces = {s.namespace for s in TEST_SPEC.services}
    assert len(namespaces) > 1 and {o.status for o in plan.outcomes} <= {"changes", "ok"}
    assert [o.ref for o in plan.outcomes] == [w.ref for w in plan.inventory.workloads]
    # the first namespace is decided before the last one is even handed over
    last_fetched = max(i for i, e in enumerate(events) if e[0] == "fetched")
    first_decided = min(i for i, e in enumerate(events) if e[0] == "decided")
    assert first_decided < last_fetched, events
    # every sample array handed over is gone: the outcomes keep only summaries
    assert source.samples and not [r for r in source.samples if r() is not None]
    assert all(o.summary is not None for o in plan.outcomes)
