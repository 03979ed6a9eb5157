"""One repository in one run on GitHub (``bot.forge.protocol.ForgeSession``): its checkout and
bot branches (``bot.forge.checkout``), the bot's pull requests (``listing``, ``writes``), the
dashboard issue (``dashboard``) and the REST budget (``api``). ``bot.forge.publish`` runs the
pull-request lifecycle on these primitives."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bot.config.forge import PullRequestConfig
from bot.forge.branches import BranchNames
from bot.forge.checkout import Checkout
from bot.forge.git import Author, Git
from bot.forge.github.api import RepositoryApi
from bot.forge.github.dashboard import DashboardIssue
from bot.forge.github.listing import BotPulls
from bot.forge.github.writes import PullRequestWrites
from bot.forge.messages import config_error_notice, failure_notice
from bot.forge.previous import PreviousProposal, WorkloadMemory, workload_memory
from bot.forge.pulls import ListedComment, ListedPull, OpenedPull, Write, previous_proposals
from bot.report.proposal import Proposal

DASHBOARD_RESERVE = 3
"""REST requests kept for the dashboard when a run decides whether it can afford one more pull
request: looking it up, creating it and checking that no other run created one meanwhile."""


class RepositorySession:
    """One repository in one run: checkout, bot branches and pull requests, dashboard issue."""

    def __init__(
        self,
        api: RepositoryApi,
        config: PullRequestConfig,
        *,
        workdir: Path,
        git_timeout_s: float,
        dashboard: bool = True,
    ) -> None:
        self.api = api
        self.workdir = workdir
        self.git_timeout_s = git_timeout_s
        self.pulls = BotPulls(api)
        self.writes = PullRequestWrites(api, self.pulls)
        self.dashboard = DashboardIssue(api)
        self._checkout: Checkout | None = None
        self.configure(config, dashboard=dashboard)

    @property
    def full_name(self) -> str:
        return self.api.full_name

    def configure(self, pull_requests: PullRequestConfig, *, dashboard: bool = True) -> None:
        """Apply the repository's own pull-request settings, read from its checkout.

        The opt-in file lives in the repository, so it is known only after ``checkout()``;
        call this before ``bot.forge.publish``'s ``publish`` and ``update_dashboard``.
        """
        self.config = pull_requests
        self.names = BranchNames.of_settings(pull_requests)
        self.dashboard_enabled = dashboard

    # ------------------------------------------------------------------ checkout and branches

    @property
    def checkout_path(self) -> Path | None:
        return self._checkout.path if self._checkout is not None else None

    def checkout(self) -> Path:
        """Shallow clone of the default branch (token only in git's environment); its path."""
        repo, auth = self.api.repo, self.api.auth
        default_branch, clone_url = self.api.call(
            "read the repository", lambda: (repo.default_branch, repo.clone_url)
        )
        git = Git(
            clone_url,
            lambda: auth.token,
            repo=self.full_name,
            timeout_s=self.git_timeout_s,
            renew=auth.renew,
        )
        path = self.workdir / self.full_name.replace("/", "__")
        self._checkout = Checkout.clone(git, path, default_branch)
        return path

    def _checked_out(self) -> Checkout:
        checkout = self._checkout
        assert checkout is not None, "call checkout() first"
        return checkout

    def bot_branches(self) -> dict[str, str]:
        """Bot branch -> SHA on the remote (``git ls-remote``, no API call)."""
        return self._checked_out().bot_branches(self.names)

    def push_branch(
        self, proposal: Proposal, ref: str, expected: str | None, *, message: str, author: Author
    ) -> str:
        return self._checked_out().push(
            proposal, ref, expected, message=message, author=author, names=self.names
        )

    def delete_branch(self, ref: str, *, expected: str) -> None:
        self._checked_out().delete(ref, expected=expected)

    def branch_author_email(self, ref: str) -> str:
        return self._checked_out().head_author_email(ref)

    def close(self) -> None:
        """Remove the checkout (the session can ``checkout()`` again)."""
        if self._checkout is not None:
            self._checkout.remove()
        self._checkout = None

    def disconnect(self) -> None:
        """Release the HTTP connections of this repository's API client (a long-running
        ``serve`` would otherwise hold them until the garbage collector runs)."""
        self.api.close()

    # ------------------------------------------------------------------ memory

    def previous_proposals(self) -> tuple[PreviousProposal, ...]:
        """Every bot pull request of the repository, newest first, with its parsed state."""
        return previous_proposals(self.pulls.listing(self.names), self.names)

    def previous(self, key: str) -> PreviousProposal | None:
        """The latest bot pull request of change-set ``key`` (None when there was none)."""
        return next((p for p in self.previous_proposals() if p.key == key), None)

    def workload_memory(self) -> dict[str, WorkloadMemory]:
        """Per workload key, what merged bot pull requests tell the engine (``previous.py``)."""
        return workload_memory(self.previous_proposals())

    # ------------------------------------------------------------------ pull requests

    def pull_requests(self) -> tuple[ListedPull, ...]:
        """Every bot pull request, newest first: the listing ``workload_memory`` made, once;
        a later call lists again."""
        return self.pulls.take(self.names)

    def commit_emails(self, pull: ListedPull) -> tuple[str, ...]:
        return self.pulls.commit_emails(pull)

    def open_pull(self, ref: str, *, title: str, body: str, draft: bool) -> OpenedPull:
        base = self._checked_out().default_branch or "main"
        return self.writes.open(ref, base, title=title, body=body, draft=draft)

    def update_pull(
        self, number: int, *, title: str | None = None, body: str | None = None
    ) -> None:
        self.writes.update(number, title=title, body=body)

    def comment(self, number: int, text: str) -> None:
        self.writes.comment(number, text)

    def comments(self, number: int) -> tuple[ListedComment, ...]:
        return self.writes.comments(number)

    def edit_comment(self, comment_id: int, text: str) -> None:
        self.writes.edit_comment(comment_id, text)

    def close_pull(self, number: int) -> None:
        self.writes.close(number)

    def set_labels(
        self, number: int, *, labels: Sequence[str] | None, assignees: Sequence[str] | None
    ) -> None:
        self.writes.set_labels(number, labels=labels, assignees=assignees)

    def request_reviews(
        self, number: int, *, reviewers: Sequence[str], team_reviewers: Sequence[str]
    ) -> None:
        self.writes.request_reviews(number, reviewers=reviewers, team_reviewers=team_reviewers)

    def reserve(self, writes: Sequence[Write], before: str) -> None:
        """One REST request per write, plus ``DASHBOARD_RESERVE`` (``RepositoryApi.reserve``)."""
        self.api.reserve(len(writes) + DASHBOARD_RESERVE, before)

    # ------------------------------------------------------------------ dashboard

    def read_dashboard(self) -> str | None:
        """The dashboard issue's body (looked up once per session); None without one."""
        issue = self.dashboard.load(self.config.dashboard_label)
        return issue.body if issue else None

    @property
    def dashboard_url(self) -> str | None:
        return self.dashboard.url

    def write_dashboard(self, text: str) -> None:
        """Create the dashboard issue with ``text``, or edit it when its body differs."""
        self.dashboard.write(text, self.config)

    def report_config_error(self, problems: Sequence[str]) -> None:
        """Show an invalid opt-in file on the dashboard issue (every problem), nothing else.

        The repository is skipped until the file is fixed; the body changes only when the
        problems do, so a repeated run edits nothing.
        """
        self.write_dashboard(config_error_notice(self.config.dashboard_title, problems))

    def report_failure(self, message: str) -> None:
        """Show why this run could not serve the repository on the dashboard issue (when the
        repository keeps one). Pull requests are left as they were; the next run that
        succeeds writes the usual dashboard again."""
        if not self.dashboard_enabled:
            return
        self.write_dashboard(failure_notice(self.config.dashboard_title, message))


__all__ = ["DASHBOARD_RESERVE", "RepositorySession"]
