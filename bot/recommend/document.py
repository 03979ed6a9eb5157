"""One workload's history as a JSON document -> engine input (``tortoise-bot recommend``).

The document is the pydantic model ``InputDocument`` below; ``docs/schemas/
recommend-input.schema.json`` is generated from it (``tortoise-bot schema``)::

    {"now": ISO8601, "workload": {"kind", "namespace", "name", "environment"?},
     "containers": [{"name", "requests": {"cpu", "memory"}, "limits": {...},
                     "policy": {"cpu", "memory"}, "min_allocated"?, "max_allocated"?,
                     "cpu_samples": [[unix_s, pod, cores]], "memory_samples": [[unix_s, pod, bytes]],
                     "oom_events": [[unix_s, pod, request_bytes]]}],
     "replicas": [[unix_s, count]],
     "hpa": {"min_replicas", "max_replicas", "targets", "behavior"?: {"scale_up"?, "scale_down"?:
             {"stabilization_window_seconds"?, "select_policy"?, "tolerance"?,
              "policies"?: [{"type", "value", "period_seconds"}]}}} | null,
     "emergency"?: {"requested", "previous_phase"},
     "after_revert"?: {"revert", "reverted", "margin"?, "values": [{"container"?, "field", "value"}]},
     "target_changed"?: [...], "settings"?: {...}}

Numbers are taken as they are (no string is read as a number, no boolean as 0 or 1); every
problem raises ``InputError`` whose ``field`` is the JSON path (``containers[0].cpu_samples[3]``).
Pure: the caller reads the file and parses the JSON.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Annotated, Any

import numpy as np
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic.json_schema import WithJsonSchema
from pydantic_core import PydanticCustomError

from bot.clock import now_outside_history
from bot.model import (
    DEFAULT_BEHAVIOR,
    MAX_PERIOD_S,
    MAX_WINDOW_S,
    RESOURCES,
    ContainerHistory,
    DeclaredHPA,
    EmergencyPhase,
    FieldId,
    HpaBehavior,
    HpaTarget,
    Policy,
    Resource,
    ResourceValues,
    ScalingPolicy,
    ScalingPolicyType,
    ScalingRules,
    SelectPolicy,
    WorkloadHistory,
    WorkloadRef,
)
from bot.recommend.errors import InputError
from bot.recommend.inputs import (
    AfterRevert,
    ContainerInput,
    EmergencyState,
    WorkloadInput,
    default_policy,
)

SCHEMA_FILE = "recommend-input.schema.json"
"""The generated JSON Schema's file name in ``docs/schemas/``."""


def _unix_s(value: Any) -> float:
    """ISO 8601 (naive means UTC) or unix seconds -> unix seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str) or not value:
        raise PydanticCustomError("time", "expected an ISO 8601 time or unix seconds")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise PydanticCustomError(
            "time", "not an ISO 8601 time: {text}", {"text": repr(value)}
        ) from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


Amount = Annotated[float, Field(ge=0, allow_inf_nan=False, strict=True)]
"""A finite number >= 0: cores, bytes, unix seconds of a sample, a replica count."""
Count = Annotated[int, Field(ge=0, strict=True)]
"""A whole number >= 0."""
Name = Annotated[str, Field(min_length=1, strict=True)]
"""A non-empty string."""
Instant = Annotated[
    float,
    BeforeValidator(_unix_s),
    WithJsonSchema(
        {
            "description": "ISO 8601 (naive means UTC) or unix seconds.",
            "type": ["string", "number"],
        }
    ),
]
"""A time: ISO 8601 text or unix seconds, read as unix seconds."""
Sample = tuple[Amount, Name, Amount]
"""``[unix_s, pod name, value]``."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class Values(_Strict):
    """Requests, limits or allocation bounds: CPU in cores, memory in bytes (null = unset)."""

    cpu: Amount | None = None
    memory: Amount | None = None

    def resource_values(self) -> ResourceValues:
        """As the engine reads them (memory in whole bytes)."""
        return ResourceValues(self.cpu, int(self.memory) if self.memory is not None else None)


class Policies(_Strict):
    """The policy per resource; absent: the default (`inputs.default_policy`)."""

    cpu: Policy | None = None
    memory: Policy | None = None


class Container(_Strict):
    """One container: what it declares and how it ran."""

    name: Name
    requests: Values | None = None
    limits: Values | None = None
    policy: Policies = Policies()
    min_allocated: Values | None = None
    max_allocated: Values | None = None
    cpu_samples: list[Sample] | None = None
    """CPU usage in cores: `[unix_s, pod, cores]`."""
    memory_samples: list[Sample] | None = None
    """Working set in bytes: `[unix_s, pod, bytes]`."""
    oom_events: list[Sample] | None = None
    """OOM kills with the memory request in force: `[unix_s, pod, request_bytes]`."""


class Workload(_Strict):
    """Which workload the history is of."""

    kind: Name
    namespace: Name
    name: Name
    environment: Name = "default"


class Target(_Strict):
    """One HPA resource target."""

    container: Name | None = None
    """null or absent: a pod-level Resource metric."""
    resource: Resource
    utilization: Count


class ScalingPolicyInput(_Strict):
    """One `behavior.scaleUp|scaleDown.policies` item: at most `value` pods (`Pods`) or
    percent of the replicas (`Percent`) added or removed per `period_seconds`."""

    type: ScalingPolicyType
    value: Annotated[int, Field(ge=1, le=2**31 - 1, strict=True)]
    period_seconds: Annotated[int, Field(ge=1, le=MAX_PERIOD_S, strict=True)]


class ScalingRulesInput(_Strict):
    """One direction of the HPA's `spec.behavior`; a field left out keeps the Kubernetes
    default (a list of policies given replaces the default list whole)."""

    stabilization_window_seconds: (
        Annotated[int, Field(ge=0, le=MAX_WINDOW_S, strict=True)] | None
    ) = None
    select_policy: SelectPolicy | None = None
    policies: Annotated[list[ScalingPolicyInput], Field(min_length=1)] | None = None
    tolerance: Annotated[float, Field(ge=0, allow_inf_nan=False, strict=True)] | None = None
    """No change while the usage ratio is within it (alpha in Kubernetes 1.33)."""

    def rules(self, default: ScalingRules) -> ScalingRules:
        """These rules over ``default``."""
        out = default
        if self.stabilization_window_seconds is not None:
            out = replace(out, stabilization_s=self.stabilization_window_seconds)
        if self.select_policy is not None:
            out = replace(out, select=self.select_policy)
        if self.policies is not None:
            out = replace(
                out,
                policies=tuple(
                    ScalingPolicy(p.type, p.value, p.period_seconds) for p in self.policies
                ),
            )
        if self.tolerance is not None:
            out = replace(out, tolerance=self.tolerance)
        return out


class Behavior(_Strict):
    """The HPA's `spec.behavior` (what the replay of its controller uses); absent: the
    Kubernetes defaults."""

    scale_up: ScalingRulesInput | None = None
    scale_down: ScalingRulesInput | None = None

    def behavior(self) -> HpaBehavior:
        """As the engine reads it, the defaults filled in."""
        up, down = DEFAULT_BEHAVIOR.scale_up, DEFAULT_BEHAVIOR.scale_down
        return HpaBehavior(
            self.scale_up.rules(up) if self.scale_up else up,
            self.scale_down.rules(down) if self.scale_down else down,
        )


class Hpa(_Strict):
    """The HorizontalPodAutoscaler as declared."""

    name: Name = "hpa"
    min_replicas: Count | None = None
    max_replicas: Count
    targets: list[Target] = []
    behavior: Behavior | None = None
    """`spec.behavior`, as `DeclaredHPA.behavior` holds it; absent: the defaults."""


class Emergency(_Strict):
    """The emergency the repository asks for now, and the phase the last proposal left."""

    requested: Annotated[bool, Field(strict=True)] = False
    previous_phase: EmergencyPhase = "normal"


class RevertedField(_Strict):
    """One field a merged revert restored, and the value the reverted pull request had set."""

    container: Name | None = None
    """null or absent: the replica bounds, or a pod-level Resource target."""
    field: FieldId
    """A request, a limit, a replica bound or an HPA target (the fields the rule bounds)."""
    value: Amount
    """Cores, bytes, replicas or percent."""

    @model_validator(mode="after")
    def _bounded_field(self) -> RevertedField:
        """A field the rule bounds; a request or limit names its container, a replica bound
        names none."""
        if not (self.field.is_request_or_limit or self.field.is_hpa):
            raise PydanticCustomError(
                "field", "not a field the rule bounds: {f}", {"f": self.field}
            )
        if self.field.is_request_or_limit and self.container is None:
            raise PydanticCustomError("container", "a request or limit names its container")
        if not self.field.is_request_or_limit and not self.field.is_hpa_target and self.container:
            raise PydanticCustomError("container", "a replica bound names no container")
        return self


class AfterRevertInput(_Strict):
    """A merged revert of the workload's values (rule `after_revert.floor`): the next proposal
    for a restored field is at least `value × (1 + margin)`, an HPA target at most
    `value × (1 − margin)`."""

    revert: Annotated[int, Field(ge=1, strict=True)]
    """The merged revert pull request's number."""
    reverted: Annotated[int, Field(ge=1, strict=True)]
    """The number of the pull request whose outcome regressed."""
    margin: Annotated[float, Field(ge=0, le=1, strict=True)] = 0.2
    """`verify.after_revert_margin`."""
    values: Annotated[list[RevertedField], Field(min_length=1)]

    def engine_input(self) -> AfterRevert:
        """As the engine reads it."""
        return AfterRevert(
            self.revert,
            self.reverted,
            {(v.container, v.field): v.value for v in self.values},
            self.margin,
        )


class TargetChanged(_Strict):
    """When one HPA target last changed."""

    container: Name
    resource: Resource
    at: Instant


class InputDocument(_Strict):
    """One workload's history: what `tortoise-bot recommend` reads. CPU in cores, memory in
    bytes, times in unix seconds (or ISO 8601 where stated)."""

    model_config = ConfigDict(
        title="tortoise-bot recommend --input",
        json_schema_extra={
            "$id": "https://github.com/tortoise-bot/tortoise-bot/docs/schemas/" + SCHEMA_FILE
        },
    )

    now: Instant
    """The time the recommendation is made for."""
    workload: Workload
    containers: Annotated[list[Container], Field(min_length=1)]
    replicas: list[tuple[Amount, Amount]] = []
    """Desired replicas over time: `[unix_s, count]`."""
    hpa: Hpa | None = None
    emergency: Emergency = Emergency()
    after_revert: AfterRevertInput | None = None
    target_changed: list[TargetChanged] = []
    excluded_intervals: list[tuple[Instant, Instant]] = []
    """Periods dropped from the history (crash loops, emergency windows): `[start, end)`."""
    settings: dict[str, Any] = {}
    """Overrides of the recommend settings: the same keys as the `recommend` section of the
    config (config/bot.schema.json, RecommendSettings)."""


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed input document: the engine input, ``now`` and the settings overrides."""

    input: WorkloadInput
    now_s: float
    settings: Mapping[str, Any]


def _path(loc: Sequence[int | str]) -> str:
    """A pydantic location as a JSON path: ``containers[0].cpu_samples[3]``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f"{'.' if out else ''}{part}"
    return out or "<root>"


def _series(
    rows: list[Sample] | None, pods: dict[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Times, pod indices (numbered in order of first appearance) and values of ``rows``."""
    rows = rows or []
    t = np.array([row[0] for row in rows], dtype=np.float64)
    pod = np.array([pods.setdefault(row[1], len(pods)) for row in rows], dtype=np.int32)
    v = np.array([row[2] for row in rows], dtype=np.float64)
    return t, pod, v


def _hpa(hpa: Hpa | None) -> DeclaredHPA | None:
    if hpa is None:
        return None
    targets = tuple(HpaTarget(t.resource, t.utilization, t.container) for t in hpa.targets)
    return DeclaredHPA(
        hpa.name,
        hpa.min_replicas,
        hpa.max_replicas,
        targets,
        behavior=hpa.behavior.behavior() if hpa.behavior is not None else DEFAULT_BEHAVIOR,
    )


def parse_document(data: Any) -> Document:
    """Validate and convert a decoded JSON document (see module doc)."""
    try:
        doc = InputDocument.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise InputError(error["msg"], _path(error["loc"])) from exc
    wl = doc.workload
    ref = WorkloadRef(wl.kind, wl.namespace, wl.name, wl.environment)
    hpa = _hpa(doc.hpa)
    pods: dict[str, int] = {}
    containers: list[ContainerInput] = []
    histories: dict[str, ContainerHistory] = {}
    for i, c in enumerate(doc.containers):
        if c.name in histories:
            raise InputError(f"duplicate container name {c.name!r}", f"containers[{i}].name")
        requests = c.requests.resource_values() if c.requests else ResourceValues()
        chosen: dict[Resource, Policy] = {}
        for resource in RESOURCES:
            request = requests.get(resource)
            value = c.policy.cpu if resource == "cpu" else c.policy.memory
            chosen[resource] = (
                "off" if not request else value or default_policy(c.name, resource, request, hpa)
            )
        cpu = _series(c.cpu_samples, pods)
        mem = _series(c.memory_samples, pods)
        oom = _series(c.oom_events, pods)
        histories[c.name] = ContainerHistory(c.name, *cpu, *mem, *oom)
        containers.append(
            ContainerInput(
                c.name,
                requests,
                c.limits.resource_values() if c.limits else ResourceValues(),
                chosen["cpu"],
                chosen["memory"],
                c.min_allocated.resource_values() if c.min_allocated else ResourceValues(),
                c.max_allocated.resource_values() if c.max_allocated else ResourceValues(),
            )
        )
    rt = np.array([row[0] for row in doc.replicas], dtype=np.float64)
    rv = np.array([row[1] for row in doc.replicas], dtype=np.float64)
    changed = {(entry.container, entry.resource): entry.at for entry in doc.target_changed}
    arrays = [rt, *(a for h in histories.values() for a in (h.cpu_t, h.mem_t, h.oom_t))]
    times = [t for t in arrays if t.size]
    if times:
        first, last = min(float(t.min()) for t in times), max(float(t.max()) for t in times)
        outside = now_outside_history(doc.now, first, last)
        if outside is not None:
            raise InputError(outside, "now")
    starts = [float(h.cpu_t.min()) for h in histories.values() if h.cpu_t.size]
    history = WorkloadHistory(
        ref,
        min(starts) if starts else doc.now,
        doc.now,
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
        emergency=EmergencyState(doc.emergency.requested, doc.emergency.previous_phase),
        after_revert=doc.after_revert.engine_input() if doc.after_revert else None,
        target_changed_s=changed,
        excluded_intervals_s=tuple(doc.excluded_intervals),
    )
    return Document(inp, doc.now, doc.settings)
