"""A workload a KEDA ScaledObject scales: Tortoise's horizontal rules on the HPA KEDA generates,
held where the ScaledObject cannot take the value.

KEDA generates an ``autoscaling/v2`` HPA from the ScaledObject (``DeclaredHPA.keda``): the same
controller, so the engine and the replay treat the workload as HPA-scaled (min/max replicas,
per-trigger targets that move only with their requests, the replay of that HPA and its
behavior). Three things differ, all decided here:

- external triggers alone (no ``cpu``/``memory`` Utilization trigger): KEDA scales on metrics
  the bot does not see; the workload is sized vertically, its replicas never proposed
  (``engine_hpa`` gives the engine no HPA) and a note says why;
- ``minReplicaCount: 0`` (scale to zero): the generated HPA's minimum is 1 and KEDA takes the
  workload to zero and back; ``minReplicaCount`` is kept (rule ``keda.scale_to_zero``);
- the bot edits a trigger's ``metadata.value`` but never adds or removes a trigger: a target
  Tortoise would add, remove or split per container is held (rule ``keda.triggers_kept``).

Every proposal names the ScaledObject and the triggers kept ("also scaled by: ...").
"""

from __future__ import annotations

from dataclasses import replace

from bot.model import (
    POD_LEVEL,
    DeclaredHPA,
    Explained,
    HpaTargetRecommendation,
    Note,
    Recommendation,
)
from bot.recommend.rules import Rule


def engine_hpa(hpa: DeclaredHPA | None) -> DeclaredHPA | None:
    """The HPA the engine works with: none for a ScaledObject with external triggers alone."""
    if hpa is not None and hpa.external_only:
        return None
    return hpa


def notes(hpa: DeclaredHPA | None) -> tuple[Note, ...]:
    """What every output says of a KEDA-scaled workload (nothing for an HPA or none)."""
    if hpa is None or hpa.keda is None:
        return ()
    keda = hpa.keda
    also = f"also scaled by: {', '.join(keda.external)}" if keda.external else ""
    if hpa.external_only:
        return (
            Note(
                "keda-external",
                f"{hpa.scaler} scales it on external triggers ({', '.join(keda.external)}): "
                "its replicas are not proposed; requests are sized vertically",
            ),
        )
    out = [
        Note("keda", f"scaled by {hpa.scaler} (its HPA {hpa.name})" + (f"; {also}" if also else ""))
    ]
    if keda.min_replica_count == 0:
        out.append(Note("keda-scale-to-zero", _ZERO.format(scaler=hpa.scaler)))
    return tuple(out)


_ZERO = "{scaler}: minReplicaCount 0 (scale to zero) is kept; KEDA takes it to zero and back"


def held_min(hpa: DeclaredHPA, value: Explained) -> Explained:
    """``minReplicas`` as proposed, or kept at the generated HPA's 1 when the ScaledObject
    scales to zero."""
    if hpa.keda is None or hpa.keda.min_replica_count != 0 or value.proposed == value.current:
        return value
    return Explained(
        value.current,
        value.current,
        Rule.KEDA_SCALE_TO_ZERO,
        _ZERO.format(scaler=hpa.scaler),
        value.inputs,
    )


def held_targets(
    hpa: DeclaredHPA, targets: tuple[HpaTargetRecommendation, ...]
) -> tuple[HpaTargetRecommendation, ...]:
    """The targets with those the ScaledObject cannot take held: a new metric (current None)
    or a per-container one replacing a pod-level trigger is left out, a removal is kept."""
    if hpa.keda is None:
        return targets
    out = []
    why = f"{hpa.scaler}: the bot edits trigger values, it never adds or removes a trigger"
    for target in targets:
        value = target.value
        adds = value.current is None
        replaces = target.container != POD_LEVEL and value.inputs.get("metric") == "Resource"
        if adds or replaces:
            continue
        if value.proposed is None:
            kept = Explained(
                value.current, value.current, Rule.KEDA_TRIGGERS_KEPT, why, value.inputs
            )
            out.append(replace(target, value=kept))
            continue
        out.append(target)
    return tuple(out)


def hold(hpa: DeclaredHPA | None, rec: Recommendation) -> Recommendation:
    """``rec`` with its HPA half held where the ScaledObject cannot take it (``held_min``,
    ``held_targets``) and every changed value's reason naming the ScaledObject; ``rec`` itself
    for an HPA. Idempotent: the engine applies it before and after the replay."""
    if hpa is None or hpa.keda is None or rec.hpa is None:
        return rec
    part = rec.hpa
    targets = tuple(replace(t, value=_named(hpa, t.value)) for t in held_targets(hpa, part.targets))
    held = replace(
        part,
        min_replicas=_named(hpa, held_min(hpa, part.min_replicas)),
        max_replicas=_named(hpa, part.max_replicas),
        targets=targets,
    )
    return replace(rec, hpa=held)


def _named(hpa: DeclaredHPA, value: Explained) -> Explained:
    """``value`` with its reason led by the ScaledObject's name when it changes."""
    prefix = f"{hpa.scaler}: "
    if value.proposed == value.current or value.reason.startswith(prefix):
        return value
    return replace(value, reason=prefix + value.reason)
