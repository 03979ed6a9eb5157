"""The bot's own settings (``--config FILE``); secrets come only from environment variables."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from bot.config.base import ConfigModel, TimeZoneName
from bot.config.forge import CostConfig, GitHubConfig
from bot.config.load import load_model
from bot.config.metrics import PrometheusConfig
from bot.config.recommend import RecommendSettings
from bot.config.verify import VerifySettings


class ScheduleConfig(ConfigModel):
    """When ``tortoise-bot serve`` runs."""

    cron: str = Field("0 6 * * 1-5", description="Crontab expression (5 fields).")
    timezone: TimeZoneName = Field("UTC", description="IANA time zone of the cron expression.")
    jitter_s: int = Field(300, ge=0, description="Random delay added to each run, seconds.")
    shutdown_grace_s: float = Field(
        25.0,
        gt=0,
        description="On SIGTERM, how long a run still going may take to finish, seconds; then "
        "the process exits (code 1) without it. Keep it below Kubernetes' "
        "``terminationGracePeriodSeconds`` (30 s by default).",
    )

    @field_validator("cron")
    @classmethod
    def _five_fields(cls, value: str) -> str:
        if len(value.split()) != 5:
            raise ValueError(
                "expected 5 crontab fields: minute hour day-of-month month day-of-week"
            )
        return value


AUTO_PROCESSES_MIN_WORKLOADS = 100
"""``run.processes: auto`` recommends in worker processes from this many workloads."""


class RunConfig(ConfigModel):
    """How ``tortoise-bot run`` (and each run of ``serve``) serves its repositories; ``processes``
    also holds for ``plan`` and ``explain``."""

    repository_timeout_s: float = Field(
        1800.0,
        gt=0,
        description="Longest time one repository may take, seconds. Checked between steps and "
        "inside the long ones, before each file read, overlay replayed, object and workload "
        "edited (nothing is written once it has passed), and given to the Prometheus fetch as "
        "its budget; a repository over it fails with a message naming where it stopped, and the "
        "next one is served.",
    )
    state_dir: Path | None = Field(
        None,
        description="Directory kept between runs (a volume, or a cache in GitHub Actions): "
        "a run that stops because GitHub's API budget is gone writes there the repositories it "
        "did not finish, one file per shard, and the next run serves them first. "
        "null = every run starts at the first repository.",
    )
    processes: int | Literal["auto"] = Field(
        "auto",
        description="Worker processes that recommend one repository's workloads: 1 = in the "
        "bot's own process, one workload after the other; N = N processes, at most 8 × N "
        "workloads' history handed out at once, results identical and in the same order; "
        f"auto = 1 for a repository of fewer than {AUTO_PROCESSES_MIN_WORKLOADS} workloads "
        "(starting workers costs more than it saves), else the cores the bot may use.",
    )

    @field_validator("processes")
    @classmethod
    def _at_least_one(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 1:
            raise ValueError("expected at least 1 process, or auto")
        return value

    def processes_for(self, workloads: int, cores: int) -> int:
        """The worker processes for a repository of ``workloads`` on ``cores`` usable cores."""
        if self.processes != "auto":
            return self.processes
        return 1 if workloads < AUTO_PROCESSES_MIN_WORKLOADS else max(1, cores)


class ReportConfig(ConfigModel):
    """How pull requests, the dashboard and text output show what they report."""

    time_zone: TimeZoneName = Field(
        "UTC",
        description="IANA time zone of the times shown (data windows, backtests, plan's history "
        "window); stated where they appear. Not the replica slots' clock "
        "(recommend.admin.time_zone).",
    )


class BotSettings(ConfigModel):
    """Settings of one bot deployment."""

    SCHEMA_FILE = "bot.schema.json"

    repositories: tuple[str, ...] = Field(
        (),
        description="``owner/name`` to serve; empty = every installation repo with an opt-in file.",
    )
    prometheus: PrometheusConfig = PrometheusConfig()
    github: GitHubConfig = GitHubConfig()
    recommend: RecommendSettings = RecommendSettings()
    prices: CostConfig = Field(
        CostConfig(),
        description="Prices of the monthly cost of the replayed requests (with replicas) in pull "
        "requests, plan, explain, the dashboard and the run summary; a repository's "
        "``pull_requests.cost`` overrides them.",
    )
    schedule: ScheduleConfig = ScheduleConfig()
    run: RunConfig = RunConfig()
    report: ReportConfig = ReportConfig()
    verify: VerifySettings = VerifySettings()


def load_bot_settings(path: Path | None) -> BotSettings:
    """Bot settings from ``path``, or the defaults when no file is given. Raises ``ConfigError``."""
    if path is None:
        return BotSettings()
    return load_model(path, BotSettings)
