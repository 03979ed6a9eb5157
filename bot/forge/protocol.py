"""What a forge implements, as protocols; ``bot.forge.github`` is one forge.

``PullRequestPlatform`` holds the primitives of one repository in one run: list the bot's
branches and pull requests, push and delete a branch, open, update, comment on and close a pull
request, read and write the dashboard, and reserve the API budget of a step's writes.
``bot.forge.publish`` runs the pull-request lifecycle on them (list, observe, decide, order,
reserve, act, stop on a rate limit), the same for every forge. ``ForgeSession`` adds what the
pipeline asks around it: the checkout, the repository's settings, what merged pull requests
remember, the notices of a repository that could not be served.

A second forge (GitLab, Gitea) is a package whose classes have these methods: the pipeline
imports only this module, ``bot.forge.publish`` and the forge-neutral values of
``bot.forge.results``, ``bot.forge.pulls``, ``bot.forge.previous`` and ``bot.report.proposal``,
never a forge's client. Errors are ``bot.forge.errors``: ``RateLimitError`` stops a run,
any other ``ForgeError`` fails one branch key.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from bot.config.forge import PullRequestConfig
from bot.forge.git import Author
from bot.forge.previous import PreviousProposal, WorkloadMemory
from bot.forge.pulls import ListedComment, ListedPull, OpenedPull, Write
from bot.report.proposal import Proposal


class PullRequestPlatform(Protocol):
    """One repository's branches, pull requests, dashboard and API budget in one run."""

    @property
    def full_name(self) -> str: ...

    @property
    def config(self) -> PullRequestConfig:
        """The repository's pull-request settings (``ForgeSession.configure``)."""
        ...

    @property
    def dashboard_enabled(self) -> bool:
        """Whether the repository keeps a dashboard."""
        ...

    # ------------------------------------------------------------------ branches (git)

    def bot_branches(self) -> dict[str, str]:
        """Bot branch -> SHA of its head on the remote."""
        ...

    def push_branch(
        self, proposal: Proposal, ref: str, expected: str | None, *, message: str, author: Author
    ) -> str:
        """Commit ``proposal``'s files on the default branch and push them to ``ref``, leased
        on ``expected`` (the SHA observed, None: the branch must not exist); the commit's SHA.
        A file changed on the base since the proposal was computed raises ``ForgeError``."""
        ...

    def delete_branch(self, ref: str, *, expected: str) -> None:
        """Delete ``ref`` on the remote, leased on ``expected``."""
        ...

    def branch_author_email(self, ref: str) -> str:
        """The author e-mail of the head commit of ``ref``."""
        ...

    # ------------------------------------------------------------------ pull requests

    def pull_requests(self) -> Sequence[ListedPull]:
        """Every bot pull request of the repository, newest first (one listing per run: the
        one ``workload_memory`` made is reused once, a later call lists again)."""
        ...

    def commit_emails(self, pull: ListedPull) -> tuple[str, ...]:
        """The author e-mail of each commit of ``pull``."""
        ...

    def open_pull(self, ref: str, *, title: str, body: str, draft: bool) -> OpenedPull:
        """Open a pull request from ``ref`` onto the default branch; when another run opened
        one from ``ref`` meanwhile, that one, ``adopted`` (never a duplicate)."""
        ...

    def update_pull(
        self, number: int, *, title: str | None = None, body: str | None = None
    ) -> None:
        """Rewrite the title and/or the body of pull request ``number``."""
        ...

    def comment(self, number: int, text: str) -> None:
        """Comment ``text`` on pull request ``number``."""
        ...

    def comments(self, number: int) -> Sequence[ListedComment]:
        """Every comment on pull request ``number``, oldest first (to find the bot's own by
        its marker)."""
        ...

    def edit_comment(self, comment_id: int, text: str) -> None:
        """Replace the text of a comment ``comments`` listed."""
        ...

    def close_pull(self, number: int) -> None:
        """Close pull request ``number`` without merging it."""
        ...

    def set_labels(
        self, number: int, *, labels: Sequence[str] | None, assignees: Sequence[str] | None
    ) -> None:
        """Set the labels and the assignees of pull request ``number`` (None: leave them)."""
        ...

    def request_reviews(
        self, number: int, *, reviewers: Sequence[str], team_reviewers: Sequence[str]
    ) -> None:
        """Ask ``reviewers`` and ``team_reviewers`` to review pull request ``number``."""
        ...

    # ------------------------------------------------------------------ dashboard

    def read_dashboard(self) -> str | None:
        """The dashboard's body (looked up once per run); None when there is none."""
        ...

    @property
    def dashboard_url(self) -> str | None:
        """The dashboard's address, once read or written; None before or without one."""
        ...

    def write_dashboard(self, text: str) -> None:
        """Create the dashboard with ``text``, or edit it when its body differs."""
        ...

    # ------------------------------------------------------------------ budget

    def reserve(self, writes: Sequence[Write], before: str) -> None:
        """Make sure the API budget covers ``writes`` (and what the dashboard still needs)
        before a step makes them: wait for it, or raise ``RateLimitError`` named ``before``."""
        ...


class ForgeSession(PullRequestPlatform, Protocol):
    """One repository in one run: checkout, settings, memory, and its primitives."""

    def checkout(self) -> Path:
        """A fresh checkout of the default branch; its path."""
        ...

    def configure(self, pull_requests: PullRequestConfig, *, dashboard: bool = True) -> None:
        """The repository's pull-request settings, once its opt-in file is read."""
        ...

    def workload_memory(self) -> dict[str, WorkloadMemory]:
        """Per workload key, what the bot's merged pull requests tell the engine."""
        ...

    def previous_proposals(self) -> tuple[PreviousProposal, ...]:
        """Every bot pull request with its parsed state, newest first (the listing
        ``workload_memory`` made): what the verification of merged ones reads."""
        ...

    def report_config_error(self, problems: Sequence[str]) -> None:
        """Show an invalid opt-in file (every problem) on the dashboard."""
        ...

    def report_failure(self, message: str) -> None:
        """Show why this run could not serve the repository on the dashboard."""
        ...

    def disconnect(self) -> None:
        """Release the session's connections."""
        ...


class Forge(Protocol):
    """Where repositories live: ``open`` gives a session on one."""

    def open(
        self, full_name: str, pull_requests: PullRequestConfig, *, dashboard: bool = True
    ) -> ForgeSession: ...


__all__ = ["Forge", "ForgeSession", "PullRequestPlatform"]
