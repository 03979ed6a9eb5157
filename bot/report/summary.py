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
    GIB,
    MIB,
    Explained,
    FieldChange,
    HpaRecommendation,
    Number,
    Recommendation,
    Resource,
)
from bot.report import numbers

POD_LEVEL = "*"
"""The container of a pod-level ``Resource`` HPA target in a recommendation."""

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
}
"""Inputs named in words; any other key is shown by its own name."""

HIDDEN_INPUTS = frozenset({"wanted_rule", "unfiltered_rule", "metric"})
"""Inputs the rule id list shows (rule names) or the reason already says (the metric kind)."""

PLAIN_SUFFIXES = ("_ratio", "_factor", "_weight", "_count", "_steps", "confidence", "phase")
"""Keys whose numbers are plain factors or counts, whatever the value measures."""


def resource_of(field: str) -> Resource | None:
    """The resource a field's amounts are in (``requests.memory`` → memory); None for replica
    counts."""
    last = field.rpartition(".")[2]
    if last == "cpu":
        return "cpu"
    if last == "memory":
        return "memory"
    return None


def unit_of(field: str, key: str) -> str:
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
    if field.startswith("hpa.target."):
        return "amount" if key in ("rec", "request") else "percent"
    if field.startswith("hpa."):
        return "replicas"
    return "amount"


def _plain(value: float) -> str:
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text or "0"


def input_value(field: str, key: str, value: Number | str | None) -> str:
    """One input's value in its unit (``unit_of``): ``560.6 MiB``, ``0.763 cores``, ``65%``."""
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    unit = unit_of(field, key)
    resource = resource_of(field)
    if unit == "amount" and resource is not None:
        return amount(resource, value)
    if unit == "percent":
        return f"{_plain(float(value))}%"
    return _plain(float(value))


def amount(resource: Resource, value: Number) -> str:
    """``0.763 cores``, ``1 core``, ``560.6 MiB``, ``1.6 GiB``: one decimal more than tables use,
    so a product can be checked."""
    if resource == "cpu":
        text = _plain(float(value))
        return f"{text} core" if text == "1" else f"{text} cores"
    if abs(value) >= GIB:
        return f"{value / GIB:.2f}".rstrip("0").rstrip(".") + " GiB"
    return f"{value / MIB:.1f}".removesuffix(".0") + " MiB"


def inputs_text(field: str, inputs: Mapping[str, Number | str | None]) -> str:
    """``rec 560.6 MiB, VPA target 488 MiB, wanted 617 MiB``: every shown input, in words and
    units, in the engine's order (``HIDDEN_INPUTS`` left out; the emergency phase only when it is
    not ``normal``)."""
    parts = []
    for key, value in inputs.items():
        if key in HIDDEN_INPUTS or (key == "phase" and value == "normal"):
            continue
        name = INPUT_NAMES.get(key, key.replace("_", " "))
        parts.append(f"{name} {input_value(field, key, value)}")
    return ", ".join(parts)


def explained_of(rec: Recommendation, field: str, container: str | None) -> Explained | None:
    """The ``Explained`` value behind ``field`` (``FieldChange`` naming) in ``rec``."""
    kind, _, resource = field.partition(".")
    if kind in ("requests", "limits"):
        cr = next((c for c in rec.containers if c.name == container), None)
        if cr is None or resource not in ("cpu", "memory"):
            return None
        rr = cr.cpu if resource == "cpu" else cr.memory
        return rr.request if kind == "requests" else rr.limit
    if rec.hpa is None:
        return None
    if field == "hpa.minReplicas":
        return rec.hpa.min_replicas
    if field == "hpa.maxReplicas":
        return rec.hpa.max_replicas
    wanted = field.removeprefix("hpa.target.")
    for t in rec.hpa.targets:
        if t.resource == wanted and t.container == (container or POD_LEVEL):
            return t.value
    return None


MAX_SLOTS_NAMED = 3
"""Slots named as driving a replica bound; more are counted."""


def driving_slots(hpa: HpaRecommendation, field: str) -> str | None:
    """The time slots whose value is the highest for ``hpa.minReplicas`` / ``hpa.maxReplicas``
    (what drives the bound, before its limits): ``Tue 02-03`` or ``Mon 09-10, Tue 09-10 and 3
    more``, ``all 168 slots alike`` when no hour stands out (a floor, not the load); None
    without slots."""
    if not hpa.slots or field not in ("hpa.minReplicas", "hpa.maxReplicas"):
        return None
    index = 0 if field == "hpa.minReplicas" else 1
    top = max(pair[index] for pair in hpa.slots.values())
    labels = [label for label, pair in hpa.slots.items() if pair[index] == top]
    if len(labels) == len(hpa.slots) > 1:
        return f"all {len(labels)} slots alike"
    shown = ", ".join(labels[:MAX_SLOTS_NAMED])
    more = len(labels) - MAX_SLOTS_NAMED
    return f"{shown} and {more} more" if more > 0 else shown


def value_label(change: FieldChange, several: bool) -> str:
    """``memory request``, ``app memory limit`` (``several`` containers), ``minReplicas``,
    ``app CPU target``, ``CPU target`` (pod-level)."""
    field = change.field
    if field in ("hpa.minReplicas", "hpa.maxReplicas"):
        return field.removeprefix("hpa.")
    resource = resource_of(field)
    name = "CPU" if resource == "cpu" else "memory"
    if field.startswith("hpa.target."):
        who = f"{change.container} " if change.container else ""
        return f"{who}{name} target"
    kind = "limit" if field.startswith("limits.") else "request"
    who = f"{change.container} " if several and change.container else ""
    return f"{who}{name} {kind}"


def what_changes(changes: Sequence[FieldChange], hpa: HpaRecommendation | None) -> str:
    """What a workload's changes do, in one short line: the replica range (``replicas 3–20 →
    5–18``), requests by how much (``app memory request and limit −20 %`` when the limit moves
    by as much), other limits, the targets (``CPU targets 60% → 65%``; a target that keeps its
    value but becomes a per-container metric says so)."""
    resources = [c for c in changes if c.container and not c.field.startswith("hpa.")]
    several = len({c.container for c in resources}) > 1
    requests = {
        (c.container, resource_of(c.field)): c for c in changes if c.field.startswith("requests.")
    }

    def follows(limit: FieldChange) -> bool:
        request = requests.get((limit.container, resource_of(limit.field)))
        return request is not None and _change(request) == _change(limit)

    parts: list[str] = []
    if hpa is not None and any(c.field in ("hpa.minReplicas", "hpa.maxReplicas") for c in changes):
        low, high = hpa.min_replicas, hpa.max_replicas
        parts.append(f"replicas {low.current}–{high.current} → {low.proposed}–{high.proposed}")
    limits = [c for c in changes if c.field.startswith("limits.")]
    followed = {(c.container, resource_of(c.field)) for c in limits if follows(c)}
    for c in requests.values():
        both = " and limit" if (c.container, resource_of(c.field)) in followed else ""
        parts.append(f"{value_label(c, several)}{both} {_change(c)}")
    parts += [f"{value_label(c, several)} {_change(c)}" for c in limits if not follows(c)]
    targets: dict[str, list[FieldChange]] = {}
    for c in changes:
        if c.field.startswith("hpa.target."):
            shown = numbers.target(c.current, c.proposed)
            if c.current == c.proposed:
                shown += " as a per-container metric"
            targets.setdefault(shown, []).append(c)
    for shown, group in targets.items():
        if len(group) > 1:
            name = "CPU" if group[0].field.endswith("cpu") else "memory"
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
