"""One workload's history as a JSON document -> engine input (``tortoise-bot recommend``).

The document is described by ``docs/schemas/recommend-input.schema.json``::

    {"now": ISO8601, "workload": {"kind", "namespace", "name", "environment"?},
     "containers": [{"name", "requests": {"cpu", "memory"}, "limits": {...},
                     "policy": {"cpu", "memory"}, "min_allocated"?, "max_allocated"?,
                     "cpu_samples": [[unix_s, pod, cores]], "memory_samples": [[unix_s, pod, bytes]],
                     "oom_events": [[unix_s, pod, request_bytes]]}],
     "replicas": [[unix_s, count]], "hpa": {...} | null,
     "emergency"?: {"requested", "previous_phase"}, "target_changed"?: [...], "settings"?: {...}}

Every problem raises ``InputError`` whose ``field`` is the JSON path (``containers[0].cpu_samples[3]``).
Pure: the caller reads the file and parses the JSON.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from bot.model import (
    RESOURCES,
    ContainerHistory,
    DeclaredHPA,
    HpaTarget,
    Policy,
    Resource,
    ResourceValues,
    WorkloadHistory,
    WorkloadRef,
)
from bot.recommend.errors import InputError
from bot.recommend.inputs import ContainerInput, EmergencyState, WorkloadInput, default_policy

POLICIES: tuple[Policy, ...] = ("horizontal", "vertical", "off")
"""Accepted policy values."""
PHASES = ("normal", "emergency", "back-to-normal")
"""Accepted emergency phases."""


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed input document: the engine input, ``now`` and the settings overrides."""

    input: WorkloadInput
    now_s: float
    settings: Mapping[str, Any]


def _obj(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError("expected an object", path)
    return value


def _list(value: Any, path: str) -> Sequence[Any]:
    if not isinstance(value, list):
        raise InputError("expected an array", path)
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputError("expected a non-empty string", path)
    return value


def _num(value: Any, path: str, *, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError("expected a number" + (" or null" if allow_none else ""), path)
    if not math.isfinite(value):
        raise InputError("expected a finite number", path)
    if value < 0:
        raise InputError("must be >= 0", path)
    return float(value)


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError("expected a non-negative integer", path)
    return value


def _resources(value: Any, path: str) -> ResourceValues:
    if value is None:
        return ResourceValues()
    data = _obj(value, path)
    unknown = set(data) - set(RESOURCES)
    if unknown:
        raise InputError(f"unknown key {sorted(unknown)[0]!r}", path)
    cpu = _num(data.get("cpu"), f"{path}.cpu", allow_none=True)
    mem = _num(data.get("memory"), f"{path}.memory", allow_none=True)
    return ResourceValues(cpu, int(mem) if mem is not None else None)


def parse_time(value: Any, path: str) -> float:
    """ISO 8601 (naive means UTC) or unix seconds -> unix seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    text = _str(value, path)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InputError(f"not an ISO 8601 time: {text!r}", path) from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def _samples(
    value: Any, path: str, pods: dict[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = _list(value if value is not None else [], path)
    t = np.empty(len(rows))
    pod = np.empty(len(rows), dtype=np.int32)
    v = np.empty(len(rows))
    for i, row in enumerate(rows):
        where = f"{path}[{i}]"
        if not isinstance(row, list) or len(row) != 3:
            raise InputError("expected [unix_s, pod, value]", where)
        t[i] = _num(row[0], f"{where}[0]")
        name = row[1] if isinstance(row[1], str) else None
        if name is None:
            raise InputError("expected the pod name as a string", f"{where}[1]")
        pod[i] = pods.setdefault(name, len(pods))
        v[i] = _num(row[2], f"{where}[2]")
    return t, pod, v


def _hpa(value: Any, path: str) -> DeclaredHPA | None:
    if value is None:
        return None
    data = _obj(value, path)
    max_replicas = _int(data.get("max_replicas"), f"{path}.max_replicas")
    min_raw = data.get("min_replicas")
    min_replicas = None if min_raw is None else _int(min_raw, f"{path}.min_replicas")
    targets = []
    for i, raw in enumerate(_list(data.get("targets", []), f"{path}.targets")):
        where = f"{path}.targets[{i}]"
        target = _obj(raw, where)
        resource = target.get("resource")
        if resource not in RESOURCES:
            raise InputError("expected 'cpu' or 'memory'", f"{where}.resource")
        container = target.get("container")
        if container is not None:
            container = _str(container, f"{where}.container")
        util = _int(target.get("utilization"), f"{where}.utilization")
        targets.append(HpaTarget(resource, util, container))
    name = data.get("name", "hpa")
    return DeclaredHPA(_str(name, f"{path}.name"), min_replicas, max_replicas, tuple(targets))


def parse_document(data: Any) -> Document:
    """Validate and convert a decoded JSON document (see module doc)."""
    doc = _obj(data, "<root>")
    known = {
        "now",
        "workload",
        "containers",
        "replicas",
        "hpa",
        "settings",
        "emergency",
        "target_changed",
        "excluded_intervals",
    }
    unknown = set(doc) - known
    if unknown:
        raise InputError(f"unknown key {sorted(unknown)[0]!r}", "<root>")
    if "now" not in doc:
        raise InputError("required", "now")
    now_s = parse_time(doc["now"], "now")
    wl = _obj(doc.get("workload"), "workload")
    ref = WorkloadRef(
        _str(wl.get("kind"), "workload.kind"),
        _str(wl.get("namespace"), "workload.namespace"),
        _str(wl.get("name"), "workload.name"),
        _str(wl.get("environment", "default"), "workload.environment"),
    )
    hpa = _hpa(doc.get("hpa"), "hpa")
    pods: dict[str, int] = {}
    containers: list[ContainerInput] = []
    histories: dict[str, ContainerHistory] = {}
    raw_containers = _list(doc.get("containers"), "containers")
    if not raw_containers:
        raise InputError("at least one container is required", "containers")
    for i, raw in enumerate(raw_containers):
        path = f"containers[{i}]"
        c = _obj(raw, path)
        name = _str(c.get("name"), f"{path}.name")
        if name in histories:
            raise InputError(f"duplicate container name {name!r}", f"{path}.name")
        requests = _resources(c.get("requests"), f"{path}.requests")
        policy_raw = _obj(c.get("policy", {}), f"{path}.policy")
        chosen: dict[Resource, Policy] = {}
        for resource in RESOURCES:
            value = policy_raw.get(resource)
            if value is not None and value not in POLICIES:
                raise InputError(
                    "expected horizontal, vertical or off", f"{path}.policy.{resource}"
                )
            request = requests.get(resource)
            chosen[resource] = (
                "off" if not request else value or default_policy(name, resource, request, hpa)
            )
        cpu = _samples(c.get("cpu_samples"), f"{path}.cpu_samples", pods)
        mem = _samples(c.get("memory_samples"), f"{path}.memory_samples", pods)
        oom = _samples(c.get("oom_events"), f"{path}.oom_events", pods)
        histories[name] = ContainerHistory(name, *cpu, *mem, *oom)
        containers.append(
            ContainerInput(
                name,
                requests,
                _resources(c.get("limits"), f"{path}.limits"),
                chosen["cpu"],
                chosen["memory"],
                _resources(c.get("min_allocated"), f"{path}.min_allocated"),
                _resources(c.get("max_allocated"), f"{path}.max_allocated"),
            )
        )
    rows = _list(doc.get("replicas", []), "replicas")
    rt = np.empty(len(rows))
    rv = np.empty(len(rows))
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != 2:
            raise InputError("expected [unix_s, count]", f"replicas[{i}]")
        rt[i] = _num(row[0], f"replicas[{i}][0]")
        rv[i] = _num(row[1], f"replicas[{i}][1]")
    emergency_raw = _obj(doc.get("emergency", {}), "emergency")
    phase = emergency_raw.get("previous_phase", "normal")
    if phase not in PHASES:
        raise InputError("expected normal, emergency or back-to-normal", "emergency.previous_phase")
    requested = emergency_raw.get("requested", False)
    if not isinstance(requested, bool):
        raise InputError("expected true or false", "emergency.requested")
    changed: dict[tuple[str, Resource], float] = {}
    for i, raw in enumerate(_list(doc.get("target_changed", []), "target_changed")):
        where = f"target_changed[{i}]"
        entry = _obj(raw, where)
        raw_resource = entry.get("resource")
        if raw_resource not in RESOURCES:
            raise InputError("expected 'cpu' or 'memory'", f"{where}.resource")
        res: Resource = "cpu" if raw_resource == "cpu" else "memory"
        changed[(_str(entry.get("container"), f"{where}.container"), res)] = parse_time(
            entry.get("at"), f"{where}.at"
        )
    excluded = []
    for i, raw in enumerate(_list(doc.get("excluded_intervals", []), "excluded_intervals")):
        where = f"excluded_intervals[{i}]"
        if not isinstance(raw, list) or len(raw) != 2:
            raise InputError("expected [start, end]", where)
        excluded.append((parse_time(raw[0], f"{where}[0]"), parse_time(raw[1], f"{where}[1]")))
    starts = [float(h.cpu_t.min()) for h in histories.values() if h.cpu_t.size]
    history = WorkloadHistory(
        ref,
        min(starts) if starts else now_s,
        now_s,
        tuple(pods),
        histories,
        rt,
        rv,
    )
    inp = WorkloadInput(
        ref,
        tuple(containers),
        history,
        hpa=hpa,
        emergency=EmergencyState(requested, phase),
        target_changed_s=changed,
        excluded_intervals_s=tuple(excluded),
    )
    settings = _obj(doc.get("settings", {}), "settings")
    return Document(inp, now_s, settings)
