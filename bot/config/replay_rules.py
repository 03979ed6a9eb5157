"""Settings of the sizing horizon, the replay and the HPA's replica rules.

Part of ``RecommendSettings`` (``bot.config.recommend``): ``forecast`` (how long a merged value
is expected to live), ``right_sizing``, ``replicas`` and ``replay`` (``docs/recommendations.md``
§8-§9).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bot.config.base import ConfigModel


class ForecastSettings(ConfigModel):
    """The cycle a value in Git lives through: from its merge to the next one."""

    horizon_days: float = Field(
        7.0,
        gt=0,
        le=90,
        description="How long a merged value is expected to live (days): requests are sized "
        "for this many days ahead and the backtest scores the last this many days.",
    )
    seasonality: Literal["weekly", "off"] = Field(
        "weekly",
        description="weekly: a vertical CPU request is at least the VPA target percentile of "
        "the last 7 days' samples, every day weighing the same, × (1 + vpa.margin_fraction), "
        "so it covers the busiest days of the week whatever weekday the history ends on (bot "
        "rule forecast.cycle); off: the VPA target alone (upstream).",
    )
    trend: Literal["theil_sen", "off"] = Field(
        "theil_sen",
        description="theil_sen: a vertical CPU request grows with the Theil–Sen slope of the "
        "daily target percentile (pairs of equal weekday from 14 days of history), projected "
        "to horizon_days ahead when Sen's confidence interval lies above zero (bot rule "
        "forecast.trend); off: no projection (upstream).",
    )
    trend_confidence: float = Field(
        0.9,
        gt=0,
        lt=1,
        description="Two-sided confidence of Sen's interval: growth is projected only when "
        "the interval's lower bound is above zero.",
    )
    max_growth_factor: float = Field(
        2.0,
        ge=1,
        description="The projected growth multiplies a request by at most this factor.",
    )


class RightSizingSettings(ConfigModel):
    """How the bot reads "at the bound" from history where upstream looks at one instant."""

    bound_time_fraction: float = Field(
        0.9,
        gt=0,
        le=1,
        description="A workload counts as at minimum / near preferred max replicas when it was "
        "there for at least this fraction of the observed time.",
    )


class ReplicaRules(ConfigModel):
    """How the HPA's minReplicas and maxReplicas become one manifest value each."""

    min_replicas: Literal["replay", "slots"] = Field(
        "replay",
        description="replay: the lowest minReplicas whose replayed capacity shortfall is no "
        "worse than the current floor's (bot rule tortoise.replicas.min_by_replay); slots: the "
        "maximum over Tortoise's hourly slots (upstream values, folded by their maximum).",
    )
    max_replicas: Literal["replay", "slots"] = Field(
        "replay",
        description="replay: the replayed peak × max_replicas_headroom (bot rule "
        "tortoise.replicas.max_by_replay); slots: the maximum over the hourly slots.",
    )
    target: Literal["replay", "upstream"] = Field(
        "replay",
        description="replay: the highest HPA target at which the replayed pods run above their "
        "requests at most replay.max_extra_over_request of the time, reached in steps of "
        "target_step_points (bot rule tortoise.target.by_replay); upstream: 100 − (usage % − "
        "current), +5 points a day.",
    )
    target_step_points: int = Field(
        10,
        ge=0,
        le=100,
        description="With target: replay, an HPA target moves at most this many points per "
        "pull request toward the replayed target, up or down, and never to a value whose "
        "replay shows more capacity shortfall than today's (bot rule replay.target_step); the "
        "next run continues from the merged value. 0: the replayed target in one step.",
    )
    skip_targets_without_effect: bool = Field(
        True,
        description="A raised HPA target that changes no replica in the replay (its metric does "
        "not drive the HPA) is not proposed (bot rule replay.target_no_effect); false: "
        "raised as upstream.",
    )
    max_replicas_headroom: float = Field(
        1.5, ge=1, description="maxReplicas = ceil(replayed peak replicas × this)."
    )
    max_replicas_keep_fraction: float = Field(
        0.25,
        ge=0,
        description="maxReplicas stays as it is while the replayed value is within this "
        "fraction of it and the current maxReplicas adds no capacity shortfall.",
    )
    max_replicas_cut_fraction: float = Field(
        0.25,
        ge=0,
        le=1,
        description="With max_replicas: replay, a maxReplicas cut per pull request is at most "
        "this fraction of the current value: new ≥ ceil(current × (1 − this)) (bot rule "
        "replay.max_replicas_step); the next run continues. Increases are not bounded. "
        "1 (or 0, read as off): the replayed value in one step.",
    )


class ReplaySettings(ConfigModel):
    """The replay of every proposal on the recorded history, and the gate it drives
    (``bot/recommend/replay``, ``docs/recommendations.md`` §9)."""

    gate: Literal["on", "report-only", "off"] = Field(
        "on",
        description="on: a proposal whose replay is worse than the current values' (more OOM "
        "kills, CPU minutes over request beyond the allowance, more capacity shortfall) is "
        "backed off field by field; report-only: shown, not backed off; off: the replay is "
        "shown without findings.",
    )
    max_extra_over_request: float = Field(
        0.01,
        ge=0,
        le=1,
        description="Share of container-minutes with CPU above the request a proposal may add "
        "to the current values' (also minutes above a memory request without a limit).",
    )
    max_extra_shortfall: float = Field(
        0.001,
        ge=0,
        le=1,
        description="Capacity shortfall a proposal may have where the current HPA has less, as "
        "a fraction of the window's minutes (0.1 %: 20 minutes in 14 days); a proposal never "
        "has more than the current HPA's or this, whichever is more.",
    )
    hpa_model: Literal["fast", "exact"] = Field(
        "fast",
        description="fast: the HPA controller vectorised, the tolerance judged on the path "
        "without it; exact: the controller walked step by step, one Python step per sample "
        "step (for checking the fast model; much slower).",
    )
    max_over_request: float = Field(
        0.01,
        gt=0,
        le=1,
        description="Absolute budget: share of a vertical container's minutes with CPU above its "
        "request that neither the replay of the proposal nor its backtest may exceed; a request "
        "over it is raised until it does not, even above the current value, whatever minChange "
        "says (bot rules replay.budget, replay.backtest_raise; 1: no budget, upstream).",
    )
    budget_scope: Literal["container", "workload"] = Field(
        "container",
        description="What replay.max_over_request is a share of: container: each vertical "
        "container's own minutes; workload: the minutes of the workload's vertical containers "
        "pooled, the requests raised where it costs least (a Lagrangian allocation; with one "
        "container the same).",
    )
    backtest: Literal["on", "off"] = Field(
        "on",
        description="on: every workload is also decided on its history as it stood "
        "forecast.horizon_days ago and scored on the days since (shown in every pull request; "
        "its over-request share drives replay.backtest_raise); off: no backtest.",
    )
    max_backtest_raise: float = Field(
        2.0,
        ge=1,
        description="Largest factor replay.backtest_raise multiplies a request by.",
    )
    pod_startup_s: float = Field(
        60.0,
        ge=0,
        description="Seconds before a pod the HPA adds serves load: until then the serving "
        "pods carry it (their minutes over request), and steps when they run above their "
        "requests are capacity shortfall.",
    )
