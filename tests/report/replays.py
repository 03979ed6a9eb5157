"""Hand-made replay figures for report tests: one container ``app`` over 14 days."""

from __future__ import annotations

from bot.model import MIB, CpuReplay, MemoryReplay, ReplayComparison, ReplayFigures, ReplicaReplay

WINDOW_S = 14 * 86400.0
"""14 days: 336 hours."""


def figures(
    core_hours: float,
    gib_hours: float,
    *,
    replicas: tuple[float, float, float] = (2.0, 3.0, 4.0),
    over_request: float = 0.0,
    container_minutes: float = 40_320.0,
    oom_kills: int | None = 0,
    eviction_minutes: float | None = None,
    shortfall: float | None = None,
    by_hour: tuple[float, ...] = (),
    time_zone: str = "UTC",
) -> ReplayFigures:
    """Figures of one set of values: ``oom_kills`` None means no memory limit, and then
    ``eviction_minutes`` are the minutes above the memory request."""
    mean, p95, peak = replicas
    return ReplayFigures(
        window_s=WINDOW_S,
        cpu=(CpuReplay("app", 0.5, None, container_minutes, over_request, None, 80.0),),
        memory=(
            MemoryReplay(
                "app",
                512 * MIB,
                None if oom_kills is None else 1024 * MIB,
                oom_kills,
                eviction_minutes,
                400.0 * MIB,
                60.0,
            ),
        ),
        replicas=ReplicaReplay(mean, p95, peak, mean * 336.0, shortfall, True, by_hour, time_zone),
        core_hours=core_hours,
        gib_hours=gib_hours,
    )


def comparison(**kwargs: object) -> ReplayComparison:
    """Current: 2 cores and 4 GiB with replicas on average (672 core-hours, 1,344 GiB-hours);
    proposed: half of each. ``kwargs`` go to ``ReplayComparison``."""
    return ReplayComparison(figures(672.0, 1344.0), figures(336.0, 672.0), **kwargs)  # type: ignore[arg-type]
