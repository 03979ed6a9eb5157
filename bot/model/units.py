"""Units, kinds and the fields the bot writes: resource and policy names, array types, unit
constants (``MIB``, ``SECONDS_PER_DAY``), the container wildcards and ``FieldId``."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final, Literal, TypeAlias, get_args

import numpy as np
import numpy.typing as npt

Resource: TypeAlias = Literal["cpu", "memory"]
"""A container resource the bot manages."""

RESOURCES: tuple[Resource, ...] = ("cpu", "memory")

Policy: TypeAlias = Literal["horizontal", "vertical", "off"]
"""How one container resource is scaled (Tortoise's ``autoscalingPolicy``)."""

Status: TypeAlias = Literal["changes", "no-change", "gathering-data", "skipped", "error"]
"""The outcome for one workload."""

WorkloadKind: TypeAlias = Literal[
    "Deployment", "StatefulSet", "DaemonSet", "Rollout", "CronJob", "Job"
]
"""Kinds the bot right-sizes; ``Rollout`` is Argo Rollouts' (``argoproj.io/v1alpha1``),
``CronJob`` and ``Job`` are ``batch/v1``'s."""

FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.int32]

MIB = 1024**2
"""Bytes in one MiB."""
GIB = 1024**3
"""Bytes in one GiB."""
SECONDS_PER_HOUR = 3600
"""Seconds in one hour."""
HOURS_PER_WEEK = 168
"""Hours in one week: the slots of a per-hour profile (hour of the week, Sunday 00 first)."""
SECONDS_PER_DAY = 86_400
"""Seconds in one day."""

DEFAULT_ENVIRONMENT = "default"
"""The environment of raw YAML outside any kustomization, and of a repo with no mapping."""

POD_LEVEL: Final = "*"
"""Container name of a pod-level ``Resource`` HPA target (its ``FieldChange.container`` is
None; a change id writes it ``-``)."""

ANY_CONTAINER: Final = "*"
"""Container name that stands for every container: a VerticalPodAutoscaler's
``containerPolicies[].containerName`` (also its default) and the opt-in file's ``min_allocated``
/ ``max_allocated`` keys; a named container's entry wins over it."""

REMOVE_METRIC: Final = "tortoise.target.remove_metric"
"""Rule of a per-container HPA target proposed as None: its ``ContainerResource`` metric is
removed (upstream ``tortoise.target.remove_metric``)."""

EmergencyPhase: TypeAlias = Literal["normal", "emergency", "back-to-normal"]
"""Tortoise's emergency phase a proposal leaves a workload in (``pkg/hpa/service.go``)."""

EMERGENCY_PHASES: tuple[EmergencyPhase, ...] = get_args(EmergencyPhase)


def emergency_phase(text: object) -> EmergencyPhase:
    """The phase named by ``text`` as read from a pull-request state; anything else is
    ``normal``."""
    for phase in EMERGENCY_PHASES:
        if text == phase:
            return phase
    return "normal"


class FieldId(StrEnum):
    """A value the bot writes: a container's request or limit, the HPA's replica bounds, or a
    per-container (or pod-level) HPA target utilisation.

    ``replicas`` is the workload's own ``spec.replicas`` (set by hand only). A ``str`` whose text (``.text``) is the one shown and stored (``requests.cpu``,
    ``hpa.target.memory``); code asks the member (``.resource``, ``.is_hpa_target``), never
    the text.
    """

    REQUESTS_CPU = "requests.cpu"
    REQUESTS_MEMORY = "requests.memory"
    LIMITS_CPU = "limits.cpu"
    LIMITS_MEMORY = "limits.memory"
    REPLICAS = "replicas"
    HPA_MIN_REPLICAS = "hpa.minReplicas"
    HPA_MAX_REPLICAS = "hpa.maxReplicas"
    HPA_TARGET_CPU = "hpa.target.cpu"
    HPA_TARGET_MEMORY = "hpa.target.memory"
    KEDA_TRIGGERS = "keda.triggers"  # KEDA cron triggers to append (FieldChange.triggers)

    @property
    def text(self) -> str:
        """The field's name as shown in reports and stored in pull-request states."""
        return self.value

    @property
    def resource(self) -> Resource | None:
        """The container resource of a request, limit or HPA target; None for replicas."""
        return _FIELD_RESOURCE.get(self)

    @property
    def is_hpa_target(self) -> bool:
        return self in (FieldId.HPA_TARGET_CPU, FieldId.HPA_TARGET_MEMORY)

    @property
    def is_hpa(self) -> bool:
        """A field of the workload's HorizontalPodAutoscaler (replica bounds or a target)."""
        return self.is_hpa_target or self in (FieldId.HPA_MIN_REPLICAS, FieldId.HPA_MAX_REPLICAS)

    @property
    def is_request(self) -> bool:
        return self in _REQUEST_FIELDS

    @property
    def is_limit(self) -> bool:
        return self in _LIMIT_FIELDS

    @property
    def is_request_or_limit(self) -> bool:
        return self.is_request or self.is_limit

    @staticmethod
    def request(resource: Resource) -> FieldId:
        return _REQUEST_FIELDS[RESOURCES.index(resource)]

    @staticmethod
    def limit(resource: Resource) -> FieldId:
        return _LIMIT_FIELDS[RESOURCES.index(resource)]

    @staticmethod
    def hpa_target(resource: Resource) -> FieldId:
        return _TARGET_FIELDS[RESOURCES.index(resource)]

    @staticmethod
    def parse(text: str) -> FieldId | None:
        """The field named ``text`` (read from outside the process), None when unknown."""
        try:
            return FieldId(text)
        except ValueError:
            return None


_REQUEST_FIELDS = (FieldId.REQUESTS_CPU, FieldId.REQUESTS_MEMORY)
_LIMIT_FIELDS = (FieldId.LIMITS_CPU, FieldId.LIMITS_MEMORY)
_TARGET_FIELDS = (FieldId.HPA_TARGET_CPU, FieldId.HPA_TARGET_MEMORY)
_FIELD_RESOURCE: Mapping[FieldId, Resource] = {
    f: r
    for group in (_REQUEST_FIELDS, _LIMIT_FIELDS, _TARGET_FIELDS)
    for f, r in zip(group, RESOURCES, strict=True)
}

Number: TypeAlias = float | int
"""A value of any unit: a count, a share, cores or bytes."""
