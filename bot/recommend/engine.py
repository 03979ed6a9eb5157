"""The one entry point: ``recommend(inp, settings, now_s=...) -> Recommendation``.

Order, per workload (``docs/recommendations.md`` has the formulas), each step in its module:

1. refuse malformed input (a workload a live Tortoise manages never gets here: its settings
   say skip, ``bot.settings``); drop excluded periods and samples after ``now``
   (``window``);
2. per container: VPA histograms replayed on a time grid -> VPA estimate (target, bounds,
   uncapped target, confidence) and Tortoise's sticky maximum of the target (``rec``)
   (``estimate``, ``vpa.recommender``); too little CPU or memory data for a container ->
   ``gathering-data``, nothing proposed;
3. HPA: replica slots -> minReplicas/maxReplicas (maximum over the slots), emergency, and the
   per-container targets with the +5 / 24 h limits; metrics added and removed as Tortoise
   syncs them with the policies; missing slots hold the HPA (gathering) (``tortoise.hpa``,
   ``tortoise.hpa_targets``);
4. requests per container resource: ``off`` keeps, ``vertical`` follows the VPA (Tortoise's
   buffer and hysteresis, or HVPA blending), ``horizontal`` is right-sized (``folding``);
5. noise control (memory floor at the peak, OOM increase, rounding, minChange), then limits
   (``folding``; a measured risk lets an increase pass, ``replay.risk``);
6. the replay: targets and replica bounds chosen by replay where the settings say so
   (``replay.targets``, ``replay.replica_bounds``); after a merged revert, no restored field
   cut as deep as the pull request that regressed (``after_revert``; once more at the end, as
   a step below may recompute a value); then the gate (``replay.gate``); the
   backtest, this engine one horizon ago scored on the days since (``backtest``), and the
   absolute budget on CPU minutes over request, in the replay and in the backtest
   (``replay.budget``);
7. status: ``changes`` exactly when ``changes.field_changes`` is non-empty; a DaemonSet's
   notes say how much its pods differ (``spread``).

A CronJob or Job is sized on its runs' peaks, and gathers data until the window holds enough
runs (``runs``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from bot.clock import hour_of_week
from bot.config.recommend import RecommendSettings
from bot.model import (
    RESOURCES,
    ContainerRecommendation,
    Explained,
    Note,
    Recommendation,
    Resource,
    ResourceRecommendation,
    Status,
)
from bot.recommend import keda, keda_cron, namespace
from bot.recommend.after_revert import with_after_revert
from bot.recommend.backtest import run_backtest
from bot.recommend.changes import field_changes
from bot.recommend.estimate import (
    ContainerEstimate,
    ResourceEstimate,
    TooLittleData,
    estimate_container,
)
from bot.recommend.folding import limit, noise_control, request_move
from bot.recommend.forecast import cycle_note
from bot.recommend.inputs import ContainerInput, WorkloadInput
from bot.recommend.replay.budget import apply_budget, expected
from bot.recommend.replay.context import ReplayContext
from bot.recommend.replay.gate import LimitOf, gate
from bot.recommend.replay.replica_bounds import replayed_bounds, replays_bounds
from bot.recommend.replay.risk import at_risk
from bot.recommend.replay.targets import replayed_targets
from bot.recommend.runs import run_reasons, sized_on_runs, too_few_runs
from bot.recommend.spread import pod_spread
from bot.recommend.tortoise.hpa import recommend_hpa
from bot.recommend.tortoise.hpa_targets import NOT_EXPRESSIBLE
from bot.recommend.vpa.recommender import ReplayGrid
from bot.recommend.window import Window


def _first_cpu_time(inp: WorkloadInput, window: Window) -> float | None:
    """The first CPU sample time of any container in ``window`` (unix s), or None."""
    firsts = []
    for container in inp.containers:
        ch = inp.history.containers.get(container.name)
        if ch is not None and ch.cpu_t.size:
            if window.all_kept(ch.cpu_t):
                firsts.append(float(ch.cpu_t.min()))
                continue
            t = ch.cpu_t[window.keep(ch.cpu_t)]
            if t.size:
                firsts.append(float(t.min()))
    return min(firsts) if firsts else None


def input_problems(inp: WorkloadInput) -> list[str]:
    """What makes ``inp`` unusable (mismatched series, duplicate containers), or nothing."""
    problems = []
    names = [c.name for c in inp.containers]
    if len(set(names)) != len(names):
        problems.append("duplicate container names")
    hist = inp.history
    if hist.replicas_t.shape != hist.replicas.shape:
        problems.append("replicas_t and replicas differ in length")
    for name, ch in hist.containers.items():
        for family, arrays in (
            ("cpu", (ch.cpu_t, ch.cpu_pod, ch.cpu_cores)),
            ("memory", (ch.mem_t, ch.mem_pod, ch.mem_bytes)),
            ("oom", (ch.oom_t, ch.oom_pod, ch.oom_request_bytes)),
        ):
            if len({a.shape for a in arrays}) != 1 or arrays[0].ndim != 1:
                problems.append(f"container {name}: the {family} series differ in length")
    return problems


def _gathering(inp: WorkloadInput, reasons: list[str]) -> Recommendation:
    """Every value kept, nothing proposed, with why data is still being gathered."""
    containers = []
    for container in inp.containers:
        per = {}
        for resource in RESOURCES:
            req, lim = container.requests.get(resource), container.limits.get(resource)
            per[resource] = ResourceRecommendation(
                resource,
                container.policy(resource),
                Explained(req, None, "gathering-data", "too little history"),
                Explained(lim, None, "gathering-data", "too little history"),
            )
        containers.append(ContainerRecommendation(container.name, per["cpu"], per["memory"]))
    return Recommendation(inp.ref, "gathering-data", tuple(reasons), tuple(containers))


def recommend(inp: WorkloadInput, settings: RecommendSettings, *, now_s: float) -> Recommendation:
    """What the bot proposes for one workload at ``now_s`` (unix s); see the module doc."""
    return _recommend(inp, settings, now_s, report=True)


def _recommend(
    inp: WorkloadInput, settings: RecommendSettings, now_s: float, *, report: bool
) -> Recommendation:
    """``recommend``; ``report`` False: the same values, without the replay figures a report
    shows (``ReplayContext.report``), for the backtest, which reads the values alone."""
    if not inp.containers:
        return Recommendation(inp.ref, "error", ("no containers: nothing to recommend",))
    problems = input_problems(inp)
    if problems:
        return Recommendation(inp.ref, "error", tuple(problems))
    window = Window(now_s, inp.excluded_intervals_s)
    first = _first_cpu_time(inp, window)
    if first is None:
        return _gathering(inp, ["no CPU samples in the window"])
    short = too_few_runs(inp, settings, window)
    if short is not None:
        return _gathering(inp, [short])
    grid = ReplayGrid.covering(first, now_s, settings.vpa.sticky_step_s)
    n_active = sum(
        1 for c in inp.containers if any(c.policy(r) != "off" for r in RESOURCES)
    ) or len(inp.containers)
    estimates: dict[str, ContainerEstimate] = {}
    missing = []
    for container in inp.containers:
        ch = inp.history.containers.get(container.name)
        if ch is None:
            missing.append(f"no history for container {container.name}")
            continue
        result = estimate_container(ch, container, grid, settings, window, n_containers=n_active)
        if isinstance(result, TooLittleData):
            missing.append(result.reason)
        else:
            estimates[container.name] = result
    if missing:
        return _gathering(inp, missing)
    estimates, run_notes = sized_on_runs(inp, estimates, settings, window)

    context = ReplayContext.build(
        inp,
        settings,
        now_s=now_s,
        hours=lambda times: hour_of_week(times, settings.admin.time_zone),
        time_zone=settings.admin.time_zone,
        report=report,
    )
    hpa_part = recommend_hpa(inp, settings, estimates, now_s)
    containers = []
    for container in inp.containers:
        per: dict[Resource, ResourceRecommendation] = {}
        for resource in RESOURCES:
            est = estimates[container.name][resource]
            request = noise_control(
                request_move(container, resource, est, hpa_part, inp=inp, settings=settings),
                resource,
                est,
                container,
                settings,
                at_risk=at_risk(context, container.name, resource, settings),
            )
            per[resource] = ResourceRecommendation(
                resource,
                container.policy(resource),
                request,
                _limit(container, resource, request, est, settings),
                est.usage,
                est.vpa,
            )
        containers.append(ContainerRecommendation(container.name, per["cpu"], per["memory"]))
    containers = run_reasons(inp, containers, settings, window)  # "VPA target" is the runs' peak

    notes = tuple(inp.history.quality) + ((hpa_part.note,) if hpa_part.note else ())
    notes += pod_spread(inp, window)  # a DaemonSet's pods: one request, the busiest governs
    notes += run_notes  # a CronJob's or Job's: sized on its runs' peaks
    notes += tuple(  # a history that stopped a cycle ago: no weekly cycle
        note
        for name, est in estimates.items()
        if (note := cycle_note(est.cpu.forecast, name)) is not None
    )
    if (
        inp.hpa is not None
        and not inp.container_resource_metrics
        and any(t.container is None for t in inp.hpa.targets)
    ):
        notes += (Note("container-resource-unsupported", NOT_EXPRESSIBLE),)
    if inp.kubernetes_note:
        notes += (Note("kubernetes-version", inp.kubernetes_note),)
    notes += keda.notes(inp.scaler)
    notes += namespace.notes(inp, containers)  # LimitRange defaults, runtime memory
    draft = Recommendation(
        inp.ref,
        "no-change",
        (),
        tuple(containers),
        hpa_part.recommendation if inp.hpa else None,
        notes,
    )
    draft = keda.hold(inp.hpa, draft)  # what a KEDA ScaledObject cannot take
    if context is not None and inp.hpa is not None and replays_bounds(inp, hpa_part, settings):
        draft = replayed_targets(inp, draft, settings, context, now_s=now_s)
        draft = replayed_bounds(inp, draft, settings, context)
        draft = keda.hold(inp.hpa, draft)
    draft = with_after_revert(inp.after_revert, draft)  # no cut as deep as one that regressed
    changes = field_changes(draft)
    limit_of = _limits_of(inp, settings, estimates)
    if context is not None and changes:
        gated = gate(inp, draft, settings, context=context, limit_of=limit_of)
        if not _same_fields(gated, draft):  # something held back: the changes that are left
            changes = field_changes(gated)
        draft = gated
    backtest = None
    if context is not None:
        run = (
            run_backtest(inp, settings, now_s=now_s, decide=_without_backtest)
            if settings.replay.backtest == "on"
            else None
        )
        backtest = run.backtest if run is not None else None
        budgeted = apply_budget(
            inp,
            draft,
            settings,
            context=context,
            backtest=backtest,
            limit_of=limit_of,
            backtest_series=run.series if run is not None else None,
        )
        if budgeted is not draft:  # a request raised to the budget: a change of its own
            draft, changes = budgeted, field_changes(budgeted)
        if run is not None:
            backtest = expected(inp, run.backtest, run.series, draft, settings)
        floored = keda_cron.with_cron_floors(inp, draft, settings, context)
        if floored.hpa is not draft.hpa:  # minReplicaCount lowered (or kept) for cron floors
            changes = field_changes(floored)
        draft = floored
    bounded = with_after_revert(inp.after_revert, draft)  # a step above recomputed a value
    if bounded is not draft:
        draft, changes = bounded, field_changes(bounded)
    reasons = [f"{c.field}{'/' + c.container if c.container else ''}: {c.reason}" for c in changes]
    status: Status
    if changes:
        status = "changes"
    elif hpa_part.gathering:
        status, reasons = "gathering-data", [hpa_part.gathering]
    else:
        status = "no-change"
    return Recommendation(
        inp.ref,
        status,
        tuple(reasons),
        draft.containers,
        draft.hpa,
        draft.notes,
        draft.replay if changes else None,
        backtest,
        keda_triggers=draft.keda_triggers,
    )


def _without_backtest(
    inp: WorkloadInput, settings: RecommendSettings, now_s: float
) -> Recommendation:
    """The engine for the backtest (its settings say ``replay.backtest: off``): its values
    alone are read, so it leaves out the replay figures (``report`` False). It scores the
    engine's own decision one horizon ago: without the bound of a revert merged since
    (``after_revert``), which would hide how deep the engine itself cuts."""
    return _recommend(replace(inp, after_revert=None), settings, now_s, report=False)


def _same_fields(a: Recommendation, b: Recommendation) -> bool:
    """Whether ``field_changes`` of ``a`` and ``b`` are the same: the same objects for all it
    reads (the gate returns its draft's own when it held nothing back)."""
    return (
        a.ref is b.ref and a.status == b.status and a.containers is b.containers and a.hpa is b.hpa
    )


def _limit(
    container: ContainerInput,
    resource: Resource,
    request: Explained,
    est: ResourceEstimate,
    settings: RecommendSettings,
) -> Explained:
    """The limit that goes with ``request``, with the estimate's peak, OOM bump and leak: the
    same rules for a proposed request and for one the gate held back."""
    proposed = limit(
        container,
        resource,
        request,
        settings,
        peak=est.usage.max if est.usage else None,
        oom_bump=est.oom_floor,
        leak=est.leak,
    )
    return namespace.bound_limit(container, resource, request, proposed, settings)


def _limits_of(
    inp: WorkloadInput, settings: RecommendSettings, estimates: Mapping[str, ContainerEstimate]
) -> LimitOf:
    """The limit that follows a request the gate held back or the budget raised, by the same
    rules as a proposed one (``_limit``)."""
    by_name = {c.name: c for c in inp.containers}

    def limit_of(container: str, resource: Resource, request: Explained) -> Explained:
        est = estimates[container][resource]
        return _limit(by_name[container], resource, request, est, settings)

    return limit_of
