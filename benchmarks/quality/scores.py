"""What a candidate's values did over a scored simulation, summed so that scores pool.

Per service (``score``), over every pod life and container of the scored window:

- requested core-hours and GiB-hours: ``request × minutes alive / 60`` summed over pods, i.e.
  with replicas; used core-hours and GiB-hours likewise from the usage samples;
- CPU slack ``1 − Σ usage / Σ request`` and memory slack ``1 − Σ working set / Σ request``;
- container-minutes with CPU usage above the request;
- OOM kills (one per episode: the simulator kills a container once each time its working set
  reaches the limit);
- shortfall minutes: minutes at ``maxReplicas`` with an HPA metric's utilisation (its
  noise-free value, as the controller reads it) above its target.

``Score.figures`` turns sums into the printed figures: extensive quantities per seed and per
week, ratios from the pooled sums.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from bot.model import GIB
from bot.sim.cluster import SimulatedService
from bot.sim.hpa import hpa_signals

HOUR_S = 3600.0
WEEK_HOURS = 7 * 24.0

AIM_ROUNDS = 3
"""Merged pull requests within which the bot should stop proposing."""


@dataclass
class Score:
    """Sums over the scored window for one or more services (``add`` pools them)."""

    hours: float = 0.0
    """Scored hours; pooled over seeds, so dividing by it averages over seeds."""
    core_hours: float = 0.0
    gib_hours: float = 0.0
    used_core_hours: float = 0.0
    used_gib_hours: float = 0.0
    container_minutes: float = 0.0
    over_request_minutes: float = 0.0
    oom_kills: int = 0
    shortfall_minutes: float = 0.0
    pod_hours: float = 0.0
    rounds: list[int] = field(default_factory=list)
    """Pull requests merged until the bot proposed nothing, one entry per service and seed."""

    def add(self, other: Score) -> None:
        """Add ``other``'s sums (not its hours: services of one seed share their window)."""
        for f in fields(self):
            if f.name == "rounds":
                self.rounds.extend(other.rounds)
            elif f.name != "hours":
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def figures(self) -> dict[str, float | int | None]:
        """The printed figures (module doc); ``rounds_*`` only for the merge candidate."""
        hours = self.hours or 1.0
        weekly = WEEK_HOURS / hours
        rounds = self.rounds
        return {
            "requested_cores": self.core_hours / hours,
            "core_hours": self.core_hours * weekly,
            "gib_hours": self.gib_hours * weekly,
            "cpu_slack": slack(self.used_core_hours, self.core_hours),
            "memory_slack": slack(self.used_gib_hours, self.gib_hours),
            "cpu_over_request": self.over_request_minutes / max(self.container_minutes, 1.0),
            "oom_per_week": self.oom_kills * weekly,
            "shortfall_minutes": self.shortfall_minutes * weekly,
            "replicas_mean": self.pod_hours / hours,
            "rounds_mean": sum(rounds) / len(rounds) if rounds else None,
            "rounds_max": max(rounds) if rounds else None,
            "rounds_within_aim": sum(r <= AIM_ROUNDS for r in rounds) if rounds else None,
            "decisions": len(rounds) if rounds else None,
        }


def slack(used: float, requested: float) -> float:
    """``1 − used / requested`` (0 when nothing is requested)."""
    return 1.0 - used / requested if requested > 0 else 0.0


def score(sim: SimulatedService, step_s: int) -> Score:
    """What one service did over a scored simulation (module doc)."""
    spec = sim.spec
    declared = {c.name: c for c in spec.containers}
    step_h = step_s / HOUR_S
    out = Score(hours=len(sim.replicas) * step_h)
    for pod in sim.pods:
        n = pod.stop - pod.start
        out.pod_hours += n * step_h
        for run in pod.containers:
            c = declared[run.name]
            out.core_hours += c.cpu_request_cores * n * step_h
            out.gib_hours += c.memory_request_bytes / GIB * n * step_h
            out.used_core_hours += float(run.cpu_cores.sum()) * step_h
            out.used_gib_hours += float(run.memory_bytes.sum()) / GIB * step_h
            out.container_minutes += n * step_s / 60.0
            over = int(np.count_nonzero(run.cpu_cores > c.cpu_request_cores))
            out.over_request_minutes += over * step_s / 60.0
            out.oom_kills += len(run.oom_steps)
    if spec.hpa is not None:
        at_max = sim.replicas >= spec.hpa.max_replicas
        above = np.zeros(len(sim.replicas), dtype=bool)
        for signal in hpa_signals(spec, sim.demand_cores):
            above |= signal.utilisation_percent(sim.replicas) > signal.target_percent
        out.shortfall_minutes = int(np.count_nonzero(at_max & above)) * step_s / 60.0
    return out


Results = Mapping[int, Mapping[str, Mapping[str, Score]]]
"""Seed -> service -> candidate -> score."""


def pool(
    results: Results, candidates: Sequence[str], services: Sequence[str] | None = None
) -> dict[str, Score]:
    """Per candidate, the scores summed over seeds and ``services`` (default: all)."""
    out = {name: Score() for name in candidates}
    for per_seed in results.values():
        chosen = [s for name, s in per_seed.items() if services is None or name in services]
        for scores in chosen:
            for name, s in scores.items():
                out[name].add(s)
        hours = next(iter(chosen[0].values())).hours if chosen else 0.0
        for name in candidates:
            out[name].hours += hours
    return out
