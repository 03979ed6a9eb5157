"""Pull-request and GitHub settings: the ``pull_requests`` key and the bot's GitHub connection."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bot.config.base import ConfigModel


class PullRequestConfig(ConfigModel):
    """How changes become pull requests."""

    grouping: Literal["workload", "namespace", "environment", "repository"] = Field(
        "workload", description="One pull request per workload, namespace, environment or repo."
    )
    branch_prefix: str = Field("tortoise-bot", description="Prefix of the bot's branch names.")
    commit_prefix: str = Field("chore(resources):", description="Prefix of commit messages.")
    labels: tuple[str, ...] = Field((), description="Labels added to every pull request.")
    max_open: int = Field(10, ge=0, description="Open bot pull requests per repository at most.")


class GitHubConfig(ConfigModel):
    """GitHub connection (token or App credentials come from the environment)."""

    api_url: str = Field("https://api.github.com", description="API base URL (GHES: .../api/v3).")
