"""How CronJobs and bare Jobs are sized: on their runs (``recommend.jobs``;
``docs/recommendations.md``, CronJobs and Jobs)."""

from __future__ import annotations

from pydantic import Field

from bot.config.base import ConfigModel


class JobSettings(ConfigModel):
    """A CronJob's or a Job's request covers its runs' busy part: each run (one pod life) gives
    its peak, and the request is sized on a percentile of those peaks, never diluted by the idle
    time between runs (there are no samples between runs)."""

    min_runs: int = Field(
        3,
        ge=1,
        description="Runs the window must hold before anything is proposed; fewer: "
        "gathering-data ('N runs in the window; needs ≥ 3').",
    )
    peak_percentile: float = Field(
        95.0,
        gt=0,
        le=100,
        description="Percentile of the runs' peaks (the highest CPU and working-set sample of "
        "each run) the request is sized on (numpy's linear percentile).",
    )
