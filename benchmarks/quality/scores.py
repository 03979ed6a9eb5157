"""What a candidate's values did over a scored simulation, summed so that scores pool.

Per service (``score``), over every pod life and container of the scored window:

- requested core-hours and GiB-hours: ``request × minutes alive / 60`` summed over pods, i.e.
  with replicas; used core-hours and GiB-hours likewise from the usage samples;
- CPU slack ``1 − Σ usage / Σ request``;
- memory slack ``Σ max(0, request − working set) / Σ request`` per container-minute: the
  requested memory nobody used (a working set above its request is never a saving: it is the
  memory risk below);
- container-minutes with CPU usage above the request, and with the working set above the memory
  request (memory risk);
- OOM kills (one per episode: the simulator kills a container once each time its working set
  reaches the limit);
- shortfall minutes: minutes at ``maxReplicas`` with an HPA metric's utilisation (its
  value from the demand, the pods' noise left out) above its target.

Only samples from ``from_step`` on count (the scored days of a run simulated without a break
from the start of the training days). ``risk_core_hours`` is filled in by
``benchmarks.quality.oracles.risk_matched``. ``Score.figures`` turns sums into the printed
figures: extensive quantities per run (seed and split weekday) and per week, ratios from the
pooled sums.
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
    unused_gib_hours: float = 0.0
    """``Σ max(0, request − working set)`` over container-minutes, GiB-hours."""
    container_minutes: float = 0.0
    over_request_minutes: float = 0.0
    over_memory_minutes: float = 0.0
    """Container-minutes with the working set above the memory request."""
    oom_kills: int = 0
    shortfall_minutes: float = 0.0
    pod_hours: float = 0.0
    risk_core_hours: float = 0.0
    """Core-hours of the risk-matched oracle for this candidate (``oracles.risk_matched``)."""
    rounds: list[int] = field(default_factory=list)
    """Pull requests merged until the bot proposed nothing, one entry per service and seed."""

    def add(self, other: Score) -> None:
        """Add ``other``'s sums (not its hours: services of one seed share their window)."""
        for f in fields(self):
            if f.name == "rounds":
                self.rounds.extend(other.rounds)
            elif f.name != "hours":  # risk_core_hours adds up like the core-hours
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
            "memory_slack": self.unused_gib_hours / self.gib_hours if self.gib_hours else 0.0,
            "cpu_over_request": self.over_request_minutes / max(self.container_minutes, 1.0),
            "memory_over_request": self.over_memory_minutes / max(self.container_minutes, 1.0),
            "risk_ratio": self.core_hours / self.risk_core_hours if self.risk_core_hours else None,
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


def score(sim: SimulatedService, step_s: int, from_step: int = 0) -> Score:
    """What one service did over a simulation from sample ``from_step`` on (module doc)."""
    spec = sim.spec
    declared = {c.name: c for c in spec.containers}
    step_h, step_min = step_s / HOUR_S, step_s / 60.0
    replicas = sim.replicas[from_step:]
    out = Score(hours=len(replicas) * step_h)
    for pod in sim.pods:
        skip = max(0, from_step - pod.start)
        n = pod.stop - pod.start - skip
        if n <= 0:
            continue
        out.pod_hours += n * step_h
        for run in pod.containers:
            c = declared[run.name]
            cpu, memory = run.cpu_cores[skip:], run.memory_bytes[skip:] / GIB
            request_gib = c.memory_request_bytes / GIB
            out.core_hours += c.cpu_request_cores * n * step_h
            out.gib_hours += request_gib * n * step_h
            out.used_core_hours += float(cpu.sum()) * step_h
            out.used_gib_hours += float(memory.sum()) * step_h
            out.unused_gib_hours += float(np.clip(request_gib - memory, 0.0, None).sum()) * step_h
            out.container_minutes += n * step_min
            out.over_request_minutes += int(np.count_nonzero(cpu > c.cpu_request_cores)) * step_min
            out.over_memory_minutes += int(np.count_nonzero(memory > request_gib)) * step_min
            out.oom_kills += int(np.count_nonzero(run.oom_steps >= from_step))
    if spec.hpa is not None:
        at_max = replicas >= spec.hpa.max_replicas
        above = np.zeros(len(replicas), dtype=bool)
        for signal in hpa_signals(spec, sim.demand_cores[from_step:]):
            above |= signal.utilisation_percent(replicas) > signal.target_percent
        out.shortfall_minutes = int(np.count_nonzero(at_max & above)) * step_min
    return out


Key = tuple[int, int]
"""A run: (seed, split weekday with Monday = 0)."""

Results = Mapping[Key, Mapping[str, Mapping[str, Score]]]
"""Run -> service -> candidate -> score."""


def pool(
    results: Results,
    candidates: Sequence[str],
    services: Sequence[str] | None = None,
    weekday: int | None = None,
) -> dict[str, Score]:
    """Per candidate, the scores summed over runs (those of ``weekday`` if given) and
    ``services`` (default: all)."""
    out = {name: Score() for name in candidates}
    for key, per_seed in results.items():
        if weekday is not None and key[1] != weekday:
            continue
        chosen = [s for name, s in per_seed.items() if services is None or name in services]
        for scores in chosen:
            for name, s in scores.items():
                out[name].add(s)
        hours = next(iter(chosen[0].values())).hours if chosen else 0.0
        for name in candidates:
            out[name].hours += hours
    return out


def worst_weekday(
    results: Results, candidates: Sequence[str], services: Sequence[str] | None = None
) -> dict[str, tuple[int, Score]]:
    """Per candidate, the split weekday with the highest pooled CPU over request (over
    ``services``, default all) and its pooled score."""
    days = sorted({key[1] for key in results})
    per_day = {day: pool(results, candidates, services, day) for day in days}

    def over(item: tuple[int, Score]) -> float:
        s = item[1]
        return s.over_request_minutes / max(s.container_minutes, 1.0)

    return {name: max(((d, per_day[d][name]) for d in days), key=over) for name in candidates}
