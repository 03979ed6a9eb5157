"""What the pipeline asks of a forge, as two protocols; ``bot.forge.github`` is one forge.

A second forge (GitLab, Gitea) is a module whose classes have these methods: the pipeline
imports only this module and the forge-neutral values of ``bot.forge.results``,
``bot.forge.previous`` and ``bot.report.proposal``, never a forge's client.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Protocol

from bot.config.forge import PullRequestConfig
from bot.forge.lifecycle import ThresholdCheck
from bot.forge.previous import WorkloadMemory
from bot.forge.results import PublishReport, WorkloadStatus
from bot.report.proposal import Proposal


class ForgeSession(Protocol):
    """One repository in one run: checkout, memory, pull requests, dashboard."""

    @property
    def full_name(self) -> str: ...

    def checkout(self) -> Path:
        """A fresh checkout of the default branch; its path."""
        ...

    def configure(self, pull_requests: PullRequestConfig, *, dashboard: bool = True) -> None:
        """The repository's pull-request settings, once its opt-in file is read."""
        ...

    def workload_memory(self) -> dict[str, WorkloadMemory]:
        """Per workload key, what the bot's merged pull requests tell the engine."""
        ...

    def publish(
        self,
        proposals: Sequence[Proposal],
        *,
        within_thresholds: ThresholdCheck = ...,
        in_error: Collection[str] = (),
    ) -> PublishReport:
        """Bring the bot's pull requests in line with ``proposals``."""
        ...

    def update_dashboard(
        self, statuses: Sequence[WorkloadStatus], report: PublishReport
    ) -> set[str]:
        """Create or edit the dashboard; the keys a reviewer ticked."""
        ...

    def report_config_error(self, problems: Sequence[str]) -> None: ...

    def report_failure(self, message: str) -> None: ...

    def disconnect(self) -> None:
        """Release the session's connections."""
        ...


class Forge(Protocol):
    """Where repositories live: ``open`` gives a session on one."""

    def open(
        self, full_name: str, pull_requests: PullRequestConfig, *, dashboard: bool = True
    ) -> ForgeSession: ...


__all__ = ["Forge", "ForgeSession"]
