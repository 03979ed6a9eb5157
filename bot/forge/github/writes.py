"""What ``publish`` writes on GitHub for one scheduled step (``schedule.Step``): push and open,
update, rebuild, close, note a human's commits, delete a branch; and the labels, assignees and
reviewers of the settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from github.GithubException import GithubException
from github.PullRequest import PullRequest

from bot.config.forge import PullRequestConfig
from bot.forge.branches import BranchNames
from bot.forge.checkout import Checkout
from bot.forge.git import Author
from bot.forge.github.api import RepositoryApi, error_messages
from bot.forge.messages import HUMAN_COMMITS_NOTE, closing_comment, commit_message, public
from bot.forge.results import KeyResult
from bot.forge.schedule import Step
from bot.report import Prices, PullRequestState, render_pull_request, replace_state, state_of
from bot.report.proposal import DashboardStatus, Proposal


@dataclass(frozen=True, slots=True)
class PullRequestWriter:
    """One run's writes to one repository's pull requests, with the settings of that run."""

    api: RepositoryApi
    checkout: Checkout
    config: PullRequestConfig
    names: BranchNames
    author: Author
    prices: Prices
    dashboard_url: str | None

    def requests_of(self, step: Step, pull: PullRequest | None) -> int:
        """REST requests the step's writes take (0: the step writes nothing)."""
        config = self.config
        decorate = int(bool(config.labels or config.assignees)) + int(
            bool(config.reviewers or config.team_reviewers)
        )
        kind = step.action.kind
        if kind == "create":
            return 1 + decorate
        repair = decorate if pull is not None and self.undecorated(pull) else 0
        if kind in ("update", "rebuild"):
            return 1 + repair
        if kind in ("close", "note-human"):
            return 2
        return repair if kind == "up-to-date" else 0

    def act(self, step: Step, pull: PullRequest | None, proposal: Proposal | None) -> KeyResult:
        """Write what ``step.action`` says (``lifecycle.ACTIONS``); what happened to the key."""
        key, ref, observed, action = step.key, step.ref, step.observed, step.action
        number = observed.pull.number if observed.pull else None
        url = observed.pull.url if observed.pull else None
        kind = action.kind
        if kind == "create":
            assert proposal is not None
            return self._create(step, proposal)
        if kind in ("update", "rebuild", "up-to-date") and pull and self.undecorated(pull):
            self._decorate(pull, keep=True)  # opened by a run that stopped right after
        if kind in ("update", "rebuild"):
            assert proposal is not None and pull is not None
            head = self._push(proposal, ref, observed.branch_sha)
            title, body = self._rendered(proposal, state_of(proposal).with_head(head))
            self.api.call(f"update #{pull.number}", lambda: pull.edit(title=title, body=body))
            return KeyResult(key, kind, "proposal-open", action.reason, number, url)
        if kind == "close":
            assert pull is not None
            text = closing_comment(action.reason)
            self.api.call(f"comment on #{pull.number}", lambda: pull.create_issue_comment(text))
            self.api.call(f"close #{pull.number}", lambda: pull.edit(state="closed"))
            if observed.branch_sha is not None:
                self.checkout.delete(ref, expected=observed.branch_sha)
            return KeyResult(key, kind, "up-to-date", action.reason, number, url)
        if kind == "delete-branch":
            assert observed.branch_sha is not None
            if self.checkout.head_author_email(ref) != self.config.author_email:
                return KeyResult(
                    key, "nothing", "up-to-date", "a branch someone else made is left alone"
                )
            self.checkout.delete(ref, expected=observed.branch_sha)
            return KeyResult(key, kind, "up-to-date", action.reason)
        if kind == "note-human":
            assert pull is not None
            note = public(HUMAN_COMMITS_NOTE)
            self.api.call(f"comment on #{pull.number}", lambda: pull.create_issue_comment(note))
            old = observed.pull.state_json if observed.pull else None
            base_state = old or (state_of(proposal) if proposal else PullRequestState(key, "", ""))
            body = public(replace_state(pull.body or "", base_state.with_human_noted()))
            self.api.call(f"update #{pull.number}", lambda: pull.edit(body=body))
            return KeyResult(key, kind, "human-edited", action.reason, number, url)
        if kind == "leave-human":
            return KeyResult(key, kind, "human-edited", action.reason, number, url)
        if kind == "suppress":
            message = f"{action.reason}; tick the box to ask for it again"
            return KeyResult(key, kind, "suppressed", message, number, url)
        status: DashboardStatus = (
            "proposal-open" if observed.pull and observed.pull.state == "open" else "up-to-date"
        )
        return KeyResult(key, kind, status, action.reason, number, url)

    def _rendered(self, proposal: Proposal, state: PullRequestState) -> tuple[str, str]:
        """Title and body of ``proposal``'s pull request, as they may be published."""
        title, body = render_pull_request(
            proposal, prices=self.prices, dashboard_url=self.dashboard_url, state=state
        )
        return public(title), public(body)

    def _push(self, proposal: Proposal, ref: str, expected: str | None) -> str:
        return self.checkout.push(
            proposal,
            ref,
            expected,
            message=commit_message(proposal, self.config.commit_prefix),
            author=self.author,
            names=self.names,
        )

    def _create(self, step: Step, proposal: Proposal) -> KeyResult:
        key, ref = step.key, step.ref
        head = self._push(proposal, ref, step.observed.branch_sha)
        title, body = self._rendered(proposal, state_of(proposal).with_head(head))
        base = self.checkout.default_branch or "main"
        repo = self.api.repo

        def open_or_adopt() -> tuple[PullRequest, bool]:
            try:
                created = repo.create_pull(
                    title=title, body=body, head=ref, base=base, draft=self.config.draft
                )
            except GithubException as exc:
                if exc.status != 422 or "already exists" not in error_messages(exc):
                    raise
                # another run opened it between our listing and now: adopt, never duplicate
                listed = repo.get_pulls(state="open", head=f"{self.api.owner}:{ref}", base=base)
                return next(iter(listed)), True
            return created, False

        pull, adopted = self.api.call("open a pull request", open_or_adopt)
        if adopted:
            return KeyResult(
                key, "adopted", "proposal-open", "another run opened it", pull.number, pull.html_url
            )
        self._decorate(pull)
        return KeyResult(
            key, "create", "proposal-open", step.action.reason, pull.number, pull.html_url
        )

    def undecorated(self, pull: PullRequest) -> bool:
        """True when an open bot pull request carries none of the configured labels and none of
        the configured assignees: the run that opened it stopped before decorating it (or a
        human removed them all). Read from the listing, no extra call. With neither labels nor
        assignees configured nothing tells, so nothing is repaired."""
        config = self.config
        if pull.state != "open" or not (config.labels or config.assignees):
            return False
        labels = {label.name for label in pull.labels}
        assignees = {user.login for user in pull.assignees}
        return not (labels & set(config.labels) or assignees & set(config.assignees))

    def _decorate(self, pull: PullRequest, *, keep: bool = False) -> None:
        """Labels, assignees and review requests of the settings; ``keep``: after the labels
        and assignees the pull request already has (a human's stay)."""
        config = self.config
        if config.labels or config.assignees:
            issue = self.api.repo.get_issue(pull.number)
            had_labels = [label.name for label in pull.labels] if keep else []
            had_assignees = [user.login for user in pull.assignees] if keep else []
            kwargs: dict[str, Any] = {}
            if config.labels:
                kwargs["labels"] = list(dict.fromkeys([*had_labels, *config.labels]))
            if config.assignees:
                kwargs["assignees"] = list(dict.fromkeys([*had_assignees, *config.assignees]))
            self.api.call(f"label #{pull.number}", lambda: issue.edit(**kwargs))
        if config.reviewers or config.team_reviewers:
            self.api.call(
                f"request reviews on #{pull.number}",
                lambda: pull.create_review_request(
                    reviewers=list(config.reviewers), team_reviewers=list(config.team_reviewers)
                ),
            )


__all__ = ["PullRequestWriter"]
