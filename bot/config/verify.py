"""Settings of the verification of merged pull requests (``docs/pull-requests.md``,
"Verification"): how long the outcome is watched, the margins above the prediction that make a
regression, and whether a regression is reverted."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bot.config.base import ConfigModel


class VerifyMargins(ConfigModel):
    """How far above what a pull request predicted an observed figure may be before the merge
    counts as a regression (shares are fractions of the container's minutes: 0.05 = 5 points)."""

    cpu_share: float = Field(
        0.05,
        ge=0,
        le=1,
        description="CPU over request: observed share of the minutes above the request may "
        "exceed the predicted share (the larger of the replay's and the backtest's) by this much.",
    )
    throttle_share: float = Field(
        0.05,
        ge=0,
        le=1,
        description="CPU throttling (containers with a CPU limit): observed share of throttled "
        "CFS periods may exceed the predicted share of minutes over the limit by this much.",
    )
    shortfall_minutes_per_day: float = Field(
        10.0,
        ge=0,
        description="Capacity shortfall at maxReplicas: observed minutes per day may exceed the "
        "predicted minutes per day by this much.",
    )
    restarts_per_day: float = Field(
        2.0,
        ge=0,
        description="Restarts without an OOM kill to explain them: a container's restarts per "
        "day after the merge may exceed those before it by this much.",
    )
    load_fraction: float = Field(
        0.2,
        ge=0,
        description="The load is within the history's range while the workload's peak CPU "
        "(summed over pods) and each container's peak working set stay below the same peaks "
        "before the merge × (1 + this); above it a worse figure is 'load left the range' "
        "(answered by a new proposal), not a regression.",
    )


class VerifySettings(ConfigModel):
    """What the bot does with its merged pull requests once their values run."""

    enabled: bool = Field(
        True, description="Compare every merged bot pull request with what happened after it."
    )
    window_days: float = Field(
        7.0,
        gt=0,
        le=28,
        description="Days watched from the moment the merged values run in the cluster; the "
        "same hours of the week before the merge are the comparison.",
    )
    waiting_days: float = Field(
        3.0,
        gt=0,
        description="A merged pull request whose values do not run in the cluster this many "
        "days after the merge is reported as never live (a GitOps sync that never happened).",
    )
    margins: VerifyMargins = VerifyMargins()
    revert: Literal["auto", "propose-only", "off"] = Field(
        "auto",
        description="auto: open at once a pull request restoring the previous values of the "
        "regressed fields; propose-only: say so in the comment and on the dashboard without "
        "opening it; off: report only.",
    )
    revert_label: str = Field(
        "tortoise-bot:revert",
        max_length=50,
        description="Label added to a revert pull request (with pull_requests.labels); "
        "empty: none.",
    )
    after_revert_margin: float = Field(
        0.2,
        ge=0,
        le=1,
        description="After a merged revert, the next proposal for a field it restored is at "
        "least the value that regressed × (1 + this) (an HPA target at most × (1 − this)); "
        "rule after_revert.floor (0: bounded at the value that regressed itself).",
    )
