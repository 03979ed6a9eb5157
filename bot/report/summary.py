"""One workload in words, for a reviewer: what changes, each value's inputs, the OOM story.

``inputs_text`` renders whatever ``Explained.inputs`` holds, so a rule that gains an input
(a floor, the hours that drive a replica bound) shows it without a change here: a known key gets
its name in words (``INPUT_NAMES``), any other key its own name with ``_`` read as spaces; a
number is shown in the unit of what it measures (``unit_of``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from bot.model import (
    POD_LEVEL,
    Explained,
    FieldChange,
    FieldId,
    HpaRecommendation,
    Number,
    Recommendation,
)
from bot.report import numbers

INPUT_NAMES: Mapping[str, str] = {
    "rec": "rec",
    "vpa_target": "VPA target",
    "wanted": "wanted",
    "unfiltered": "wanted",
    "min_change": "minChange",
    "slot_min": "busiest slot's minimum",
    "slot_max": "busiest slot's maximum",
    "replaces": "pod-level target replaced",
    "request": "request",
    "unlimited": "before the per-change limit",
    "vpa_weight": "VPA weight",
    "run_count": "runs",
}
"""Inputs named in words; any other key is shown by its own name."""

HIDDEN_INPUTS = frozenset({"wanted_rule", "unfiltered_rule", "metric", "peak_percentile"})
"""Inputs the rule id list shows (rule names) or the reason already says (the metric kind)."""

SUPERSEDED_INPUTS: Mapping[str, tuple[str, str]] = {
    "unlimited": ("replayed_target", "Tortoise's formula, not applied"),
}
"""An input that is not what the proposal applies when another input is present, and its name
then. An HPA target's ``unlimited`` is Tortoise's formula before its per-change limit (+5
points a day): with ``replicas.target: replay`` the replay's target (``replayed_target``) and
its step are applied instead, so "before the per-change limit 87%" beside a proposed 88% would
read as a limit that was not there. A pull request leaves it out; ``explain`` names it so."""

PLAIN_SUFFIXES = (
    "_ratio",
    "_factor",
    "_fraction",
    "_share",
    "_days",
    "_kills",
    "_weight",
    "_count",
    "_steps",
    "_minutes",
    "confidence",
    "phase",
)
"""Keys whose numbers are plain factors or counts, whatever the value measures."""


def unit_of(field: FieldId, key: str) -> str:
    """What an input's number measures: ``amount`` (cores or bytes of the field's resource),
    ``percent``, ``replicas`` or ``plain``.

    Requests and limits: amounts, except plain factors (``PLAIN_SUFFIXES``) and percents
    (``*_percent``). HPA targets: percents, except ``rec``, ``request`` and keys ending in
    ``_cores`` / ``_bytes`` (amounts). Replica bounds: replicas, except factors and percents.
    """
    if key.endswith(PLAIN_SUFFIXES):
        return "plain"
    if key.endswith("_percent"):
        return "percent"
    if key.endswith(("_cores", "_bytes")):
        return "amount"
    if field.is_hpa_target:
        return "amount" if key in ("rec", "request") else "percent"
    if field in (FieldId.HPA_MIN_REPLICAS, FieldId.HPA_MAX_REPLICAS):
        return "replicas"
    return "amount"


def input_value(field: FieldId, key: str, value: Number | str | None) -> str:
    """One input's value in its unit (``unit_of``): ``560.6 MiB``, ``0.763 cores``, ``65%``."""
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    unit = unit_of(field, key)
    resource = field.resource
    if unit == "amount" and resource is not None:
        return numbers.precise_amount(resource, value)
    if unit == "percent":
        return f"{numbers.plain(float(value))}%"
    return numbers.plain(float(value))


def inputs_text(
    field: FieldId, inputs: Mapping[str, Number | str | None], *, superseded: bool = False
) -> str:
    """``rec 560.6 MiB, VPA target 488 MiB, wanted 617 MiB``: every shown input, in words and
    units, in the engine's order (``HIDDEN_INPUTS`` left out; the emergency phase only when it is
    not ``normal``). An input another one supersedes (``SUPERSEDED_INPUTS``) is left out, or
    with ``superseded`` shown under the name that says it is not applied."""
    parts = []
    for key, value in inputs.items():
        if key in HIDDEN_INPUTS or (key == "phase" and value == "normal"):
            continue
        name = INPUT_NAMES.get(key, key.replace("_", " "))
        if key == "runs_peak":  # a CronJob's or Job's target: its runs' peak percentile
            q = inputs.get("peak_percentile")
            name = f"runs' p{q:g} peak" if isinstance(q, int | float) else "runs' peak"
        over = SUPERSEDED_INPUTS.get(key)
        if over is not None and over[0] in inputs:
            if not superseded:
                continue
            name = over[1]
        parts.append(f"{name} {input_value(field, key, value)}")
    return ", ".join(parts)


def explained_of(rec: Recommendation, field: FieldId, container: str | None) -> Explained | None:
    """The ``Explained`` value behind ``field`` (``FieldChange`` naming) in ``rec``."""
    resource = field.resource
    if field.is_request_or_limit and resource is not None:
        cr = next((c for c in rec.containers if c.name == container), None)
        if cr is None:
            return None
        rr = cr.resource(resource)
        return rr.request if field.is_request else rr.limit
    if rec.hpa is None:
        return None
    if field == FieldId.HPA_MIN_REPLICAS:
        return rec.hpa.min_replicas
    if field == FieldId.HPA_MAX_REPLICAS:
        return rec.hpa.max_replicas
    for t in rec.hpa.targets:
        if t.resource == resource and t.container == (container or POD_LEVEL):
            return t.value
    return None


MAX_SLOTS_NAMED = 3
"""Slots named as driving a replica bound; more are counted."""


def driving_slots(hpa: HpaRecommendation, field: FieldId) -> str | None:
    """The time slots whose value is the highest for ``hpa.minReplicas`` / ``hpa.maxReplicas``
    (what drives the bound, before its limits): ``Tue 02-03`` or ``Mon 09-10, Tue 09-10 and 3
    more``, ``all 168 slots alike`` when no hour stands out (a floor, not the load); None
    without slots."""
    if not hpa.slots or field not in (FieldId.HPA_MIN_REPLICAS, FieldId.HPA_MAX_REPLICAS):
        return None
    index = 0 if field == FieldId.HPA_MIN_REPLICAS else 1
    top = max(pair[index] for pair in hpa.slots.values())
    labels = [label for label, pair in hpa.slots.items() if pair[index] == top]
    if len(labels) == len(hpa.slots) > 1:
        return f"all {len(labels)} slots alike"
    shown = ", ".join(labels[:MAX_SLOTS_NAMED])
    more = len(labels) - MAX_SLOTS_NAMED
    return f"{shown} and {more} more" if more > 0 else shown


def value_label(change: FieldChange, several: bool, mark: str = "") -> str:
    """``memory request``, ``app memory limit`` (``several`` containers), ``minReplicas``,
    ``app CPU target``, ``CPU target`` (pod-level); a container with a ``mark`` is always named
    with it: ``shipper (sidecar (init)) memory request``."""
    field = change.field
    if field == FieldId.HPA_MIN_REPLICAS:
        return "minReplicas"
    if field == FieldId.HPA_MAX_REPLICAS:
        return "maxReplicas"
    if field == FieldId.KEDA_TRIGGERS:
        return "cron triggers"
    name = "CPU" if field.resource == "cpu" else "memory"
    if field.is_hpa_target:
        who = f"{change.container} " if change.container else ""
        return f"{who}{name} target"
    kind = "limit" if field.is_limit else "request"
    who = f"{change.container} " if (several or mark) and change.container else ""
    if mark and change.container:
        who = f"{change.container} ({mark}) "
    return f"{who}{name} {kind}"


def what_changes(changes: Sequence[FieldChange], hpa: HpaRecommendation | None) -> str:
    """What a workload's changes do, in one short line: the replica range (``replicas 3–20 →
    5–18``), requests by how much (``app memory request and limit −20 %`` when the limit moves
    by as much), other limits, the targets (``CPU targets 60% → 65%``; a target that keeps its
    value but becomes a per-container metric says so)."""
    resources = [c for c in changes if c.container and c.field.is_request_or_limit]
    several = len({c.container for c in resources}) > 1
    requests = {(c.container, c.field.resource): c for c in changes if c.field.is_request}

    def follows(limit: FieldChange) -> bool:
        request = requests.get((limit.container, limit.field.resource))
        return request is not None and _change(request) == _change(limit)

    parts: list[str] = []
    bounds = (FieldId.HPA_MIN_REPLICAS, FieldId.HPA_MAX_REPLICAS)
    if hpa is not None and any(c.field in bounds for c in changes):
        low, high = hpa.min_replicas, hpa.max_replicas
        parts.append(f"replicas {low.current}–{high.current} → {low.proposed}–{high.proposed}")
    limits = [c for c in changes if c.field.is_limit]
    followed = {(c.container, c.field.resource) for c in limits if follows(c)}
    for c in requests.values():
        both = " and limit" if (c.container, c.field.resource) in followed else ""
        parts.append(f"{value_label(c, several)}{both} {_change(c)}")
    parts += [f"{value_label(c, several)} {_change(c)}" for c in limits if not follows(c)]
    targets: dict[str, list[FieldChange]] = {}
    for c in changes:
        if c.field.is_hpa_target:
            shown = numbers.target(c.current, c.proposed)
            if c.current == c.proposed:
                shown += " as a per-container metric"
            targets.setdefault(shown, []).append(c)
    for shown, group in targets.items():
        if len(group) > 1:
            name = "CPU" if group[0].field.resource == "cpu" else "memory"
            parts.append(f"{name} targets {shown}")
        else:
            parts.append(f"{value_label(group[0], True)} {shown}")
    return ", ".join(parts)


def _change(change: FieldChange) -> str:
    """``−20 %``, ``+72 %``, ``removed``, ``new``."""
    text = numbers.change_percent(change.current, change.proposed)
    if text.endswith("%") and text[0] in "+-":
        return f"{'−' if text[0] == '-' else '+'}{text[1:-1]} %"
    return text


RESTARTS = re.compile(r"restarted (\d+) times")
"""The count in a data note about restarts (``redis restarted 2 times; …``)."""


def times(count: int) -> str:
    """``once``, ``twice``, ``3 times``."""
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


def oom_story(
    name: str,
    container: str,
    *,
    kills: int,
    limit: Number | None,
    request: Number | None,
    predicted: int | None = None,
    proposed_limit: Number | None = None,
) -> str:
    """``redis was OOM-killed twice at its 512 MiB memory limit; at the proposed 882 MiB limit
    the replay predicts none.`` (``name`` the workload; the container when it differs;
    ``predicted``: the replay's OOM kills at ``proposed_limit``)."""
    who = name if container == name else f"{name} ({container})"
    where = (
        f"at its {numbers.memory(limit)} memory limit"
        if limit
        else f"without a memory limit (request {numbers.memory(request)})"
    )
    text = f"{who} was OOM-killed {times(kills)} {where}"
    if predicted is not None and proposed_limit and proposed_limit != limit:
        said = "none" if predicted == 0 else times(predicted)
        text += (
            f"; at the proposed {numbers.memory(proposed_limit)} limit the replay predicts {said}"
        )
    return text + "."
