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
structural: no noise threshold applies to it.
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
    return tuple(out)
