"""Small builders of engine inputs for the tests (real arrays, no doubles)."""

from __future__ import annotations

import numpy as np

from bot.model import (
    ContainerHistory,
    DeclaredHPA,
    HpaTarget,
    ResourceValues,
    WorkloadHistory,
    WorkloadRef,
)
from bot.recommend.inputs import ContainerInput, WorkloadInput

DAY_S = 86400.0
NOW_S = 1_700_006_400.0
"""2023-11-15T00:00:00Z, a Wednesday; a multiple of 24 h (reference times align to days)."""
REF = WorkloadRef("Deployment", "shop", "frontend")


def series(days: float, step_s: float = 60.0, *, now_s: float = NOW_S) -> np.ndarray:
    """Sample times over the last ``days`` days, every ``step_s`` seconds, ending before now."""
    n = int(days * DAY_S / step_s)
    return now_s - days * DAY_S + step_s * np.arange(n, dtype=np.float64)


def container_history(
    name: str,
    cpu_cores: float | np.ndarray,
    mem_bytes: float | np.ndarray,
    *,
    days: float = 8.0,
    pods: int = 1,
    step_s: float = 60.0,
    oom: list[tuple[float, int, float]] | None = None,
    now_s: float = NOW_S,
) -> ContainerHistory:
    """Constant (or given per-sample) usage for ``pods`` pods over ``days`` days."""
    t1 = series(days, step_s, now_s=now_s)
    t = np.tile(t1, pods)
    pod = np.repeat(np.arange(pods, dtype=np.int32), t1.size)
    cpu = np.broadcast_to(np.asarray(cpu_cores, dtype=np.float64), t.shape).copy()
    mem = np.broadcast_to(np.asarray(mem_bytes, dtype=np.float64), t.shape).copy()
    oom = oom or []
    return ContainerHistory(
        name,
        cpu_t=t,
        cpu_pod=pod,
        cpu_cores=cpu,
        mem_t=t.copy(),
        mem_pod=pod.copy(),
        mem_bytes=mem,
        oom_t=np.array([o[0] for o in oom], dtype=np.float64),
        oom_pod=np.array([o[1] for o in oom], dtype=np.int32),
        oom_request_bytes=np.array([o[2] for o in oom], dtype=np.float64),
    )


def history(
    *containers: ContainerHistory,
    replicas: float | np.ndarray | None = None,
    days: float = 8.0,
    replica_step_s: float = 300.0,
    now_s: float = NOW_S,
) -> WorkloadHistory:
    rt = series(days, replica_step_s, now_s=now_s) if replicas is not None else np.zeros(0)
    rv = (
        np.broadcast_to(np.asarray(replicas, dtype=np.float64), rt.shape).copy()
        if replicas is not None
        else np.zeros(0)
    )
    return WorkloadHistory(
        REF,
        now_s - days * DAY_S,
        now_s,
        pods=tuple(f"pod-{i}" for i in range(4)),
        containers={c.name: c for c in containers},
        replicas_t=rt,
        replicas=rv,
    )


def weekly_load(
    days: float,
    *,
    now_s: float = NOW_S,
    step_s: float = 300.0,
    weekend: float = 0.3,
    growth_per_day: float = 0.0,
) -> np.ndarray:
    """A CPU load (cores) per sample of ``series(days, step_s, now_s=now_s)``: each day a ramp
    from 0.5 to 1.5 × its level (its p90 is 1.4 × the level), the level 1 on weekdays and
    ``weekend`` on Saturdays and Sundays (UTC), × ``(1 + growth_per_day × days since the
    first sample)``."""
    t = series(days, step_s, now_s=now_s)
    ramp = 0.5 + (t % DAY_S) / DAY_S
    weekday = (np.floor(t / DAY_S).astype(np.int64) + 4) % 7  # 0 = Sunday (1970-01-01: Thu)
    level = np.where((weekday == 0) | (weekday == 6), weekend, 1.0)
    return ramp * level * (1 + growth_per_day * (t - t[0]) / DAY_S)


def container(
    name: str,
    cpu: float | None,
    mem: int | None,
    *,
    cpu_limit: float | None = None,
    mem_limit: int | None = None,
    cpu_policy: str = "vertical",
    memory_policy: str = "vertical",
    min_allocated: ResourceValues | None = None,
    max_allocated: ResourceValues | None = None,
    max_allocatable: ResourceValues | None = None,
) -> ContainerInput:
    return ContainerInput(
        name,
        ResourceValues(cpu, mem),
        ResourceValues(cpu_limit, mem_limit),
        cpu_policy,  # type: ignore[arg-type]
        memory_policy,  # type: ignore[arg-type]
        min_allocated or ResourceValues(),
        max_allocated or ResourceValues(),
        max_allocatable or ResourceValues(),
    )


def hpa(min_replicas: int, max_replicas: int, *targets: tuple[str | None, str, int]) -> DeclaredHPA:
    return DeclaredHPA(
        "frontend",
        min_replicas,
        max_replicas,
        tuple(HpaTarget(res, pct, cont) for cont, res, pct in targets),  # type: ignore[arg-type]
    )


def workload(*containers: ContainerInput, hist: WorkloadHistory, **kwargs) -> WorkloadInput:
    return WorkloadInput(REF, tuple(containers), hist, **kwargs)


def sawtooth_history(
    name: str,
    *,
    lives: int,
    life_days: float,
    start_bytes: float,
    bytes_per_day: float,
    killed: int,
    request_bytes: float,
    step_s: float = 60.0,
) -> ContainerHistory:
    """A leak: ``lives`` pods one after the other, each ``life_days`` long, its working set
    ``start + rate × age``; the first ``killed`` pods end in an OOM kill one step after their
    last sample (at ``request_bytes`` requested), the others are replaced (a restart), the last
    one runs to now. CPU a constant 0.1 core."""
    per = round(life_days * DAY_S / step_s)
    t = series(lives * life_days, step_s)[: lives * per]
    age = (np.arange(t.size) % per) * step_s
    pod = (np.arange(t.size) // per).astype(np.int32)
    ends = t[per - 1 :: per][:killed] + step_s
    return ContainerHistory(
        name,
        cpu_t=t,
        cpu_pod=pod,
        cpu_cores=np.full(t.size, 0.1),
        mem_t=t.copy(),
        mem_pod=pod.copy(),
        mem_bytes=(start_bytes + bytes_per_day * age / DAY_S).astype(np.float64),
        oom_t=ends.astype(np.float64),
        oom_pod=np.arange(killed, dtype=np.int32),
        oom_request_bytes=np.full(killed, float(request_bytes)),
    )
