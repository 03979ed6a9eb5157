"""What the engine proposes and what is written: explained values, per-resource and HPA
recommendations, the workload's ``Recommendation`` and ``Prediction``, and the changes and
edits made from them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.model.declared import Note, SourceError, WorkloadRef
from bot.model.replay import Backtest, ReplayComparison
from bot.model.units import FieldId, Number, Policy, Resource, Status

# --------------------------------------------------------------------------- recommendation


@dataclass(frozen=True, slots=True)
class Explained:
    """A value with its provenance: ``rule`` (a stable id), one-line ``reason`` and ``inputs``."""

    current: Number | None
    proposed: Number | None
    rule: str
    reason: str
    inputs: Mapping[str, Number | str | None] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.proposed is not None and self.proposed != self.current


@dataclass(frozen=True, slots=True)
class VpaEstimate:
    """The VPA recommender's estimate, in cores or bytes, before rounding to quantities."""

    target: float
    lower_bound: float
    upper_bound: float
    uncapped_target: float
    confidence: float


@dataclass(frozen=True, slots=True)
class Usage:
    """Observed usage percentiles over the window, in cores or bytes."""

    p50: float
    p90: float
    p99: float
    max: float
    samples: int = 0


@dataclass(frozen=True, slots=True)
class ResourceRecommendation:
    """Request and limit of one container resource, each explained."""

    resource: Resource
    policy: Policy
    request: Explained
    limit: Explained
    usage: Usage | None = None
    vpa: VpaEstimate | None = None


@dataclass(frozen=True, slots=True)
class ContainerRecommendation:
    name: str
    cpu: ResourceRecommendation
    memory: ResourceRecommendation

    def resource(self, resource: Resource) -> ResourceRecommendation:
        return self.cpu if resource == "cpu" else self.memory


@dataclass(frozen=True, slots=True)
class HpaTargetRecommendation:
    """Target utilisation (percent) of one ``ContainerResource`` metric."""

    container: str
    resource: Resource
    value: Explained


@dataclass(frozen=True, slots=True)
class HpaRecommendation:
    min_replicas: Explained
    max_replicas: Explained
    targets: tuple[HpaTargetRecommendation, ...] = ()
    slots: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Per time slot (e.g. ``Mon 09``) the (minReplicas, maxReplicas) the slot asks for."""


@dataclass(frozen=True, slots=True)
class Recommendation:
    """What the engine proposes for one workload.

    ``replay``: the current and proposed values replayed on the history (None when there was
    nothing to replay: no change, too little data, an error). ``backtest``: the same engine one
    horizon ago scored on the days since (None with ``replay.backtest: off`` or too little data).
    """

    ref: WorkloadRef
    status: Status
    reasons: tuple[str, ...] = ()
    containers: tuple[ContainerRecommendation, ...] = ()
    hpa: HpaRecommendation | None = None
    notes: tuple[Note, ...] = ()
    replay: ReplayComparison | None = None
    backtest: Backtest | None = None
    keda_triggers: tuple[tuple[tuple[str, str], ...], ...] = ()  # cron metadata to append


@dataclass(frozen=True, slots=True)
class Prediction:
    """What a proposal predicted for its workload, kept in its pull request's state so the
    outcome after the merge can be compared with it (``docs/pull-requests.md``, verification).

    From the replay of the proposed values: per container the share of CPU minutes over the
    request (``cpu_share``) and over the CPU limit (``throttle_share``, containers with a limit
    only), the OOM kills and the capacity-shortfall minutes at maxReplicas (None without an
    HPA) over ``window_days``; from the backtest, per container, the share over this proposal's
    request on the days the backtest scored (``backtest_share``; empty without one).
    """

    window_days: float
    cpu_share: Mapping[str, float] = field(default_factory=dict)
    throttle_share: Mapping[str, float] = field(default_factory=dict)
    oom_kills: int = 0
    shortfall_minutes: float | None = None
    backtest_share: Mapping[str, float] = field(default_factory=dict)


# --------------------------------------------------------------------------- changes and edits


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One value to write.

    ``field`` is ``requests.cpu``, ``requests.memory``, ``limits.cpu``, ``limits.memory``
    (with ``container`` set), ``hpa.minReplicas``, ``hpa.maxReplicas``, or ``hpa.target.cpu`` /
    ``hpa.target.memory`` (with ``container`` set; percent), or ``keda.triggers`` (the KEDA
    ``cron`` triggers to append, each one's metadata in ``triggers``; ``proposed`` their
    count). ``proposed`` None removes the field
    (e.g. dropping a CPU limit). Values are cores, bytes, replicas or percent.
    """

    ref: WorkloadRef
    field: FieldId
    proposed: Number | None
    current: Number | None = None
    container: str | None = None
    reason: str = ""
    triggers: tuple[tuple[tuple[str, str], ...], ...] = ()  # keda.triggers: each metadata


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """The changes one pull request carries; ``key`` names its branch (see forge.branches)."""

    key: str
    changes: tuple[FieldChange, ...]
    recommendations: tuple[Recommendation, ...] = ()


@dataclass(frozen=True, slots=True)
class FileChange:
    """A file the editor changed: repository-relative path, bytes before and after."""

    path: str
    old: bytes
    new: bytes


@dataclass(frozen=True, slots=True)
class SkippedChange:
    """A change the editor left out, and why (its value lives only in a file that renders of
    other environments read, and the environment has no file of its own to hold it)."""

    change: FieldChange
    reason: str


@dataclass(frozen=True, slots=True)
class EditResult:
    """What an edit did: changed files, unified diff, and problems per workload."""

    files: tuple[FileChange, ...] = ()
    diff: str = ""
    notes: tuple[Note, ...] = ()
    errors: tuple[SourceError, ...] = ()
    failed: tuple[WorkloadRef, ...] = ()
    """Workloads whose edits were refused or failed verification (nothing written for them)."""
    skipped: tuple[SkippedChange, ...] = ()
    """Changes left out while the rest of their workload's changes were written."""
