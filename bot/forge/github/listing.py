"""The bot's pull requests on GitHub: one listing per run, as ``pulls.ListedPull`` values, and
the PyGithub objects behind them for the writes (``writes``)."""

from __future__ import annotations

from github.PullRequest import PullRequest

from bot.forge.branches import BranchNames
from bot.forge.github.api import RepositoryApi
from bot.forge.lifecycle import PullState
from bot.forge.pulls import ListedPull


def listed(pull: PullRequest) -> ListedPull:
    """What ``publish`` reads of a listed pull request (all in the listing: no request)."""
    merged_at, closed_at = pull.merged_at, pull.closed_at
    state: PullState = (
        "open" if pull.state == "open" else ("merged" if merged_at is not None else "closed")
    )
    return ListedPull(
        number=pull.number,
        branch=pull.head.ref,
        state=state,
        body=pull.body,
        url=pull.html_url,
        head_sha=pull.head.sha,
        labels=tuple(label.name for label in pull.labels),
        assignees=tuple(user.login for user in pull.assignees),
        merged_at_s=merged_at.timestamp() if merged_at else None,
        closed_at_s=closed_at.timestamp() if closed_at else None,
    )


class BotPulls:
    """Every bot pull request of one repository: listed once, kept until ``take``.

    ``workload_memory`` (before planning) and ``publish`` (after it) share the listing, so a
    run lists pull requests once.
    """

    def __init__(self, api: RepositoryApi) -> None:
        self.api = api
        self._listing: tuple[ListedPull, ...] | None = None
        self.objects: dict[int, PullRequest] = {}
        """Number -> the PyGithub object of each pull request listed or opened in this run."""

    def listing(self, names: BranchNames) -> tuple[ListedPull, ...]:
        """Every bot pull request, newest first: one paginated listing."""
        if self._listing is not None:
            return self._listing
        owner = self.api.owner
        found: list[PullRequest] = []

        def listing() -> tuple[ListedPull, ...]:
            for pull in self.api.repo.get_pulls(state="all", sort="created", direction="desc"):
                ref = pull.head.ref
                if not names.is_bot(ref) or pull.head.label != f"{owner}:{ref}":
                    continue  # not a bot branch, or a fork's branch of the same name
                found.append(pull)
            return tuple(listed(pull) for pull in found)

        self._listing = self.api.call("list pull requests", listing)
        self.objects = {pull.number: pull for pull in found}
        return self._listing

    def take(self, names: BranchNames) -> tuple[ListedPull, ...]:
        """The listing, then forget it: a later call lists again."""
        try:
            return self.listing(names)
        finally:
            self._listing = None

    def object(self, number: int) -> PullRequest:
        """The PyGithub object of pull request ``number`` (listed or opened in this run)."""
        return self.objects[number]

    def commit_emails(self, pull: ListedPull) -> tuple[str, ...]:
        """The author e-mail of each commit of ``pull`` (one call)."""
        obj = self.object(pull.number)
        commits = self.api.call(f"list commits of #{pull.number}", lambda: list(obj.get_commits()))
        return tuple(c.commit.author.email for c in commits)


__all__ = ["BotPulls", "listed"]
