"""What a replay replays: one candidate's values (``Values``: every container's requests and
limits, and the HPA's bounds, metrics and ``behavior``), how to replay them (``Options``), and
the HPA metrics those values make of a series (``hpa_metrics``). ``figures.replay`` turns them
into figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bot.model import DEFAULT_BEHAVIOR, HpaBehavior, HpaTarget, ResourceValues
from bot.recommend.replay.controller import Metric, Model
from bot.recommend.replay.series import ReplaySeries


@dataclass(frozen=True, slots=True)
class ContainerValues:
    """Requests and limits of one container (cores, bytes; None unset)."""

    name: str
    requests: ResourceValues = field(default_factory=ResourceValues)
    limits: ResourceValues = field(default_factory=ResourceValues)


@dataclass(frozen=True, slots=True)
class HpaValues:
    """An HPA's bounds, resource metrics (``container`` None: pod-level ``Resource``) and
    ``behavior`` (its declared one, the defaults filled in)."""

    min_replicas: int
    max_replicas: int
    targets: tuple[HpaTarget, ...] = ()
    behavior: HpaBehavior = DEFAULT_BEHAVIOR


@dataclass(frozen=True, slots=True)
class Values:
    """One candidate: every container's requests and limits, and the HPA (None: no HPA)."""

    containers: tuple[ContainerValues, ...]
    hpa: HpaValues | None = None

    def container(self, name: str) -> ContainerValues | None:
        return next((c for c in self.containers if c.name == name), None)


@dataclass(frozen=True, slots=True)
class Options:
    """How to replay: the controller model, pod start-up time, and whether to compute the
    per-hour profile (for reports; the gate does not need it)."""

    model: Model = "fast"
    pod_startup_s: float = 60.0
    slots: np.ndarray | None = None
    """Hour of the week (0..167, Sunday 00 first) of each step; None: no per-hour profile."""
    time_zone: str = "UTC"

    @property
    def detail(self) -> bool:
        """Figures only a report shows (the 95th percentile of CPU): with the per-hour profile."""
        return self.slots is not None


def hpa_metrics(series: ReplaySeries, values: Values) -> list[tuple[Metric, HpaTarget]]:
    """The replayable metrics of ``values.hpa``: each with its demand and per-pod request.

    A metric whose container (or, pod-level, any container) has no request gives no proposal
    upstream (``calculateRequests`` errors), so it is left out."""
    out: list[tuple[Metric, HpaTarget]] = []
    if values.hpa is None:
        return out
    for target in values.hpa.targets:
        if target.container is not None:
            cv = values.container(target.container)
            request = cv.requests.get(target.resource) if cv else None
            if not request:
                continue
            usage = series.demand(target.container, target.resource)
        else:
            requests = [c.requests.get(target.resource) for c in values.containers]
            if not requests or any(not r for r in requests):
                continue
            request = float(sum(r for r in requests if r))
            usage = np.zeros(series.steps)
            for c in values.containers:
                usage = usage + series.demand(c.name, target.resource)
        out.append((Metric(usage, float(request), target.utilization_percent), target))
    return out
