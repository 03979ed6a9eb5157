"""The replay and backtest figures of a proposal: CPU, memory and replicas over the replayed
window under one set of values, the gate's findings, the comparison and the backtest."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.model.units import FieldId, Number

# --------------------------------------------------------------------------- replay


@dataclass(frozen=True, slots=True)
class CpuReplay:
    """One container's CPU over the replayed window under one set of values.

    ``container_minutes``: minutes summed over the container's pods; ``over_request_minutes``:
    of those, minutes with usage above the request (contention risk); ``over_limit_minutes``:
    above the CPU limit (throttling; None without a limit); ``p95_percent``: the 95th percentile
    of one pod's usage as a percentage of the request (None without a request).
    """

    container: str
    request_cores: float | None
    limit_cores: float | None
    container_minutes: float
    over_request_minutes: float
    over_limit_minutes: float | None
    p95_percent: float | None

    @property
    def over_request_share(self) -> float:
        """``over_request_minutes / container_minutes`` (0 without minutes)."""
        return self.over_request_minutes / self.container_minutes if self.container_minutes else 0.0


@dataclass(frozen=True, slots=True)
class MemoryReplay:
    """One container's memory over the replayed window under one set of values.

    ``oom_kills``: predicted OOM episodes (the working set reaching the limit, and recorded kills
    at a limit no higher); None without a limit. ``over_request_minutes``: without a limit,
    minutes with the working set above the request (eviction risk), else None.
    ``peak_bytes``: highest working set; ``headroom_percent``: ``(limit or request − peak) /
    (limit or request) × 100`` (negative: the peak is above it).
    """

    container: str
    request_bytes: int | None
    limit_bytes: int | None
    oom_kills: int | None
    over_request_minutes: float | None
    peak_bytes: float
    headroom_percent: float | None


@dataclass(frozen=True, slots=True)
class ReplicaReplay:
    """Replicas over the replayed window (the HPA controller replayed, or as recorded).

    ``shortfall_minutes``: minutes of capacity shortfall (None without an HPA): at maxReplicas
    with utilisation above the target beyond the tolerance, or new pods still starting while
    the serving pods run above their requests. ``by_hour``: per hour of the week (Sunday 00 first,
    in ``time_zone``), mean replicas; empty when not computed.
    """

    mean: float
    p95: float
    max: float
    pod_hours: float
    shortfall_minutes: float | None
    replayed: bool
    """True when an HPA was replayed; False when the recorded replica counts are used."""
    by_hour: tuple[float, ...] = ()
    time_zone: str = "UTC"


@dataclass(frozen=True, slots=True)
class ReplayFigures:
    """What one set of values would have done over the window (``bot/recommend/replay``).

    ``core_hours`` / ``gib_hours``: requested CPU (cores) and memory (GiB) summed over pods and
    hours; ``window_s``: the length of the window replayed.
    """

    window_s: float
    cpu: tuple[CpuReplay, ...]
    memory: tuple[MemoryReplay, ...]
    replicas: ReplicaReplay
    core_hours: float
    gib_hours: float

    def container_cpu(self, name: str) -> CpuReplay | None:
        return next((c for c in self.cpu if c.container == name), None)

    def container_memory(self, name: str) -> MemoryReplay | None:
        return next((c for c in self.memory if c.container == name), None)

    @property
    def over_request_minutes(self) -> float:
        """CPU minutes over request, summed over containers."""
        return sum(c.over_request_minutes for c in self.cpu)

    @property
    def container_minutes(self) -> float:
        """Container-minutes, summed over containers (CPU samples)."""
        return sum(c.container_minutes for c in self.cpu)

    @property
    def oom_kills(self) -> int:
        """Predicted OOM episodes, summed over containers with a limit."""
        return sum(m.oom_kills or 0 for m in self.memory)


@dataclass(frozen=True, slots=True)
class GateFinding:
    """One way a proposal's replay is worse than the current values'.

    ``kind``: ``oom`` (more OOM kills), ``eviction`` (more minutes above a memory request
    without a limit, beyond the allowance), ``cpu`` (more CPU minutes over request beyond the
    allowance) or ``shortfall`` (more capacity shortfall); ``container`` None for the workload.
    """

    kind: str
    container: str | None
    current: float
    proposed: float
    allowed: float
    message: str


@dataclass(frozen=True, slots=True)
class ReplayComparison:
    """The replay of the current and the proposed values over the same window.

    ``gate``: ``on`` / ``report-only`` / ``off``; ``held``: fields the gate moved back, as
    ``(field, container, wanted, kept)``; ``findings``: what the proposal as wanted did worse
    (with ``gate: on`` the proposal shown is the backed-off one, whose figures are ``proposed``).
    """

    current: ReplayFigures
    proposed: ReplayFigures
    gate: str = "on"
    findings: tuple[GateFinding, ...] = ()
    held: tuple[tuple[FieldId, str | None, Number | None, Number | None], ...] = ()
    extended: Mapping[str, float] = field(default_factory=dict)
    """Extended resources per pod (``nvidia.com/gpu`` -> 1): priced per replica, never
    proposed."""


@dataclass(frozen=True, slots=True)
class Backtest:
    """Out-of-sample evidence: the engine with the same settings on the history as it stood
    ``trained_until_s`` (one ``forecast.horizon_days`` ago), its values replayed on the days since.

    ``proposed``: the figures of what it would have proposed then (its current values where it
    proposed nothing), ``current``: the figures of the current values, both over the scored days
    only (``window_s``); ``status``: that earlier run's status. ``unavailable``: why there is no
    backtest (a history too short, nothing to replay); the figures are then None.
    """

    trained_until_s: float
    proposed: ReplayFigures | None = None
    current: ReplayFigures | None = None
    status: str | None = None
    unavailable: str | None = None
    expected: tuple[tuple[str, float], ...] = ()
    """Per container, what the backtest predicts for the proposal: the share of the scored
    minutes over the proposal's own request (raise included; the current one where it proposes
    none), ``bot.recommend.replay.budget.expected``."""
