"""Rule ids: the stable id every recommended value carries (``Explained.rule``), as one typed set.

``Rule`` holds the rules of the engine (Tortoise's, the folding's, the noise control's, the
replay's and its gate's) and the id of a value the engine did not compute; ``LimitRule``
(``bot.recommend.vpa.limits``) holds the limit rules of the VPA's admission part, which knows
nothing of the others. ``RULE_IDS`` is both. Members are ``StrEnum`` members: each is its id
text wherever it is written (JSON, Markdown, the terminal) and equal to it. What each rule does,
the setting that selects it and whether it departs from upstream Tortoise or VPA:
``docs/recommendations.md``, section 10.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TypeAlias

from bot.model import REMOVE_METRIC
from bot.recommend.vpa.limits import LimitRule


class Rule(StrEnum):
    """A rule of the engine (``RULE_IDS`` for every rule id)."""

    # Requests: Tortoise's vertical and horizontal rules, the bot's vertical rule
    TORTOISE_HORIZONTAL_AT_MINIMUM = "tortoise.horizontal.at_minimum"
    TORTOISE_HORIZONTAL_CLOSE_TO_PREFERRED_MAX = "tortoise.horizontal.close_to_preferred_max"
    TORTOISE_HORIZONTAL_GROW_AT_PREFERRED_MAX = "tortoise.horizontal.grow_at_preferred_max"
    TORTOISE_HORIZONTAL_KEEP = "tortoise.horizontal.keep"
    TORTOISE_HORIZONTAL_REBALANCE = "tortoise.horizontal.rebalance"
    TORTOISE_REQUEST_MAX = "tortoise.request.max"
    TORTOISE_REQUEST_MIN = "tortoise.request.min"
    TORTOISE_REQUEST_STEP_DOWN = "tortoise.request.step_down"
    TORTOISE_VERTICAL_DOWN = "tortoise.vertical.down"
    TORTOISE_VERTICAL_KEEP = "tortoise.vertical.keep"
    TORTOISE_VERTICAL_UP = "tortoise.vertical.up"
    VERTICAL_IDEAL = "vertical.ideal"
    # The coming cycle: the vertical CPU value lifted for the weekly cycle and a trend
    FORECAST_CYCLE = "forecast.cycle"
    FORECAST_TREND = "forecast.trend"
    # Folding: policy, emergency, HVPA blend, OOM response, floors
    FLOOR_KEPT = "floor.kept"
    FLOOR_USAGE = "floor.usage"
    HVPA_LIMITS_GAP = "hvpa.limits_gap"
    HVPA_WEIGHTED = "hvpa.weighted"
    OOM_BOUNDED = "oom.bounded"
    OOM_BUMP = "oom.bump"
    OOM_LEAK = "oom.leak"
    OOM_LEAK_CADENCE = "oom.leak_cadence"
    OOM_LEAK_QUANTILE = "oom.leak_quantile"
    OOM_LIMIT_BUMP = "oom.limit_bump"
    OOM_RAISE = "oom.raise"
    POLICY_HORIZONTAL_WITHOUT_HPA = "policy.horizontal_without_hpa"
    POLICY_OFF = "policy.off"
    POLICY_ADD_MISSING = "policy.add_missing"
    POLICY_VPA_MANAGED = "policy.vpa_managed"
    LIMITS_POD_LIMITS = "limits.pod_limits"
    TORTOISE_BACK_TO_NORMAL_DONE = "tortoise.back_to_normal.done"
    TORTOISE_BACK_TO_NORMAL_STEP = "tortoise.back_to_normal.step"
    TORTOISE_EMERGENCY = "tortoise.emergency"
    TORTOISE_EMERGENCY_FROZEN = "tortoise.emergency.frozen"
    # Node capacity
    NODE_MAX_ALLOCATABLE = "node.max_allocatable"
    # The namespace's LimitRange and the container's runtime (``bot.recommend.namespace``)
    LIMITRANGE_DEFAULT_LIMIT = "limitrange.default_limit"
    LIMITRANGE_MAX = "limitrange.max"
    LIMITRANGE_MAX_RATIO = "limitrange.max_ratio"
    LIMITRANGE_MIN = "limitrange.min"
    LIMITRANGE_POD_MAX = "limitrange.pod_max"
    RUNTIME_HEAP = "runtime.heap"
    # Noise control
    NOISE_MEMORY_PEAK_FLOOR = "noise.memory_peak_floor"
    NOISE_MIN_CHANGE = "noise.min_change"
    NOISE_ROUNDING = "noise.rounding"
    NOISE_TARGET_MIN_POINTS = "noise.target_min_points"
    # HPA: replica bounds and targets
    HPA_CONTAINER_RESOURCE_UNSUPPORTED = "hpa.container_resource_unsupported"
    HPA_NONE = "hpa.none"
    KEDA_SCALE_TO_ZERO = "keda.scale_to_zero"
    KEDA_TRIGGERS_KEPT = "keda.triggers_kept"
    KEDA_CRON_FLOORS = "keda.cron_floors"
    TORTOISE_GATHERING_DATA = "tortoise.gathering_data"
    TORTOISE_REPLICAS_MAX = "tortoise.replicas.max"
    TORTOISE_REPLICAS_MAX_BY_REPLAY = "tortoise.replicas.max_by_replay"
    TORTOISE_REPLICAS_MAX_GLOBAL_CAP = "tortoise.replicas.max_global_cap"
    TORTOISE_REPLICAS_MAX_RAISED_TO_MIN = "tortoise.replicas.max_raised_to_min"
    TORTOISE_REPLICAS_MAX_WORKLOAD_CAP = "tortoise.replicas.max_workload_cap"
    TORTOISE_REPLICAS_MIN = "tortoise.replicas.min"
    TORTOISE_REPLICAS_MIN_BY_REPLAY = "tortoise.replicas.min_by_replay"
    TORTOISE_REPLICAS_MIN_CAP = "tortoise.replicas.min_cap"
    TORTOISE_TARGET_AT_MAX_REPLICAS = "tortoise.target.at_max_replicas"
    TORTOISE_TARGET_BY_REPLAY = "tortoise.target.by_replay"
    TORTOISE_TARGET_HEADROOM = "tortoise.target.headroom"
    TORTOISE_TARGET_HOLD = "tortoise.target.hold"
    TORTOISE_TARGET_INTERVAL = "tortoise.target.interval"
    TORTOISE_TARGET_KEEP = "tortoise.target.keep"
    TORTOISE_TARGET_KEEP_LAST_METRIC = "tortoise.target.keep_last_metric"
    TORTOISE_TARGET_MAX = "tortoise.target.max"
    TORTOISE_TARGET_MAX_INCREASE = "tortoise.target.max_increase"
    TORTOISE_TARGET_MIN = "tortoise.target.min"
    TORTOISE_TARGET_MISSING_METRIC = "tortoise.target.missing_metric"
    TORTOISE_TARGET_NEW_METRIC = "tortoise.target.new_metric"
    TORTOISE_TARGET_REMOVE_METRIC = REMOVE_METRIC
    # The replay and its gate
    REPLAY_BUDGET = "replay.budget"
    REPLAY_BACKTEST_RAISE = "replay.backtest_raise"
    REPLAY_GATE = "replay.gate"
    REPLAY_MAX_REPLICAS_STEP = "replay.max_replicas_step"
    REPLAY_TARGET_NO_EFFECT = "replay.target_no_effect"
    REPLAY_TARGET_STEP = "replay.target_step"
    # After a merged revert: no cut as deep as the one that regressed
    AFTER_REVERT_FLOOR = "after_revert.floor"
    # The values of a workload the engine did not run for (skipped, or an error first)
    NOT_COMPUTED = "not-computed"


RuleId: TypeAlias = Rule | LimitRule
"""Any rule id a recommended value can carry."""

RULE_IDS: frozenset[RuleId] = frozenset((*Rule, *LimitRule))
"""Every rule id, the engine's and the limits'."""
