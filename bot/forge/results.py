"""What publishing did, as plain values: per branch key, per run, per workload.

Kept apart from ``github`` so that the pipeline (and ``plan``, which publishes nothing) reads
these without loading the GitHub client.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.model import Recommendation, Status, WorkloadRef
from bot.report.proposal import DashboardStatus


@dataclass(frozen=True, slots=True)
class KeyResult:
    """What happened to one branch key in ``publish``."""

    key: str
    action: str
    status: DashboardStatus
    message: str = ""
    number: int | None = None
    url: str | None = None
    done: bool = True


@dataclass(frozen=True, slots=True)
class PublishReport:
    """Per key results and what could not be done (e.g. the API budget ran out)."""

    results: tuple[KeyResult, ...] = ()
    not_done: tuple[str, ...] = ()
    stopped: str | None = None
    """Why the run stopped early (rate limit), None when it finished."""

    def result(self, key: str) -> KeyResult | None:
        return next((r for r in self.results if r.key == key), None)

    def keys(self, *actions: str) -> tuple[str, ...]:
        """Keys whose action is one of ``actions`` and that succeeded."""
        return tuple(r.key for r in self.results if r.action in actions and r.status != "error")

    @property
    def opened(self) -> tuple[str, ...]:
        """Keys whose pull request this run opened."""
        return self.keys("create")

    @property
    def adopted(self) -> tuple[str, ...]:
        """Keys whose pull request another run opened at the same time (found already open)."""
        return self.keys("adopted")

    @property
    def updated(self) -> tuple[str, ...]:
        return self.keys("update", "rebuild")

    @property
    def closed(self) -> tuple[str, ...]:
        return self.keys("close")

    @property
    def held(self) -> tuple[str, ...]:
        """Keys whose new pull request was held back below the money threshold."""
        return self.keys("held")

    @property
    def waiting_new(self) -> tuple[str, ...]:
        """Keys whose new pull request waits for a later run: this run opened
        ``max_new_per_run`` already."""
        return self.keys("waiting-new")

    @property
    def waiting_open(self) -> tuple[str, ...]:
        """Keys whose new pull request waits while ``max_open`` bot pull requests are open."""
        return self.keys("waiting-open")

    @property
    def errors(self) -> tuple[KeyResult, ...]:
        return tuple(r for r in self.results if r.status == "error")


@dataclass(frozen=True, slots=True)
class WorkloadStatus:
    """A workload's outcome for the dashboard, from the pipeline: ``key`` is its change-set key;
    ``recommendation`` the proposal behind a ``changes`` status (its replay and held values go
    on the dashboard)."""

    ref: WorkloadRef
    status: Status
    message: str = ""
    key: str | None = None
    recommendation: Recommendation | None = None
