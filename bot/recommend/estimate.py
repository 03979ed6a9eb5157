"""Step 2 of the engine: per container, the VPA estimate and Tortoise's ``rec``.

``estimate_container`` runs the VPA recommender once (``vpa.recommender``) and, per resource,
keeps its final estimate and Tortoise's sticky maximum of the target over the replay steps
(``rec``, ``pkg/tortoise/tortoise.go``, ``UpdateContainerRecommendationFromVPA``), with and
without the VPA per-pod minimum; for memory also the largest OOM bump and a leak between OOM
kills (``bot.recommend.leak``); for the CPU of a vertical container the coming cycle's forecast
(``bot.recommend.forecast``). Too little data is a ``TooLittleData`` with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.config.recommend import RecommendSettings
from bot.model import ContainerHistory, Resource, Usage, VpaEstimate
from bot.recommend.forecast import Forecast, forecast_of
from bot.recommend.inputs import ContainerInput
from bot.recommend.leak import Leak, find_leak
from bot.recommend.tortoise.requests import sticky_max
from bot.recommend.vpa.recommender import ReplayGrid, TooLittleData, recommend_container
from bot.recommend.window import Window

__all__ = [
    "ContainerEstimate",
    "Estimates",
    "ResourceEstimate",
    "TooLittleData",
    "estimate_container",
    "estimate_of",
]


@dataclass(frozen=True, slots=True)
class ResourceEstimate:
    """What the VPA part says about one container resource."""

    vpa: VpaEstimate
    rec: float
    """Tortoise's sticky maximum of the VPA target: the ``rec`` of every Tortoise formula."""
    usage: Usage | None
    capped_by: str | None = None
    oom_floor: float = 0.0
    """Memory: the largest OOM bump in the window (0 without OOM kills)."""
    rec_unfloored: float | None = None
    """``rec`` from the targets before the VPA per-pod minimum: what usage alone asks for."""
    target_unfloored: float | None = None
    """The VPA's final target before the per-pod minimum."""
    pod_minimum: float = 0.0
    """The VPA per-pod minimum of this container (cores or bytes)."""
    leak: Leak | None = None
    """Memory: a leak found between OOM kills (``bot.recommend.leak``)."""
    forecast: Forecast | None = None
    """CPU of a vertical container: the weekly cycle and the trend (``bot.recommend.forecast``;
    None when both are off)."""


@dataclass(frozen=True, slots=True)
class ContainerEstimate:
    """The estimates of both resources of one container."""

    cpu: ResourceEstimate
    memory: ResourceEstimate

    def __getitem__(self, resource: Resource) -> ResourceEstimate:
        return self.cpu if resource == "cpu" else self.memory


Estimates = Mapping[str, ContainerEstimate]
"""Per container name, its estimates (every container of the workload once step 2 passed)."""


def estimate_of(
    estimates: Estimates, container: str, resource: Resource
) -> ResourceEstimate | None:
    """The estimate of one container resource, or None for a container without one."""
    found = estimates.get(container)
    return found[resource] if found is not None else None


def estimate_container(
    ch: ContainerHistory,
    container: ContainerInput,
    grid: ReplayGrid,
    settings: RecommendSettings,
    window: Window,
    *,
    n_containers: int,
) -> ContainerEstimate | TooLittleData:
    """VPA estimates and sticky maxima for both resources, or why there is too little data."""
    vpa = recommend_container(
        ch,
        grid,
        settings.vpa,
        window,
        name=container.name,
        n_containers=n_containers,
        min_history_s=settings.min_history_s,
        declared_memory_bytes=container.requests.memory_bytes,
        min_allowed=container.min_allocated,
        max_allowed=container.max_allocated,
    )
    if isinstance(vpa, TooLittleData):
        return vpa
    mem = vpa.memory
    leak = (
        find_leak(
            mem.times_s,
            mem.pods,
            mem.used_bytes,
            mem.oom_times_s,
            mem.oom_pods,
            over_request_share=settings.noise.leak_over_request_share,
        )
        if mem.oom_times_s.size
        else None
    )

    forecast = None
    if container.policy("cpu") == "vertical" and settings.strategy == "tortoise":
        cpu = vpa.cpu
        forecast = forecast_of(
            cpu.times_s,
            cpu.pods,
            cpu.cores,
            now_s=window.now_s,
            settings=settings,
            percentile=settings.vpa.cpu_target_percentile,
            half_life_s=settings.vpa.cpu_half_life_s,
        )

    def of(res: Resource) -> ResourceEstimate:
        est = vpa.rows[res]
        raw = est.unfloored_target
        rec = sticky_max(est.target.tolist(), est.upper.tolist())
        rec_unfloored = sticky_max(raw.tolist(), est.upper.tolist()) if raw is not None else rec
        return ResourceEstimate(
            vpa=est.final(),
            rec=rec,
            rec_unfloored=rec_unfloored,
            target_unfloored=float(raw[-1]) if raw is not None and raw.size else None,
            pod_minimum=vpa.pod_minimum[res],
            usage=vpa.usage[res],
            capped_by=est.capped_by,
            oom_floor=vpa.oom_bump_bytes if res == "memory" else 0.0,
            leak=leak if res == "memory" else None,
            forecast=forecast if res == "cpu" else None,
        )

    return ContainerEstimate(cpu=of("cpu"), memory=of("memory"))
