"""Time-of-week floors as KEDA ``cron`` triggers (bot rule ``keda.cron_floors``).

Tortoise keeps a minReplicas per hour of the week (``tortoise.replicas``: the slot's largest
``ceil(replicas × 0.5)``) and a manifest holds one, the largest. Where the busy hours alone need
that floor, a ScaledObject can say so: ``minReplicaCount`` lowered to the quiet hours' floor and
one ``cron`` trigger per run of busy hours asking for the floor those hours need. KEDA's cron
scaler proposes ``desiredReplicas`` between ``start`` and ``end`` and 1 outside (kedacore/keda
``pkg/scalers/cron_scaler.go``; keda-docs ``scalers/cron.md``); the HPA takes the largest
proposal of its metrics, so the replay models the triggers as a floor per step
(``replay.controller.Floor``).

1. Floors per hour of the week: Tortoise's slots rebuilt one hour wide, weekly, on the clock of
   ``keda.time_zone`` (the triggers' ``timezone``); every hour must have been seen.
2. Quiet floors: the slot values below the static floor whose busy hours (above them) group
   into at most ``keda.cron_max_triggers`` triggers (``triggers_for``), lowest first.
3. The replay: the HPA KEDA generates, with the static floor and with each quiet floor plus its
   triggers (at most ``MAX_REPLAYS``); the first with fewer replica-hours and no more shortfall
   minutes is proposed.

The plan that pays is a change (``with_cron_floors``): ``minReplicaCount`` lowered to the quiet
floor and ``Recommendation.keda_triggers``, the triggers the editor appends (``keda.triggers``,
``bot.manifests.trigger_edits``). Never for ``minReplicaCount: 0`` (KEDA's own floor is zero); a
ScaledObject that already has cron triggers keeps its ``minReplicaCount`` and gets no more; a
note says why.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import groupby

import numpy as np

from bot.clock import hour_of_week
from bot.config.recommend import RecommendSettings
from bot.model import (
    HOURS_PER_WEEK,
    SECONDS_PER_HOUR,
    DeclaredHPA,
    Explained,
    FloatArray,
    Note,
    Recommendation,
)
from bot.recommend.inputs import WorkloadInput
from bot.recommend.replay.compare import proposed_values
from bot.recommend.replay.context import ReplayContext
from bot.recommend.replay.exact import replay_reach
from bot.recommend.replay.figures import replica_path, walked
from bot.recommend.replay.series import ReplaySeries
from bot.recommend.replay.values import Options, Values, hpa_metrics
from bot.recommend.rules import Rule
from bot.recommend.tortoise.constants import WEEKDAYS
from bot.recommend.tortoise.replicas import replica_slots, slot_labels

HOURS_PER_DAY = 24

MAX_REPLAYS = 8
"""Quiet floors replayed at most, lowest first: the first that pays is proposed (a bound on
the work per ScaledObject)."""


@dataclass(frozen=True, slots=True)
class CronTrigger:
    """One KEDA ``cron`` trigger: ``desired_replicas`` for ``hours`` hours from ``start_hour``
    on each of ``days`` (cron weekdays, 0 Sunday); a run past midnight ends on a later day
    (KEDA's cron scaler is active from a ``start`` to the next ``end``)."""

    days: tuple[int, ...]
    start_hour: int
    hours: int
    desired_replicas: int
    time_zone: str

    @property
    def end_hour(self) -> int:
        return (self.start_hour + self.hours) % HOURS_PER_DAY

    @property
    def start(self) -> str:
        return f"0 {self.start_hour} * * {_days(self.days)}"

    @property
    def end(self) -> str:
        later = (self.start_hour + self.hours) // HOURS_PER_DAY
        days = tuple(sorted((d + later) % 7 for d in self.days))
        return f"0 {self.end_hour} * * {_days(days)}"

    def metadata(self) -> dict[str, str]:
        """The trigger's ``metadata`` as KEDA reads it (every value a string)."""
        return {
            "timezone": self.time_zone,
            "start": self.start,
            "end": self.end,
            "desiredReplicas": str(self.desired_replicas),
        }

    def covered(self) -> list[int]:
        """The hours of the week (Sunday 00 first) the trigger covers."""
        first = [d * HOURS_PER_DAY + self.start_hour for d in self.days]
        return [(at + h) % HOURS_PER_WEEK for at in first for h in range(self.hours)]

    def label(self) -> str:
        days = ",".join(WEEKDAYS[d] for d in self.days)
        span = f"{self.start_hour:02d}-{self.end_hour:02d}"
        if self.start_hour + self.hours > HOURS_PER_DAY:
            span += " next day"
        elif self.end_hour == 0:
            span = f"{self.start_hour:02d}-24"
        return f"{days} {span}: {self.desired_replicas}"


def _days(days: tuple[int, ...]) -> str:
    """Cron weekdays: ``1-5`` for a run of three or more, else a list."""
    if len(days) >= 3 and days == tuple(range(days[0], days[-1] + 1)):
        return f"{days[0]}-{days[-1]}"
    return ",".join(str(d) for d in days)


def _busy_runs(busy: np.ndarray, min_gap_hours: int) -> list[tuple[int, int]]:
    """(first hour of the week, length) of each run of busy hours around the week, quiet gaps
    shorter than ``min_gap_hours`` bridged; none when every hour is busy or none is."""
    quiet = np.flatnonzero(~busy)
    if quiet.size in (0, busy.size):
        return []
    origin = int(quiet[0])  # walk the week from a quiet hour: no run is cut at the end
    order = np.roll(busy, -origin)
    runs: list[list[int]] = []
    for at in np.flatnonzero(order).tolist():
        if runs and at - (runs[-1][0] + runs[-1][1]) < min_gap_hours:
            runs[-1][1] = at + 1 - runs[-1][0]
        else:
            runs.append([at, 1])
    return [((first + origin) % HOURS_PER_WEEK, length) for first, length in runs]


def triggers_for(
    floors: np.ndarray, quiet: int, *, min_gap_hours: int, time_zone: str
) -> tuple[CronTrigger, ...]:
    """The triggers holding every hour of the week whose floor (``floors``: 168 values, Sunday
    00 first) is above ``quiet``: each run of such hours around the week (quiet gaps shorter
    than ``min_gap_hours`` bridged, across midnight too) asks for its largest floor; runs of
    equal start hour, length and floor on several weekdays are one trigger. In order of start
    hour, then first weekday."""
    runs: list[tuple[int, int, int, int]] = []  # (start hour, length, desired, weekday)
    for first, length in _busy_runs(floors > quiet, min_gap_hours):
        span = [(first + h) % HOURS_PER_WEEK for h in range(length)]
        day, hour = divmod(first, HOURS_PER_DAY)
        runs.append((hour, length, int(floors[span].max()), day))
    key = lambda run: run[:3]  # noqa: E731 - the grouping key of a run
    out = [
        CronTrigger(tuple(r[3] for r in same), start, length, desired, time_zone)
        for (start, length, desired), same in groupby(sorted(runs, key=key), key=key)
    ]
    return tuple(sorted(out, key=lambda t: (t.start_hour, t.days[0])))


def candidate_plans(
    floors: np.ndarray, static: int, *, max_triggers: int, min_gap_hours: int, time_zone: str
) -> Iterator[tuple[int, tuple[CronTrigger, ...]]]:
    """Every quiet floor below ``static`` whose triggers are at most ``max_triggers``, with
    them, lowest first."""
    for quiet in sorted({int(f) for f in floors if int(f) < static}):
        triggers = triggers_for(floors, quiet, min_gap_hours=min_gap_hours, time_zone=time_zone)
        if 0 < len(triggers) <= max_triggers:
            yield quiet, triggers


def plan_triggers(
    floors: np.ndarray, static: int, *, max_triggers: int, min_gap_hours: int, time_zone: str
) -> tuple[int, tuple[CronTrigger, ...]] | None:
    """The lowest quiet floor of ``candidate_plans`` with its triggers; None when there is none
    (every hour needs the static floor, or the busy hours are too scattered)."""
    plans = candidate_plans(
        floors, static, max_triggers=max_triggers, min_gap_hours=min_gap_hours, time_zone=time_zone
    )
    return next(plans, None)


def step_floor(hours: np.ndarray, quiet: int, triggers: tuple[CronTrigger, ...]) -> np.ndarray:
    """The floor per step (``hours``: each step's hour of the week): ``quiet``, or the largest
    ``desiredReplicas`` of the triggers covering the step's hour."""
    table = np.full(HOURS_PER_WEEK, quiet, dtype=np.int64)
    for trigger in triggers:
        covered = trigger.covered()
        table[covered] = np.maximum(table[covered], trigger.desired_replicas)
    return table[hours.astype(np.intp) % HOURS_PER_WEEK]


@dataclass(frozen=True, slots=True)
class CronFloorPlan:
    """A proposal: ``minReplicaCount`` ``static`` → ``quiet`` plus ``triggers``, with the
    replayed replica-hours and shortfall minutes of both."""

    static: int
    quiet: int
    triggers: tuple[CronTrigger, ...]
    static_pod_hours: float
    cron_pod_hours: float
    static_shortfall_minutes: float
    cron_shortfall_minutes: float

    @property
    def saved_pod_hours(self) -> float:
        return self.static_pod_hours - self.cron_pod_hours

    @property
    def pays(self) -> bool:
        """Fewer replica-hours and no more shortfall minutes."""
        return (
            self.cron_pod_hours < self.static_pod_hours
            and self.cron_shortfall_minutes <= self.static_shortfall_minutes
        )

    def text(self) -> str:
        """What the PR says: the triggers and the replay's figures beside them."""
        triggers = "; ".join(t.label() for t in self.triggers)
        zone = self.triggers[0].time_zone if self.triggers else ""
        return (
            f"minReplicaCount {self.static} → {self.quiet} plus cron triggers ({zone}) "
            f"{triggers}: replayed replica-hours {self.static_pod_hours:.1f} → "
            f"{self.cron_pod_hours:.1f} (saves {self.saved_pod_hours:.1f}), shortfall "
            f"{self.static_shortfall_minutes:g} → {self.cron_shortfall_minutes:g} min"
        )


def hour_floors(
    times_s: FloatArray, replicas: FloatArray, settings: RecommendSettings
) -> tuple[np.ndarray, int]:
    """Tortoise's minReplicas per hour of the week (Sunday 00 first) on the clock of
    ``keda.time_zone``, and how many hours were never seen (their floor 0)."""
    admin = settings.admin.model_copy(
        update={
            "time_zone": settings.keda.time_zone,
            "range_of_min_max_replicas_recommendation_hours": 1,
            "gathering_data_period_type": "weekly",
        }
    )
    table = replica_slots(times_s, replicas, admin)
    labels = slot_labels(admin)
    floors = np.array([table.values.get(label, (0, 0))[0] for label in labels], dtype=np.int64)
    return floors, len(table.missing)


def replay_floors(
    series: ReplaySeries, values: Values, options: Options, floor: np.ndarray
) -> tuple[float, float]:
    """Replica-hours and shortfall minutes of ``values``' HPA replayed over ``series`` with
    ``floor`` (one per step) as its minimum (``figures.replica_path``'s walk and shortfall)."""
    hpa = values.hpa
    metrics = [m for m, _ in hpa_metrics(series, values)]
    if hpa is None or not metrics:
        raise ValueError("a floor replay needs an HPA with a resource metric")
    initial = max(round(float(series.replicas[0])) if series.steps else hpa.min_replicas, 1)
    steps, _ = replay_reach(
        metrics,
        min_replicas=floor,
        max_replicas=hpa.max_replicas,
        initial=initial,
        step_s=series.step_s,
        model=options.model,
        behavior=hpa.behavior,
    )
    walk = walked(series, steps, metrics, hpa, options)
    hours = float(walk.replicas.sum()) * series.step_s / SECONDS_PER_HOUR
    return hours, walk.shortfall_steps * series.step_s / 60.0


def refusal(hpa: DeclaredHPA | None) -> str | None:
    """Why a ScaledObject takes no cron floors whatever its history (None: it may)."""
    if hpa is None or hpa.keda is None:
        return None
    if hpa.keda.min_replica_count == 0:
        return "minReplicaCount 0 (scale to zero): KEDA's floor is already zero"
    if any(kind.startswith("cron") for kind in hpa.keda.external):
        return "it already has cron triggers: the bot does not add more"
    return None


def propose(
    *,
    hpa: DeclaredHPA,
    static: int,
    times_s: FloatArray,
    replicas: FloatArray,
    series: ReplaySeries,
    values: Values,
    options: Options,
    settings: RecommendSettings,
) -> CronFloorPlan | str:
    """The cron floors of a ScaledObject's HPA (module doc), or why none: ``values`` are those
    proposed, their ``minReplicas`` the static floor ``static``."""
    why = refusal(hpa)
    if why is not None:
        return why
    keda = settings.keda
    floors, unseen = hour_floors(times_s, replicas, settings)
    if unseen:
        return f"the replica history covers {HOURS_PER_WEEK - unseen} of {HOURS_PER_WEEK} hours"
    plans = list(
        candidate_plans(
            floors,
            static,
            max_triggers=keda.cron_max_triggers,
            min_gap_hours=keda.cron_min_hours,
            time_zone=keda.time_zone,
        )
    )
    if not plans:
        return (
            f"no quiet hours below minReplicaCount {static} that at most "
            f"{keda.cron_max_triggers} cron triggers could leave"
        )
    if values.hpa is None or not hpa_metrics(series, values):
        return "no resource trigger to replay"
    static_path = replica_path(series, values, options)
    static_hours = float(static_path.replicas.sum()) * series.step_s / SECONDS_PER_HOUR
    static_short = static_path.shortfall_steps * series.step_s / 60.0
    hours = hour_of_week(series.times_s, keda.time_zone)
    tried = []
    for quiet, triggers in plans[:MAX_REPLAYS]:
        floor = step_floor(hours, quiet, triggers)
        cron_hours, cron_short = replay_floors(series, values, options, floor)
        plan = CronFloorPlan(
            static, quiet, triggers, static_hours, cron_hours, static_short, cron_short
        )
        if plan.pays:
            return plan
        tried.append(plan)
    return f"the replay shows no saving at no added shortfall ({tried[0].text()})"


def note(result: CronFloorPlan | str) -> Note:
    """The note every output carries of the rule's result."""
    rule = Rule.KEDA_CRON_FLOORS.value
    if isinstance(result, CronFloorPlan):
        return Note("keda-cron-floors", f"cron floors proposed ({rule}): {result.text()}")
    return Note("keda-cron-floors", f"no cron floors ({rule}): {result}")


def as_metadata(triggers: tuple[CronTrigger, ...]) -> tuple[tuple[tuple[str, str], ...], ...]:
    """The triggers' ``metadata`` as ``Recommendation.keda_triggers`` carries them."""
    return tuple(tuple(t.metadata().items()) for t in triggers)


def _accepted(rec: Recommendation, plan: CronFloorPlan) -> Recommendation:
    """``rec`` with ``minReplicaCount`` lowered to the quiet floor and the triggers to append:
    a structured change (``field_changes``), its replayed figures in the value's inputs."""
    assert rec.hpa is not None
    minimum = rec.hpa.min_replicas
    value = Explained(
        minimum.current,
        plan.quiet,
        Rule.KEDA_CRON_FLOORS.value,
        f"{plan.quiet} outside the busy hours, which cron triggers hold at their own floor "
        f"(Tortoise's largest slot: {plan.static})",
        {
            "static": plan.static,
            "static_pod_hours": round(plan.static_pod_hours, 1),
            "cron_pod_hours": round(plan.cron_pod_hours, 1),
            "static_shortfall_minutes": plan.static_shortfall_minutes,
            "cron_shortfall_minutes": plan.cron_shortfall_minutes,
        },
    )
    return replace(
        rec,
        hpa=replace(rec.hpa, min_replicas=value),
        keda_triggers=as_metadata(plan.triggers),
    )


def _kept(rec: Recommendation) -> Recommendation:
    """``rec`` with ``minReplicaCount`` kept: the ScaledObject's cron triggers hold the busy
    hours, so Tortoise's largest slot is not its floor (a second plan after the triggers were
    written proposes nothing more)."""
    assert rec.hpa is not None
    minimum = rec.hpa.min_replicas
    if minimum.current is None or minimum.proposed == minimum.current:
        return rec
    value = Explained(
        minimum.current,
        minimum.current,
        Rule.KEDA_CRON_FLOORS.value,
        "kept: the ScaledObject's cron triggers hold the busy hours' floor",
        {"static": minimum.proposed},
    )
    return replace(rec, hpa=replace(rec.hpa, min_replicas=value))


def with_cron_floors(
    inp: WorkloadInput, rec: Recommendation, settings: RecommendSettings, context: ReplayContext
) -> Recommendation:
    """``rec`` with the rule's result when ``keda.cron_floors`` is ``propose`` and a ScaledObject
    scales the workload on a resource trigger; ``rec`` itself otherwise. A plan that pays is a
    change (``minReplicaCount`` lowered, ``keda_triggers`` to append, ``_accepted``); a
    ScaledObject that already has cron triggers keeps its ``minReplicaCount`` (``_kept``); any
    other refusal is a note saying why."""
    hpa = inp.hpa
    if settings.keda.cron_floors != "propose" or hpa is None or hpa.keda is None:
        return rec
    if not context.report:  # the backtest's run one horizon ago: its values alone are read
        return rec
    if rec.hpa is None:
        return rec
    minimum = rec.hpa.min_replicas
    static = minimum.proposed if minimum.proposed is not None else minimum.current
    if static is None:
        return rec
    result = propose(
        hpa=hpa,
        static=int(static),
        times_s=inp.history.replicas_t,
        replicas=inp.history.replicas,
        series=context.series,
        values=proposed_values(context.now, rec),
        options=context.options,
        settings=settings,
    )
    if isinstance(result, CronFloorPlan):
        return _accepted(rec, result)
    if any(kind.startswith("cron") for kind in hpa.keda.external):
        rec = _kept(rec)
    return replace(rec, notes=(*rec.notes, note(result)))
