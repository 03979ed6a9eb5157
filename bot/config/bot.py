"""The bot's own settings (``--config FILE``); secrets come only from environment variables."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from bot.config.base import ConfigModel, TimeZoneName
from bot.config.forge import CostConfig, GitHubConfig
from bot.config.load import load_model
from bot.config.metrics import PrometheusConfig
from bot.config.recommend import RecommendSettings


class ScheduleConfig(ConfigModel):
    """When ``tortoise-bot serve`` runs."""

    cron: str = Field("0 6 * * 1-5", description="Crontab expression (5 fields).")
    timezone: TimeZoneName = Field("UTC", description="IANA time zone of the cron expression.")
    jitter_s: int = Field(300, ge=0, description="Random delay added to each run, seconds.")

    @field_validator("cron")
    @classmethod
    def _five_fields(cls, value: str) -> str:
        if len(value.split()) != 5:
            raise ValueError(
                "expected 5 crontab fields: minute hour day-of-month month day-of-week"
            )
        return value


class RunConfig(ConfigModel):
    """How ``tortoise-bot run`` (and each run of ``serve``) serves its repositories."""

    repository_timeout_s: float = Field(
        1800.0,
        gt=0,
        description="Longest time one repository may take, seconds. Checked between steps "
        "(nothing is written once it has passed) and given to the Prometheus fetch as its "
        "budget; a repository over it fails with a message and the next one is served.",
    )
    state_dir: Path | None = Field(
        None,
        description="Directory kept between runs (a volume, or a cache in GitHub Actions): "
        "a run that stops because GitHub's API budget is gone writes there the repositories it "
        "did not finish, one file per shard, and the next run serves them first. "
        "null = every run starts at the first repository.",
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


def load_bot_settings(path: Path | None) -> BotSettings:
    """Bot settings from ``path``, or the defaults when no file is given. Raises ``ConfigError``."""
    if path is None:
        return BotSettings()
    return load_model(path, BotSettings)
