"""Recommendation settings: Tortoise's global admin config plus the per-workload knobs.

One declaration of every key, its default, bounds and meaning. The engine (``bot.recommend``)
receives a resolved ``RecommendSettings``; the bot config sets admin defaults, the repository's
``.tortoise-bot.yaml`` and per-workload overrides refine them (``resolve``).

Defaults are the upstream ones: ``admin`` mirrors mercari/tortoise ``pkg/config/config.go``
(``defaultConfig``) with snake_case keys and units in the names; ``vpa`` mirrors the VPA
recommender flags (``vertical-pod-autoscaler/pkg/recommender/config/config.go``); ``noise`` and
``hvpa`` mirror gardener/hvpa-controller (``api/v1alpha1/hvpa_types.go``). Where the bot adds a
knob upstream lacks, the default reproduces upstream behaviour and the description says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from bot.config.base import ConfigModel
from bot.config.jobs import JobSettings
from bot.config.keda import KedaSettings
from bot.config.replay_rules import (
    ForecastSettings,
    ReplaySettings,
    ReplicaRules,
    RightSizingSettings,
)
from bot.model import GIB, MIB


class AdminSettings(ConfigModel):
    """Tortoise's global config (``pkg/config/config.go``, ``defaultConfig``), snake_case keys."""

    range_of_min_max_replicas_recommendation_hours: int = Field(
        1, ge=1, le=24, description="Width of one replica time slot in hours; must divide 24."
    )
    gathering_data_period_type: Literal["daily", "weekly"] = Field(
        "weekly", description="Replica slots per hour of the week (weekly) or of the day (daily)."
    )
    max_replicas_recommendation_multiplier: float = Field(
        2.0, gt=0, description="maxReplicas candidate = ceil(replicas × this) per slot."
    )
    min_replicas_recommendation_multiplier: float = Field(
        0.5, gt=0, description="minReplicas candidate = ceil(replicas × this) per slot."
    )
    replica_reduction_factor: float = Field(
        0.95, gt=0, lt=1, description="Leaving emergency: minReplicas ← trunc(minReplicas × this)."
    )
    maximum_target_resource_utilization: int = Field(
        90, ge=1, le=100, description="Upper clamp of a recommended HPA target (percent)."
    )
    minimum_target_resource_utilization: int = Field(
        65, ge=1, le=100, description="Lower clamp of a recommended HPA target (percent)."
    )
    minimum_min_replicas: int = Field(3, ge=1, description="Floor of recommended minReplicas.")
    maximum_min_replicas: int = Field(10, ge=1, description="Ceiling on applied minReplicas.")
    preferred_max_replicas: int = Field(
        30, ge=1, description="Above this replica count bigger Pods are preferred."
    )
    maximum_max_replicas: int = Field(100, ge=1, description="Hard ceiling on maxReplicas.")
    maximum_cpu_request_cores: float = Field(
        10.0, gt=0, description="Ceiling on any CPU request the bot proposes (cores)."
    )
    maximum_memory_request_bytes: int = Field(
        10 * GIB, gt=0, description="Ceiling on any memory request the bot proposes (bytes)."
    )
    minimum_cpu_request_cores: float = Field(
        0.01,
        ge=0,
        description="Floor on CPU requests (cores); upstream 0.05 (50m, MinimumCPURequest), "
        "which keeps a 20m exporter at 2.5 × its use.",
    )
    minimum_cpu_request_per_container_cores: dict[str, float] = Field(
        default_factory=dict,
        description="Per container name CPU floor; replaces the global floor for that name.",
    )
    minimum_memory_request_bytes: int = Field(
        50 * MIB, ge=0, description="Floor on memory requests (bytes)."
    )
    minimum_memory_request_per_container_bytes: dict[str, int] = Field(
        default_factory=dict,
        description="Per container name memory floor; replaces the global floor for that name.",
    )
    buffer_ratio_on_vertical_resource: float = Field(
        0.1, ge=0, description="Headroom on the VPA value for vertical resources."
    )
    max_allowed_scaling_down_ratio: float = Field(
        0.8,
        ge=0,
        le=1,
        description="A new request is never below trunc(old × this): at most a 20 % cut per "
        "proposal by default (0 disables the step limit).",
    )
    minimum_cpu_limit_cores: float = Field(
        0.0, ge=0, description="Floor on a CPU limit the bot rescales (cores)."
    )
    resource_limit_multiplier: dict[Literal["cpu", "memory"], int] = Field(
        default_factory=dict, description="Minimum limit/request ratio per resource (>= 1)."
    )
    time_zone: str = Field("Asia/Tokyo", description="IANA time zone of the replica time slots.")
    hpa_target_utilization_max_increase: int = Field(
        5, ge=1, le=100, description="Largest increase of one HPA target per proposal (points)."
    )
    hpa_target_utilization_update_interval_s: float = Field(
        86400.0, ge=0, description="Minimum time between two changes of one HPA target."
    )
    emergency_mode_grace_period_s: float = Field(
        300.0, ge=0, description="Upstream automatic-emergency grace period (kept for parity)."
    )
    tortoise_update_interval_s: float = Field(
        15.0, gt=0, description="Upstream reconcile period; sets the back-to-normal speed."
    )
    hpa_external_metric_exclusion_regex: str = Field(
        "",
        description="External HPA metrics whose name matches are dropped when the HPA is "
        "written (upstream HPAExternalMetricExclusionRegex; empty: none).",
    )
    default_hpa_behavior: dict[str, Any] | None = Field(
        None, description="HPA behavior for HPAs the bot writes without one (upstream default)."
    )
    istio_sidecar_proxy_default_cpu_cores: float = Field(
        0.1, ge=0, description="Assumed istio-proxy CPU request without the proxyCPU annotation."
    )
    istio_sidecar_proxy_default_memory_bytes: int = Field(
        200 * MIB, ge=0, description="Assumed istio-proxy memory request without proxyMemory."
    )
    global_disable_mode: bool = Field(
        False, description="Compute and report everything, propose no pull request."
    )
    excluded_namespaces: tuple[str, ...] = Field(
        (), description="Namespaces treated as global_disable_mode."
    )
    vertical_scaling_based_on_preferred_max_replicas: bool = Field(
        False,
        description="Alpha flag: grow horizontal requests ×1.3 per proposal while replicas "
        "stay at PreferredMaxReplicas (upstream default off).",
    )

    @model_validator(mode="after")
    def _check(self) -> AdminSettings:
        """The cross-field checks of upstream ``validate`` (plus slot width dividing 24)."""
        hours = self.range_of_min_max_replicas_recommendation_hours
        if 24 % hours:
            raise ValueError(
                f"range_of_min_max_replicas_recommendation_hours={hours}: must divide 24"
            )
        if not self.minimum_min_replicas < self.maximum_min_replicas <= self.maximum_max_replicas:
            raise ValueError(
                "need minimum_min_replicas < maximum_min_replicas <= maximum_max_replicas"
            )
        if not self.minimum_min_replicas < self.preferred_max_replicas < self.maximum_max_replicas:
            raise ValueError(
                "need minimum_min_replicas < preferred_max_replicas < maximum_max_replicas"
            )
        if self.minimum_target_resource_utilization > self.maximum_target_resource_utilization:
            raise ValueError(
                "need minimum_target_resource_utilization <= maximum_target_resource_utilization"
            )
        for resource, value in self.resource_limit_multiplier.items():
            if value < 1:
                raise ValueError(f"resource_limit_multiplier.{resource}={value}: must be >= 1")
        return self


class VpaSettings(ConfigModel):
    """The VPA recommender's knobs (``recommender/config/config.go``), per workload if wanted."""

    cpu_target_percentile: float = Field(0.9, ge=0, le=1, description="Target CPU percentile.")
    cpu_lower_bound_percentile: float = Field(0.5, ge=0, le=1, description="Lower bound, CPU.")
    cpu_upper_bound_percentile: float = Field(0.95, ge=0, le=1, description="Upper bound, CPU.")
    memory_target_percentile: float = Field(0.9, ge=0, le=1, description="Target memory pct.")
    memory_lower_bound_percentile: float = Field(0.5, ge=0, le=1, description="Lower, memory.")
    memory_upper_bound_percentile: float = Field(0.95, ge=0, le=1, description="Upper, memory.")
    margin_fraction: float = Field(0.15, ge=0, description="Safety margin added to every bound.")
    pod_min_cpu_cores: float = Field(
        0.025, ge=0, description="Per-pod CPU minimum, split across containers."
    )
    pod_min_memory_bytes: int = Field(
        250 * MIB, ge=0, description="Per-pod memory minimum, split across containers."
    )
    cpu_half_life_s: float = Field(86400.0, gt=0, description="CPU histogram decay half-life.")
    memory_half_life_s: float = Field(86400.0, gt=0, description="Memory histogram half-life.")
    memory_aggregation_interval_s: float = Field(
        86400.0, gt=0, description="One memory peak per pod per interval."
    )
    confidence_interval_s: float = Field(
        86400.0, gt=0, description="History length for confidence 1."
    )
    confidence_per_minute: bool = Field(
        False,
        description="Count each CPU sample as (sampling step / 1 min) samples for confidence, "
        "as if metrics-server had sampled every minute (upstream: off; Prometheus steps of "
        "5 min otherwise inflate the upper bound).",
    )
    oom_bump_up_ratio: float = Field(1.2, ge=1, description="Memory × this after an OOM kill.")
    oom_min_bump_up_bytes: int = Field(
        100 * MIB, ge=0, description="At least this many bytes more after an OOM kill."
    )
    max_allowed_cpu_cores: float | None = Field(
        None, gt=0, description="Global cap on the CPU estimate (cores); unset = none."
    )
    max_allowed_memory_bytes: int | None = Field(
        None, gt=0, description="Global cap on the memory estimate (bytes); unset = none."
    )
    sticky_step_s: float = Field(
        21600.0,
        gt=0,
        description="Replay step of Tortoise's sticky maximum of the VPA target (bot choice).",
    )


class ChangeThreshold(ConfigModel):
    """HVPA ``minChange`` for one resource: threshold = min(value, percentage of current)."""

    value: float | None = Field(None, ge=0, description="Cores (cpu) or bytes (memory).")
    percentage: int | None = Field(None, ge=0, description="Percent of the current request.")


class MinChange(ConfigModel):
    """Per-resource ``minChange`` (``hvpa_types.go``); both unset = 200m CPU / 200M memory."""

    cpu: ChangeThreshold = ChangeThreshold()
    memory: ChangeThreshold = ChangeThreshold()


class NoiseSettings(ConfigModel):
    """What keeps small wobbles out of pull requests."""

    scale_up: MinChange = Field(default_factory=MinChange, description="minChange for increases.")
    scale_down: MinChange = Field(default_factory=MinChange, description="minChange for decreases.")
    memory_floor_at_peak: bool = Field(
        True, description="Never propose a memory request below the observed working-set peak."
    )
    oom_immediate_increase: bool = Field(
        True, description="An OOM kill in the window proposes an increase whatever minChange says."
    )
    proportional: bool = Field(
        True,
        description="minChange in proportion: a change is proposed when it moves the request "
        "by at least max(proportional_fraction × current, the floor below) (bot rule "
        "noise.proportional); false: HVPA's minChange from scale_up / scale_down (upstream).",
    )
    proportional_fraction: float = Field(
        0.1, ge=0, le=1, description="Share of the current request a change must move."
    )
    proportional_floor_cpu_cores: float = Field(
        0.01, ge=0, description="Smallest CPU change proposed (cores), whatever the fraction."
    )
    proportional_floor_memory_bytes: int = Field(
        16 * MIB, ge=0, description="Smallest memory change proposed (bytes)."
    )
    risk_minutes: float = Field(
        60.0,
        ge=0,
        description="An increase is never held by minChange when the usage was above the "
        "current request for more than this many container-minutes of the window, or when a "
        "container was OOM-killed.",
    )
    target_min_points: int = Field(
        2,
        ge=0,
        description="An HPA target move smaller than this many points is not proposed (bot "
        "rule noise.target_min_points; 0: upstream, any move).",
    )
    leak_hold_days: float | None = Field(
        None,
        gt=0,
        description="null (default): a leaking container's limit holds its growth until the "
        "pods' observed restart cadence (bot rule oom.leak_cadence); a number: the limit holds "
        "this many days of growth and is never lowered (the former rule oom.leak, 7 before).",
    )
    leak_over_request_share: float | None = Field(
        0.03,
        ge=0,
        lt=1,
        description="A leaking container's memory request is the (1 − this) quantile of the "
        "window's working-set samples, so the working set is above it in at most this share "
        "of the minutes (bot rule oom.leak_quantile); null: the request is kept (oom.leak).",
    )
    vertical_from: Literal["vpa_target", "tortoise_rec"] = Field(
        "vpa_target",
        description="vpa_target: vertical requests follow the VPA's current target (bot rule "
        "vertical.vpa_target; the replay gate checks them against the whole window, weekly "
        "peaks included); tortoise_rec: Tortoise's sticky maximum of the target over the "
        "window (upstream).",
    )
    vertical_buffer: bool = Field(
        False,
        description="true: vertical requests carry Tortoise's buffer "
        "(admin.buffer_ratio_on_vertical_resource) on top of the VPA target, which already "
        "has its 15 % margin (upstream); false: the VPA target alone, the replay gate bounding "
        "the risk (bot rule vertical.no_buffer).",
    )
    vertical_hysteresis: bool = Field(
        False,
        description="true: Tortoise's vertical rule as upstream (scale up to VPA × (1 + b)², "
        "keep while the request is within its hysteresis band, up to ~1.34 × VPA); false: "
        "VPA × (1 + b) whenever minChange lets the move through (bot rule vertical.ideal).",
    )
    step_limit: bool = Field(
        False,
        description="true: at most admin.max_allowed_scaling_down_ratio down per proposal "
        "(upstream); false: decreases are proposed in full, the replay gate bounding their "
        "risk (bot rule noise.full_move).",
    )
    floors_raise: bool = Field(
        False,
        description="true: a floor (VPA pod minimum, Tortoise minimum request) may raise a "
        "request above the current one although usage does not need it (upstream); false: "
        "such a floor keeps the current request (bot rule floor.kept).",
    )
    oom_response: Literal["raise", "bounded", "stacked"] = Field(
        "raise",
        description="raise: after an OOM kill the memory request rises to at least the VPA OOM "
        "bump and is never lowered in that proposal, the limit with it (bot rule oom.raise); "
        "bounded: the bump goes once into the limit of a container whose limit is above its "
        "request, else into the request (max(VPA target, bump) × (1 + buffer)) (bot rules "
        "oom.bounded, oom.limit_bump); under both a leak is not chased (oom.leak_*); stacked: "
        "Tortoise's sticky maximum, its scale-up buffer and the limit ratio on top of each "
        "other (upstream).",
    )
    cpu_step_cores: float = Field(
        0.001, gt=0, description="Proposed CPU requests are rounded up to this step (cores)."
    )
    memory_step_bytes: int = Field(
        MIB, gt=0, description="Proposed memory requests are rounded up to this step (bytes)."
    )


def _default_max_ratio() -> dict[Literal["cpu", "memory"], float | None]:
    return {"cpu": 4.0, "memory": 2.0}


class LimitsSettings(ConfigModel):
    """How limits follow a new request (VPA proportional rule by default)."""

    policy: Literal["keep_ratio", "leave", "drop_cpu_limit", "fixed_headroom"] = Field(
        "keep_ratio",
        description="keep_ratio: upstream proportional limits; leave: untouched; "
        "drop_cpu_limit: remove CPU limits, memory keeps its ratio; "
        "fixed_headroom: limit = request × (1 + headroom) where a limit exists.",
    )
    cpu_headroom_fraction: float = Field(0.5, ge=0, description="fixed_headroom, CPU.")
    memory_headroom_fraction: float = Field(0.2, ge=0, description="fixed_headroom, memory.")
    max_ratio: dict[Literal["cpu", "memory"], float | None] = Field(
        default_factory=_default_max_ratio,
        description="A proposed limit never rises above max(current limit, proposed request × "
        "this, observed peak × peak_margin) (bot rule limits.evidence); null for a resource lets "
        "the ratio rule raise its limit freely (upstream).",
    )
    peak_margin: float = Field(
        1.2, ge=1, description="Margin on the observed peak that a limit may always reach."
    )
    memory_peak_headroom: float = Field(
        0.1,
        ge=0,
        description="A proposed memory limit is never below the observed working-set peak × "
        "(1 + this) (bot rule limits.peak_headroom; a limit equal to its request raises the "
        "request with it); 0: no margin (upstream). 0.1 is two buckets of the VPA memory "
        "histogram (5 % each, the resolution a peak is known to) and half of peak_margin.",
    )
    jvm_non_heap_bytes: int = Field(
        256 * 1024**2,
        ge=0,
        description="A memory limit is never proposed below a container's explicit JVM heap "
        "(-Xmx, -Xms in JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS, JAVA_OPTS, command or args) plus "
        "this: the JVM's non-heap memory (metaspace, thread stacks, code cache, direct "
        "buffers, GC structures) (bot rule runtime.heap).",
    )
    gomemlimit_headroom: float = Field(
        0.1,
        ge=0,
        description="A memory limit is never proposed below GOMEMLIMIT × (1 + this): what the "
        "Go runtime does not count against GOMEMLIMIT (cgo, the binary's own pages) and the "
        "time its GC takes to react (bot rule runtime.heap).",
    )


class WeightInterval(ConfigModel):
    """HVPA ``weightBasedScalingIntervals[]`` entry; ``vpa_weight`` in percent (0.6 = 60 %)."""

    vpa_weight: float = Field(ge=0, le=100, description="Integer percent; a fraction < 1 is ×100.")
    start_replica_count: int = Field(0, ge=0, description="0 = the HPA's minReplicas.")
    last_replica_count: int = Field(0, ge=0, description="0 = the HPA's maxReplicas.")

    @field_validator("vpa_weight")
    @classmethod
    def _percent(cls, value: float) -> float:
        """The seed's fractional form (0.6) is read as 60 %; upstream's integer percent as is."""
        return float(round(value * 100)) if 0 < value < 1 else float(int(value))


class GapParams(ConfigModel):
    """``limitsRequestsGapScaleParams`` for one resource: limit = max(w + value, w + w×pct)."""

    value: float | None = Field(None, ge=0, description="Cores (cpu) or bytes (memory).")
    percentage: int | None = Field(None, ge=0, description="Percent of the request.")


class HvpaSettings(ConfigModel):
    """Gardener HVPA's weight-based blending, used when ``strategy`` is ``hvpa``."""

    weight_based_scaling_intervals: tuple[WeightInterval, ...] = Field(
        (), description="vpaWeight per replica range; first match wins."
    )
    limits_requests_gap_scale_params: dict[Literal["cpu", "memory"], GapParams] = Field(
        default_factory=dict, description="Limit gap per resource; unset = proportional."
    )


class RecommendSettings(ConfigModel):
    """Everything the engine needs besides the data; see ``docs/recommendations.md``."""

    admin: AdminSettings = AdminSettings()
    vpa: VpaSettings = VpaSettings()
    noise: NoiseSettings = NoiseSettings()
    limits: LimitsSettings = LimitsSettings()
    hvpa: HvpaSettings = HvpaSettings()
    right_sizing: RightSizingSettings = RightSizingSettings()
    replay: ReplaySettings = ReplaySettings()
    replicas: ReplicaRules = ReplicaRules()
    forecast: ForecastSettings = ForecastSettings()
    jobs: JobSettings = JobSettings()
    keda: KedaSettings = KedaSettings()
    strategy: Literal["tortoise", "hvpa"] = Field(
        "tortoise", description="tortoise: Tortoise rules; hvpa: HVPA weight-based blending."
    )
    max_replicas: int | None = Field(
        None, ge=1, description="Per-workload ceiling on maxReplicas (Tortoise spec.maxReplicas)."
    )
    min_history_s: float = Field(
        86400.0,
        ge=0,
        description="A container with a shorter CPU history is still gathering data (bot "
        "choice: one VPA confidence interval; upstream proposes from the first sample).",
    )
    back_to_normal_steps_per_run: int = Field(
        1,
        ge=1,
        description="Leaving emergency: reduction steps per proposal (factor^steps); upstream "
        "takes one step per 15 s reconcile.",
    )


def _deep_merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def resolve(base: RecommendSettings, *overrides: Mapping[str, Any]) -> RecommendSettings:
    """``base`` with each override (a partial mapping of the same keys) applied in order."""
    data = base.model_dump(exclude_unset=False)
    for override in overrides:
        data = _deep_merge(data, override)
    return RecommendSettings.model_validate(data)


UPSTREAM_RULES: Mapping[str, Any] = {
    "noise": {
        "proportional": False,
        "target_min_points": 0,
        "vertical_from": "tortoise_rec",
        "vertical_buffer": True,
        "vertical_hysteresis": True,
        "step_limit": True,
        "floors_raise": True,
        "oom_response": "stacked",
        "risk_minutes": float("inf"),
    },
    "limits": {"max_ratio": {"cpu": None, "memory": None}, "memory_peak_headroom": 0.0},
    "admin": {"minimum_cpu_request_cores": 0.05},
    "replicas": {
        "min_replicas": "slots",
        "max_replicas": "slots",
        "target": "upstream",
        "skip_targets_without_effect": False,
        "target_step_points": 0,
        "max_replicas_cut_fraction": 1.0,
    },
    "replay": {"gate": "off", "max_over_request": 1.0},
    "forecast": {"seasonality": "off", "trend": "off"},
}
"""The overrides that turn every bot rule of ``docs/recommendations.md`` §7 back into the
upstream Tortoise/VPA behaviour (the replay is still shown, without findings)."""


def upstream_settings(base: RecommendSettings | None = None) -> RecommendSettings:
    """``base`` (default: the defaults) with every bot rule set back to upstream."""
    return resolve(base or RecommendSettings(), UPSTREAM_RULES)
