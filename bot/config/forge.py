"""Pull-request and GitHub settings: the ``pull_requests`` key and the bot's GitHub connection.

Secrets are never settings: the token and the App private key are read from the environment
variables named here, by the CLI, and handed to ``bot.forge.github.auth``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from zoneinfo import ZoneInfo

from pydantic import Field, field_validator

from bot.config.base import ConfigModel, TimeZoneName
from bot.model import MIB


class CostConfig(ConfigModel):
    """Prices of the monthly cost of the replayed requests with replicas (both 0 = no cost):
    ``(core_hours × cpu_core_month + gib_hours × memory_gib_month) / hours replayed``."""

    cpu_core_month: float = Field(0.0, ge=0, description="Price of one requested core for a month.")
    memory_gib_month: float = Field(
        0.0, ge=0, description="Price of one requested GiB for a month."
    )
    currency: str = Field("$", max_length=8, description="Currency symbol printed before amounts.")
    extended_resources: dict[str, float] = Field(
        default_factory=dict,
        description="Price of one unit of an extended resource for a month, by resource name "
        '(e.g. {"nvidia.com/gpu": 1500}): a workload requesting it has units per pod × replicas '
        "× price in its monthly cost, and a raised minReplicas names its cost. The bot never "
        "proposes extended-resource quantities.",
    )

    @field_validator("extended_resources")
    @classmethod
    def _extended_names(cls, value: dict[str, float]) -> dict[str, float]:
        """Names are ``<domain>/<name>`` and prices not negative."""
        for name, price in value.items():
            if "/" not in name or name.startswith("/") or name.endswith("/"):
                raise ValueError(f"{name!r} is not an extended resource name (<domain>/<name>)")
            if price < 0:
                raise ValueError(f"{name}: a price is not negative")
        return value


Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

WEEKDAYS: tuple[Weekday, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
"""Day names of ``ScheduleWindow.days``, Monday first (``datetime.weekday()`` order)."""


class ScheduleWindow(ConfigModel):
    """When pull requests may be opened or updated; outside it only the dashboard changes.

    ``start_hour`` <= hour < ``end_hour`` on the listed ``days``, in ``timezone``; a window that
    ends before it starts (``22`` to ``6``) runs over midnight and belongs to its start day.
    """

    days: tuple[Weekday, ...] = Field(WEEKDAYS, description="Days on which the window opens.")
    start_hour: int = Field(0, ge=0, le=23, description="Hour the window opens (0-23).")
    end_hour: int = Field(24, ge=1, le=24, description="Hour the window closes (1-24).")
    timezone: TimeZoneName = Field("UTC", description="IANA time zone of the hours.")

    def contains(self, unix_s: float) -> bool:
        """Whether ``unix_s`` falls inside the window."""
        local = datetime.fromtimestamp(unix_s, ZoneInfo(self.timezone))
        hour, day = local.hour, local.weekday()
        if self.start_hour < self.end_hour:
            return WEEKDAYS[day] in self.days and self.start_hour <= hour < self.end_hour
        if hour >= self.start_hour:  # over midnight: the evening part
            return WEEKDAYS[day] in self.days
        return hour < self.end_hour and WEEKDAYS[(day - 1) % 7] in self.days


class PullRequestConfig(ConfigModel):
    """How changes become pull requests."""

    grouping: Literal["workload", "namespace", "environment", "repository"] = Field(
        "workload", description="One pull request per workload, namespace, environment or repo."
    )
    branch_prefix: str = Field("tortoise-bot", description="Prefix of the bot's branch names.")
    branch_template: str = Field(
        "{prefix}/{key}",
        description="Branch name; ``{prefix}`` and ``{key}`` (``env/namespace/workload`` per grouping).",
    )
    commit_prefix: str = Field("chore(resources):", description="Prefix of commit messages.")
    author_name: str = Field(
        "tortoise-bot", description="Author and committer name of bot commits."
    )
    author_email: str = Field(
        "tortoise-bot@users.noreply.github.com",
        description="Author e-mail of bot commits; commits by anyone else are human commits.",
    )
    labels: tuple[str, ...] = Field((), description="Labels added to every pull request.")
    reviewers: tuple[str, ...] = Field((), description="Users asked to review every pull request.")
    team_reviewers: tuple[str, ...] = Field((), description="Team slugs asked to review.")
    assignees: tuple[str, ...] = Field((), description="Users assigned to every pull request.")
    draft: bool = Field(False, description="Open pull requests as drafts.")
    max_open: int = Field(10, ge=0, description="Open bot pull requests per repository at most.")
    max_new_per_run: int = Field(5, ge=0, description="New pull requests per run at most.")
    min_monthly_change: float = Field(
        5.0,
        ge=0,
        description="A new pull request whose replayed monthly cost changes by less than this "
        "(in the currency of ``cost``) is held back (listed on the dashboard, tick it to open "
        "it anyway); a risk fix (OOM, CPU budget, emergency) always opens. 0: no threshold; "
        "without prices, or with a workload not replayed, it does not apply.",
    )
    dashboard_title: str = Field(
        "tortoise-bot dashboard", min_length=1, description="Title of the dashboard issue."
    )
    dashboard_label: str = Field(
        "tortoise-bot-dashboard", min_length=1, description="Label that finds the dashboard issue."
    )
    cost: CostConfig = CostConfig()
    schedule: ScheduleWindow | None = Field(
        None,
        description="Only open or update pull requests inside this window (e.g. office hours); "
        "outside it the dashboard lists the proposals as pending.",
    )


class GitHubConfig(ConfigModel):
    """GitHub connection (token or App credentials come from the environment)."""

    api_url: str = Field("https://api.github.com", description="API base URL (GHES: .../api/v3).")
    token_env: str = Field("GITHUB_TOKEN", description="Environment variable holding a token.")
    app_id: int | None = Field(None, description="GitHub App id; set to authenticate as an App.")
    installation_id: int | None = Field(
        None, description="App installation id; unset = looked up per repository."
    )
    app_private_key_env: str = Field(
        "TORTOISE_BOT_APP_PRIVATE_KEY",
        description="Environment variable holding the App's PEM key.",
    )
    timeout_s: float = Field(15.0, gt=0, description="Timeout of one API request, seconds.")
    git_timeout_s: float = Field(300.0, gt=0, description="Timeout of one git command, seconds.")
    max_response_bytes: int = Field(
        32 * MIB,
        ge=64 * 1024,
        description="Largest answer of one API request, bytes (as decoded): a larger one is "
        "not read further and fails its repository with an error naming the request; the "
        "other repositories are served. A page of GitHub's API is a few MB at most.",
    )
    retries: int = Field(5, ge=0, description="Retries of a request failing with 5xx or 429.")
    backoff_factor: float = Field(0.5, ge=0, description="Exponential backoff base, seconds.")
    max_rate_limit_wait_s: float = Field(
        60.0, ge=0, description="Longest wait for a rate-limit reset; longer = stop and report."
    )
    secondary_rate_wait_s: float = Field(
        60.0, ge=0, description="Wait after a secondary rate limit without Retry-After, seconds."
    )
    seconds_between_requests: float | None = Field(
        0.25, ge=0, description="Pause between requests (GitHub's guidance); null = none."
    )
    seconds_between_writes: float | None = Field(
        1.0, ge=0, description="Pause between write requests (GitHub's guidance); null = none."
    )
