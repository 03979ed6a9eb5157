"""The bot's pull requests on GitHub: one listing per run, what they remember
(``previous.py``), and what ``publish`` observes of each branch key (``lifecycle.Observed``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from github.PullRequest import PullRequest

from bot.forge.branches import BranchNames
from bot.forge.github.api import RepositoryApi
from bot.forge.lifecycle import Observed, ObservedPull, PullState
from bot.forge.previous import PreviousProposal, WorkloadMemory, workload_memory
from bot.report import parse_state


class BotPulls:
    """Every bot pull request of one repository: listed once, kept until ``forget``.

    ``previous_proposals`` / ``workload_memory`` (before planning) and ``publish`` (after it)
    share the listing, so a run lists pull requests once.
    """

    def __init__(self, api: RepositoryApi) -> None:
        self.api = api
        self._listing: list[PullRequest] | None = None

    def listing(self, names: BranchNames) -> list[PullRequest]:
        """Every bot pull request, newest first: one paginated listing."""
        if self._listing is not None:
            return self._listing
        owner = self.api.owner
        found: list[PullRequest] = []

        def listing() -> None:
            for pull in self.api.repo.get_pulls(state="all", sort="created", direction="desc"):
                ref = pull.head.ref
                if not names.is_bot(ref) or pull.head.label != f"{owner}:{ref}":
                    continue  # not a bot branch, or a fork's branch of the same name
                found.append(pull)

        self.api.call("list pull requests", listing)
        self._listing = found
        return found

    def forget(self) -> None:
        """Drop the listing: a later call lists again."""
        self._listing = None

    def latest(self, names: BranchNames) -> dict[str, PullRequest]:
        """The latest pull request per bot branch (an open one wins)."""
        found: dict[str, PullRequest] = {}
        for pull in self.listing(names):
            ref = pull.head.ref
            current = found.get(ref)
            if current is None or (current.state != "open" and pull.state == "open"):
                found[ref] = pull
        return found

    def previous_proposals(self, names: BranchNames) -> tuple[PreviousProposal, ...]:
        """Every bot pull request of the repository, newest first, with its parsed state."""
        out = []
        for pull in self.listing(names):
            state = parse_state(pull.body)
            ref = pull.head.ref
            merged_at, closed_at = pull.merged_at, pull.closed_at
            out.append(
                PreviousProposal(
                    key=state.key if state else names.key_of(ref),
                    number=pull.number,
                    branch=ref,
                    open=pull.state == "open",
                    merged=merged_at is not None,
                    state=state,
                    merged_at_s=merged_at.timestamp() if merged_at else None,
                    closed_at_s=closed_at.timestamp() if closed_at else None,
                    url=pull.html_url,
                )
            )
        return tuple(out)

    def workload_memory(self, names: BranchNames) -> dict[str, WorkloadMemory]:
        """Per workload key, what merged bot pull requests tell the engine (``previous.py``)."""
        return workload_memory(self.previous_proposals(names))

    def human_commits(self, pull: PullRequest, bot_email: str) -> bool:
        """Whether a commit of ``pull`` has an author other than ``bot_email`` (one call)."""
        commits = self.api.call(f"list commits of #{pull.number}", lambda: list(pull.get_commits()))
        return any(c.commit.author.email != bot_email for c in commits)

    def observe(
        self,
        key: str,
        ref: str,
        pull: PullRequest | None,
        remote: Mapping[str, str],
        requested: Collection[str],
        *,
        bot_email: str,
        in_error: Collection[str] = (),
    ) -> Observed:
        """What ``publish`` sees of branch ``ref`` of ``key``: its latest pull request (its
        commits read only when the branch moved away from the commit the bot pushed), its SHA
        on the remote, whether a human ticked it, whether a workload of it is in error."""
        observed_pull = None
        if pull is not None:
            merged = pull.merged_at is not None
            state: PullState = (
                "open" if pull.state == "open" else ("merged" if merged else "closed")
            )
            body_state = parse_state(pull.body)
            # the branch still at the commit the bot pushed cannot hold human commits
            pushed = body_state is not None and body_state.head is not None
            untouched = pushed and remote.get(ref) == (body_state.head if body_state else None)
            human = (
                self.human_commits(pull, bot_email) if state == "open" and not untouched else False
            )
            observed_pull = ObservedPull(
                number=pull.number,
                state=state,
                url=pull.html_url,
                state_json=body_state,
                human_commits=human,
                head_sha=pull.head.sha,
            )
        return Observed(
            key,
            observed_pull,
            remote.get(ref),
            requested=key in requested,
            in_error=key in in_error,
        )


__all__ = ["BotPulls"]
