"""Appending KEDA ``cron`` triggers to a ScaledObject's ``triggers`` (change ``keda.triggers``,
rule ``keda.cron_floors``, ``docs/manifests.md`` "KEDA ScaledObjects").

The new items follow the last trigger: whole lines at its dash column, in its indentation step,
where only this environment reads the file (a ScaledObject's ``spec.triggers``, a Helm values
file's ``keda.triggers``); else the overlay's patch carries the whole list (a ScaledObject is
patched by JSON merge patch: a list is replaced whole). Every metadata value is a string, as
KEDA reads it (``desiredReplicas: "20"``).
"""

from __future__ import annotations

from typing import Any

from bot.manifests.edit_slots import EditPlan
from bot.manifests.errors import EditError
from bot.manifests.metric_edits import MetricPlanner
from bot.manifests.patch_trees import value_at
from bot.manifests.workloads import OTHER_METRICS, Entry
from bot.model import FieldChange, FieldId, KedaScaler


def cron_triggers(keda: KedaScaler) -> int:
    """How many ``cron`` triggers a ScaledObject has."""
    return sum(kind.startswith("cron") for kind in keda.external)


def cron_items(change: FieldChange) -> list[dict[str, Any]]:
    """The trigger items ``change`` appends: ``{type: cron, metadata: {...}}`` each."""
    return [{"type": "cron", "metadata": dict(metadata)} for metadata in change.triggers]


def plan_cron_triggers(
    plan: EditPlan, planner: MetricPlanner, entry: Entry, change: FieldChange
) -> None:
    """Plan appending ``change``'s triggers after the ScaledObject's last trigger; raises
    ``EditError`` where the workload has no ScaledObject with a triggers list."""
    where = entry.workload.files[0] if entry.workload.files else ""
    slot = entry.slots.get((None, FieldId.HPA_MIN_REPLICAS))
    hpa = entry.workload.hpa
    if slot is None or hpa is None or hpa.keda is None or not change.triggers:
        raise EditError(where, 0, f"{plan.ref}: no KEDA ScaledObject to add cron triggers to")
    base = slot.path[:-1]
    triggers = value_at(slot.obj.data, (*base, "triggers"))
    if not isinstance(triggers, list) or not triggers:
        raise EditError(where, 0, f"{plan.ref}: the ScaledObject has no triggers list to extend")
    plan.expected[(None, FieldId.KEDA_TRIGGERS)] = cron_triggers(hpa.keda) + len(change.triggers)
    plan.expected[(None, OTHER_METRICS)] = hpa.other_metrics + len(change.triggers)
    last = (*base, "triggers", len(triggers) - 1)
    planner._write_items(
        plan, entry, slot.obj, last, cron_items(change), keep=True, what="the KEDA triggers"
    )
