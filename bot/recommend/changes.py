"""The field changes a recommendation carries: exactly the values that passed noise control.

``Recommendation.status`` is ``changes`` exactly when ``field_changes`` is non-empty. Field names
are those of ``bot.model.FieldChange``: ``requests.cpu``, ``requests.memory``, ``limits.cpu``,
``limits.memory`` (with ``container``), ``hpa.minReplicas``, ``hpa.maxReplicas``,
``hpa.target.cpu`` / ``hpa.target.memory`` (with ``container``; None for the pod-level
``Resource`` metric, container ``*`` in the recommendation). A per-container target that replaces
the pod-level ``Resource`` metric (``inputs["metric"] == "Resource"``) is a change even when its
number stays: the metric itself becomes ``ContainerResource``. A limit proposed as None where one
exists is a removal (``proposed`` None), and so is a per-container target proposed as None (rule
``tortoise.target.remove_metric``): its ``ContainerResource`` metric is removed. A removal is
structural: no noise threshold applies to it. ``keda.triggers`` (``Recommendation.keda_triggers``,
rule ``keda.cron_floors``) appends KEDA ``cron`` triggers: ``proposed`` is how many, ``triggers``
their metadata.
"""

from __future__ import annotations

from bot.model import (
    POD_LEVEL,
    RESOURCES,
    EmergencyPhase,
    Explained,
    FieldChange,
    FieldId,
    Recommendation,
)
from bot.recommend.rules import Rule

RISK_RULES: frozenset[str] = frozenset(
    (
        Rule.OOM_BOUNDED,
        Rule.OOM_BUMP,
        Rule.OOM_LEAK,
        Rule.OOM_LEAK_CADENCE,
        Rule.OOM_LEAK_QUANTILE,
        Rule.OOM_LIMIT_BUMP,
        Rule.OOM_RAISE,
        Rule.REPLAY_BUDGET,
        Rule.REPLAY_BACKTEST_RAISE,
        Rule.TORTOISE_EMERGENCY,
    )
)
"""Rules whose raise answers a measured risk: an OOM kill, the CPU budget over request
(``replay.budget``, ``replay.backtest_raise``), emergency mode."""


def next_emergency_phase(rec: Recommendation) -> EmergencyPhase:
    """The emergency phase to store with this proposal (``normal`` when no HPA is involved)."""
    if rec.hpa is None:
        return "normal"
    phase = rec.hpa.min_replicas.inputs.get("phase")
    if phase == "emergency":
        return "emergency"
    return "back-to-normal" if phase == "back-to-normal" else "normal"


def _changed(value: Explained) -> bool:
    return value.rule != "gathering-data" and value.proposed != value.current


def field_changes(rec: Recommendation) -> tuple[FieldChange, ...]:
    """Every proposed value that differs from the current one, in a stable order."""
    if rec.status in ("skipped", "error", "gathering-data"):
        return ()
    out: list[FieldChange] = []
    for container in rec.containers:
        for resource in RESOURCES:
            rr = container.resource(resource)
            for field_id, value in (
                (FieldId.request(resource), rr.request),
                (FieldId.limit(resource), rr.limit),
            ):
                if field_id.is_request and value.proposed is None:
                    continue
                if _changed(value):
                    out.append(
                        FieldChange(
                            rec.ref,
                            field_id,
                            value.proposed,
                            value.current,
                            container.name,
                            f"{value.reason} [{value.rule}]",
                        )
                    )
    if rec.hpa is not None:
        for name, value in (
            (FieldId.HPA_MIN_REPLICAS, rec.hpa.min_replicas),
            (FieldId.HPA_MAX_REPLICAS, rec.hpa.max_replicas),
        ):
            if value.proposed is not None and _changed(value):
                out.append(
                    FieldChange(
                        rec.ref,
                        name,
                        value.proposed,
                        value.current,
                        None,
                        f"{value.reason} [{value.rule}]",
                    )
                )
        for target in rec.hpa.targets:
            value = target.value
            replacing = (
                target.container != POD_LEVEL
                and value.inputs.get("metric") == "Resource"
                and value.proposed is not None
            )
            if _changed(value) or replacing:
                pod_level = target.container == POD_LEVEL
                suffix = "; pod-level Resource metric" if pod_level else ""
                out.append(
                    FieldChange(
                        rec.ref,
                        FieldId.hpa_target(target.resource),
                        value.proposed,
                        value.current,
                        None if pod_level else target.container,
                        f"{value.reason}{suffix} [{value.rule}]",
                    )
                )
    if rec.keda_triggers:
        out.append(
            FieldChange(
                rec.ref,
                FieldId.KEDA_TRIGGERS,
                len(rec.keda_triggers),
                0,
                None,
                f"cron triggers holding the busy hours' floor [{Rule.KEDA_CRON_FLOORS.value}]",
                triggers=rec.keda_triggers,
            )
        )
    return tuple(out)


def _raised(value: Explained) -> bool:
    return (
        value.rule != "gathering-data"
        and isinstance(value.proposed, int | float)
        and isinstance(value.current, int | float)
        and value.proposed > value.current
    )


def risk_fix(rec: Recommendation, risk_minutes: float) -> str | None:
    """Why ``rec``'s proposal fixes a measured risk, or None: emergency mode (minReplicas
    raised, ``next_emergency_phase``), or a raised request or limit whose rule is in
    ``RISK_RULES``, or one of a container whose current value the replay shows at risk (OOM
    kills, or usage above the current request for more than ``risk_minutes`` container-minutes:
    ``noise.risk_minutes``, the rule that lets such a raise through minChange). A risk fix is
    never held back for its small cost."""
    if next_emergency_phase(rec) == "emergency":
        return "emergency mode"
    before = rec.replay.current if rec.replay is not None else None
    for container in rec.containers:
        for resource in RESOURCES:
            rr = container.resource(resource)
            for value in (rr.request, rr.limit):
                if not _raised(value):
                    continue
                if value.rule in RISK_RULES:
                    return f"{container.name} {resource} raised [{value.rule}]"
                if before is None:
                    continue
                if resource == "cpu":
                    cpu = before.container_cpu(container.name)
                    if cpu is not None and cpu.over_request_minutes > risk_minutes:
                        return f"{container.name} cpu raised: usage above its request"
                    continue
                memory = before.container_memory(container.name)
                if memory is not None and memory.oom_kills:
                    return f"{container.name} memory raised: OOM kills"
                over = memory.over_request_minutes if memory is not None else None
                if over is not None and over > risk_minutes:
                    return f"{container.name} memory raised: working set above its request"
    return None
