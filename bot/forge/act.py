"""What ``publish`` writes for one scheduled step (``schedule.Step``), on any forge's
primitives (``protocol.PullRequestPlatform``): push and open, update, rebuild, close, note a
human's commits, delete a branch; and the labels, assignees and reviewers of the settings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.config.forge import PullRequestConfig
from bot.forge.git import Author
from bot.forge.messages import HUMAN_COMMITS_NOTE, closing_comment, commit_message, public
from bot.forge.protocol import PullRequestPlatform
from bot.forge.pulls import ListedPull, Write
from bot.forge.results import KeyResult
from bot.forge.schedule import Step
from bot.report import Prices, PullRequestState, render_pull_request, replace_state, state_of
from bot.report.proposal import DashboardStatus, Proposal


def prices_of(config: PullRequestConfig) -> Prices:
    """The prices of the repository's cost settings (per core-month and GiB-month)."""
    cost = config.cost
    return Prices(
        cost.cpu_core_month, cost.memory_gib_month, cost.currency, dict(cost.extended_resources)
    )


@dataclass(frozen=True, slots=True)
class StepWriter:
    """One run's writes to one repository's pull requests, with the settings of that run."""

    platform: PullRequestPlatform
    config: PullRequestConfig
    dashboard_url: str | None

    @property
    def author(self) -> Author:
        return Author(self.config.author_name, self.config.author_email)

    def decoration(self, extra: Sequence[str] = ()) -> tuple[Write, ...]:
        """The writes that decorate a pull request: labels (with the proposal's own
        ``extra``) and assignees, review requests."""
        config = self.config
        labeled = config.labels or config.assignees or extra
        labels: tuple[Write, ...] = ("label",) if labeled else ()
        reviews: tuple[Write, ...] = (
            ("review",) if config.reviewers or config.team_reviewers else ()
        )
        return labels + reviews

    def writes_of(
        self, step: Step, pull: ListedPull | None, proposal: Proposal | None = None
    ) -> tuple[Write, ...]:
        """The writes the step makes (none: the step writes nothing through the API)."""
        kind = step.action.kind
        if kind == "create":
            return ("open", *self.decoration(proposal.labels if proposal else ()))
        repair = self.decoration() if pull is not None and self.undecorated(pull) else ()
        if kind in ("update", "rebuild"):
            return ("edit", *repair)
        if kind == "close":
            return ("comment", "close")
        if kind == "note-human":
            return ("comment", "edit")
        return repair if kind == "up-to-date" else ()

    def act(self, step: Step, pull: ListedPull | None, proposal: Proposal | None) -> KeyResult:
        """Write what ``step.action`` says (``lifecycle.ACTIONS``); what happened to the key."""
        platform = self.platform
        key, ref, observed, action = step.key, step.ref, step.observed, step.action
        number = observed.pull.number if observed.pull else None
        url = observed.pull.url if observed.pull else None
        kind = action.kind
        if kind == "create":
            assert proposal is not None
            return self._create(step, proposal)
        if kind in ("update", "rebuild", "up-to-date") and pull and self.undecorated(pull):
            self._decorate(pull.number, pull)  # opened by a run that stopped right after
        if kind in ("update", "rebuild"):
            assert proposal is not None and pull is not None
            head = self._push(proposal, ref, observed.branch_sha)
            title, body = self._rendered(proposal, state_of(proposal).with_head(head))
            platform.update_pull(pull.number, title=title, body=body)
            return KeyResult(key, kind, "proposal-open", action.reason, number, url)
        if kind == "close":
            assert pull is not None
            platform.comment(pull.number, closing_comment(action.reason))
            platform.close_pull(pull.number)
            if observed.branch_sha is not None:
                platform.delete_branch(ref, expected=observed.branch_sha)
            return KeyResult(key, kind, "up-to-date", action.reason, number, url)
        if kind == "delete-branch":
            assert observed.branch_sha is not None
            if platform.branch_author_email(ref) != self.config.author_email:
                return KeyResult(
                    key, "nothing", "up-to-date", "a branch someone else made is left alone"
                )
            platform.delete_branch(ref, expected=observed.branch_sha)
            return KeyResult(key, kind, "up-to-date", action.reason)
        if kind == "note-human":
            assert pull is not None
            platform.comment(pull.number, public(HUMAN_COMMITS_NOTE))
            old = observed.pull.state_json if observed.pull else None
            base_state = old or (state_of(proposal) if proposal else PullRequestState(key, "", ""))
            body = public(replace_state(pull.body or "", base_state.with_human_noted()))
            platform.update_pull(pull.number, body=body)
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
            proposal,
            prices=prices_of(self.config),
            dashboard_url=self.dashboard_url,
            state=state,
        )
        return public(title), public(body)

    def _push(self, proposal: Proposal, ref: str, expected: str | None) -> str:
        return self.platform.push_branch(
            proposal,
            ref,
            expected,
            message=commit_message(proposal, self.config.commit_prefix),
            author=self.author,
        )

    def _create(self, step: Step, proposal: Proposal) -> KeyResult:
        key, ref = step.key, step.ref
        head = self._push(proposal, ref, step.observed.branch_sha)
        title, body = self._rendered(proposal, state_of(proposal).with_head(head))
        opened = self.platform.open_pull(ref, title=title, body=body, draft=self.config.draft)
        if opened.adopted:
            return KeyResult(
                key, "adopted", "proposal-open", "another run opened it", opened.number, opened.url
            )
        self._decorate(opened.number, extra=proposal.labels)
        return KeyResult(
            key, "create", "proposal-open", step.action.reason, opened.number, opened.url
        )

    def undecorated(self, pull: ListedPull) -> bool:
        """True when an open bot pull request carries none of the configured labels and none of
        the configured assignees: the run that opened it stopped before decorating it (or a
        human removed them all). Read from the listing, no extra call. With neither labels nor
        assignees configured nothing tells, so nothing is repaired."""
        config = self.config
        if pull.state != "open" or not (config.labels or config.assignees):
            return False
        return not (
            set(pull.labels) & set(config.labels) or set(pull.assignees) & set(config.assignees)
        )

    def _decorate(
        self, number: int, kept: ListedPull | None = None, *, extra: Sequence[str] = ()
    ) -> None:
        """Labels (the settings' and the proposal's own ``extra``), assignees and review
        requests of the settings; after the labels and assignees ``kept`` already has (a
        human's stay)."""
        config = self.config
        wanted = [*config.labels, *extra]
        if wanted or config.assignees:
            had_labels: Sequence[str] = kept.labels if kept else ()
            had_assignees: Sequence[str] = kept.assignees if kept else ()
            self.platform.set_labels(
                number,
                labels=list(dict.fromkeys([*had_labels, *wanted])) if wanted else None,
                assignees=list(dict.fromkeys([*had_assignees, *config.assignees]))
                if config.assignees
                else None,
            )
        if config.reviewers or config.team_reviewers:
            self.platform.request_reviews(
                number,
                reviewers=list(config.reviewers),
                team_reviewers=list(config.team_reviewers),
            )


__all__ = ["StepWriter", "prices_of"]
