"""The verdict on a merged proposal, as values: what the verification computes
(``bot.recommend.verify``) and the reports show (``bot.report.verification``).

A leaf like ``bot.model``: the standard library and ``bot.model`` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from bot.model import FieldId


@dataclass(frozen=True, slots=True)
class WindowFigures:
    """What one window showed (``bot.recommend.outcome``); ``days`` is the length observed,
    ``cpu_share`` / ``throttle_share`` fractions per container (containers without a request,
    or without a CPU limit, absent), ``shortfall_minutes`` None without an HPA,
    ``cpu_peak_cores`` the highest CPU summed over the workload's pods and containers,
    ``memory_peak_bytes`` each container's highest working set, ``restarts`` each container's
    restarts (OOM kills included)."""

    days: float
    cpu_share: Mapping[str, float] = field(default_factory=dict)
    throttle_share: Mapping[str, float] = field(default_factory=dict)
    oom_kills: Mapping[str, int] = field(default_factory=dict)
    restarts: Mapping[str, int] = field(default_factory=dict)
    replicas_mean: float | None = None
    shortfall_minutes: float | None = None
    cpu_peak_cores: float = 0.0
    memory_peak_bytes: Mapping[str, float] = field(default_factory=dict)

    @property
    def total_oom_kills(self) -> int:
        return sum(self.oom_kills.values())

    @property
    def total_restarts(self) -> int:
        return sum(self.restarts.values())

    def restarts_per_day(self, name: str) -> float:
        """Restarts per day of container ``name`` observed."""
        return self.restarts.get(name, 0) / self.days if self.days > 0 else 0.0

    def shortfall_per_day(self) -> float | None:
        """Capacity-shortfall minutes per day observed (None without an HPA)."""
        if self.shortfall_minutes is None:
            return None
        return self.shortfall_minutes / self.days if self.days > 0 else 0.0


VerdictStatus: TypeAlias = Literal[
    "waiting", "never-live", "verified", "regressed", "load-left-range"
]
"""What the bot says about one merged proposal's workload."""

FindingKind: TypeAlias = Literal["oom", "cpu", "throttle", "shortfall", "restarts"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One figure observed worse than predicted: ``container`` None for the workload;
    ``predicted`` the prediction (a share, kills, or minutes per day), ``observed`` after the
    merge, ``before`` the same figure before it (None when unknown), ``allowed`` the prediction
    plus its margin; ``fields`` what a revert restores (``(container or None, field)``)."""

    kind: FindingKind
    container: str | None
    predicted: float
    observed: float
    before: float | None
    allowed: float
    fields: tuple[tuple[str | None, FieldId], ...]
    message: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """The verdict on one workload of a merged pull request (see the module docstring);
    ``observed_days`` is how much of the window has run; ``findings`` are the regressions (or,
    with ``load-left-range``, what got worse while the load left the range)."""

    status: VerdictStatus
    reason: str
    live_s: float | None = None
    observed_days: float = 0.0
    findings: tuple[Finding, ...] = ()
    before: WindowFigures | None = None
    after: WindowFigures | None = None


__all__ = ["Finding", "FindingKind", "Verdict", "VerdictStatus", "WindowFigures"]
