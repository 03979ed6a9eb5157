"""One repository in one run on GitHub (``bot.forge.protocol.ForgeSession``): its checkout,
the bot's pull requests (``listing``), the dashboard issue (``dashboard``), and ``publish``,
which follows the pure ``bot.forge.schedule`` and writes through ``writes``."""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from pathlib import Path

from github.PullRequest import PullRequest

from bot.config.forge import PullRequestConfig
from bot.forge.branches import BranchNames
from bot.forge.checkout import Checkout
from bot.forge.dashboard import dashboard_body
from bot.forge.errors import ForgeError, RateLimitError
from bot.forge.git import Author, Git
from bot.forge.github.api import RepositoryApi
from bot.forge.github.dashboard import DashboardIssue
from bot.forge.github.listing import BotPulls
from bot.forge.github.writes import PullRequestWriter
from bot.forge.lifecycle import ThresholdCheck, decide, same_proposal
from bot.forge.messages import config_error_notice, failure_notice
from bot.forge.previous import PreviousProposal, WorkloadMemory
from bot.forge.results import KeyResult, PublishReport, WorkloadStatus
from bot.forge.schedule import Slots, Step, branch_keys, ordered
from bot.report import Prices, parse_state, state_of
from bot.report.proposal import Proposal

LOG = logging.getLogger(__name__)

DASHBOARD_RESERVE = 3
"""REST requests kept for the dashboard when a run decides whether it can afford one more pull
request: looking it up, creating it and checking that no other run created one meanwhile."""


class RepositorySession:
    """One repository in one run: checkout, publish proposals, keep the dashboard."""

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
        self.dashboard = DashboardIssue(api)
        self._checkout: Checkout | None = None
        self.configure(config, dashboard=dashboard)

    @property
    def full_name(self) -> str:
        return self.api.full_name

    def configure(self, pull_requests: PullRequestConfig, *, dashboard: bool = True) -> None:
        """Apply the repository's own pull-request settings, read from its checkout.

        The opt-in file lives in the repository, so it is known only after ``checkout()``;
        call this before ``publish`` and ``update_dashboard``.
        """
        self.config = pull_requests
        self.names = BranchNames(pull_requests.branch_prefix, pull_requests.branch_template)
        self.author = Author(pull_requests.author_name, pull_requests.author_email)
        self.dashboard_enabled = dashboard

    @property
    def prices(self) -> Prices:
        cost = self.config.cost
        return Prices(cost.cpu_core_month, cost.memory_gib_month, cost.currency)

    # ------------------------------------------------------------------ checkout

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
        return self.pulls.previous_proposals(self.names)

    def previous(self, key: str) -> PreviousProposal | None:
        """The latest bot pull request of change-set ``key`` (None when there was none)."""
        return next((p for p in self.previous_proposals() if p.key == key), None)

    def workload_memory(self) -> dict[str, WorkloadMemory]:
        """Per workload key, what merged bot pull requests tell the engine (``previous.py``)."""
        return self.pulls.workload_memory(self.names)

    # ------------------------------------------------------------------ publish

    def publish(
        self,
        proposals: Sequence[Proposal],
        *,
        within_thresholds: ThresholdCheck = same_proposal,
        in_error: Collection[str] = (),
    ) -> PublishReport:
        """Bring the repository's bot pull requests in line with ``proposals`` (lifecycle table).

        Closes and updates come first, then new pull requests: dashboard requests first, then
        by key, while fewer than ``max_open`` bot pull requests are open and fewer than
        ``max_new_per_run`` were opened in this run (requests ignore both limits;
        ``bot.forge.schedule``). A rate limit stops the run; every key not handled is listed in
        ``not_done``. ``in_error``: keys with a workload in error in this run; without a
        proposal they are left as they are.
        """
        checkout = self._checkout
        assert checkout is not None, "call checkout() first"
        names = self.names
        results: list[KeyResult] = []
        not_done: list[str] = []
        try:
            remote = checkout.bot_branches(names)
            pulls = self.pulls.latest(names)
            requested = self.ticked_keys()
        except RateLimitError as exc:
            return PublishReport((), tuple(p.key for p in proposals), str(exc))
        finally:
            self.pulls.forget()  # a later call lists again
        by_key = {p.key: p for p in proposals}
        keys = branch_keys(
            {names.of(k): k for k in by_key},
            {ref: _key_of(pull, names) for ref, pull in pulls.items()},
            {ref: names.key_of(ref) for ref in remote},
        )
        steps: list[Step] = []
        stopped: str | None = None
        for ref, key in sorted(keys.items(), key=lambda kv: kv[1]):
            try:
                observed = self.pulls.observe(
                    key,
                    ref,
                    pulls.get(ref),
                    remote,
                    requested,
                    bot_email=self.config.author_email,
                    in_error=in_error,
                )
            except RateLimitError as exc:
                stopped = str(exc)
                break
            except ForgeError as exc:
                results.append(KeyResult(key, "error", "error", str(exc), done=False))
                continue
            proposal = by_key.get(key)
            action = decide(
                observed,
                state_of(proposal) if proposal else None,
                within_thresholds=within_thresholds,
            )
            steps.append(Step(key, ref, observed, action))
        if stopped:
            handled = {r.key for r in results} | {s.key for s in steps}
            not_done.extend(k for k in keys.values() if k not in handled)
        open_now = sum(1 for p in pulls.values() if p.state == "open")
        slots = Slots(self.config.max_open, self.config.max_new_per_run, open_now)
        writer = PullRequestWriter(
            self.api,
            checkout,
            self.config,
            names,
            self.author,
            self.prices,
            self.dashboard_url(),
        )
        for step in ordered(steps):
            if stopped:
                not_done.append(step.key)
                continue
            wait = slots.wait_reason(step)
            if wait is not None:
                results.append(KeyResult(step.key, "pending", "pending", wait))
                continue
            kind, pull = step.action.kind, pulls.get(step.ref)
            try:
                needed = writer.requests_of(step, pull)
                if needed:
                    self.api.reserve(needed + DASHBOARD_RESERVE, f"{kind} {step.key}")
                result = writer.act(step, pull, by_key.get(step.key))
            except RateLimitError as exc:
                stopped = str(exc)
                not_done.append(step.key)
                continue
            except ForgeError as exc:
                LOG.warning("%s", exc)
                results.append(KeyResult(step.key, kind, "error", str(exc), done=False))
                continue
            results.append(result)
            slots = slots.after(kind)
        return PublishReport(tuple(results), tuple(not_done), stopped)

    # ------------------------------------------------------------------ dashboard

    def ticked_keys(self) -> set[str]:
        """Keys a human ticked on the dashboard (read once per session)."""
        if not self.dashboard_enabled:
            return set()
        return self.dashboard.ticked_keys(self.config.dashboard_label)

    def dashboard_url(self) -> str | None:
        return self.dashboard.url if self.dashboard_enabled else None

    def update_dashboard(
        self, statuses: Sequence[WorkloadStatus], report: PublishReport
    ) -> set[str]:
        """Create or edit the dashboard issue (only when its body changes); the ticked keys read."""
        if not self.dashboard_enabled:
            return set()
        ticked = self.ticked_keys()
        body = dashboard_body(
            statuses, report, title=self.config.dashboard_title, prices=self.prices
        )
        self.dashboard.write(body, self.config)
        return ticked

    def report_config_error(self, problems: Sequence[str]) -> None:
        """Show an invalid opt-in file on the dashboard issue (every problem), nothing else.

        The repository is skipped until the file is fixed; the body changes only when the
        problems do, so a repeated run edits nothing.
        """
        self.dashboard.write(
            config_error_notice(self.config.dashboard_title, problems), self.config
        )

    def report_failure(self, message: str) -> None:
        """Show why this run could not serve the repository on the dashboard issue (when the
        repository keeps one). Pull requests are left as they were; the next run that
        succeeds writes the usual dashboard again."""
        if not self.dashboard_enabled:
            return
        self.dashboard.write(failure_notice(self.config.dashboard_title, message), self.config)


def _key_of(pull: PullRequest, names: BranchNames) -> str:
    """The change-set key of a listed bot pull request: its body state's, else its branch's."""
    state = parse_state(pull.body)
    return state.key if state else names.key_of(pull.head.ref)


__all__ = ["DASHBOARD_RESERVE", "RepositorySession"]
