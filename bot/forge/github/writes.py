"""The writes of ``protocol.PullRequestPlatform`` on GitHub's pull requests: open (adopting one
another run opened meanwhile), edit, comment (and list and edit comments), close, labels and
assignees, review requests. Each is one REST request."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from github.GithubException import GithubException
from github.IssueComment import IssueComment
from github.PullRequest import PullRequest

from bot.forge.github.api import RepositoryApi, error_messages
from bot.forge.github.listing import BotPulls
from bot.forge.pulls import ListedComment, OpenedPull


@dataclass(frozen=True, slots=True)
class PullRequestWrites:
    """Writes to one repository's pull requests, on the objects ``pulls`` listed or opened."""

    api: RepositoryApi
    pulls: BotPulls
    comment_objects: dict[int, IssueComment] = field(default_factory=dict)
    """The comments ``comments`` listed, by id, so editing one is one request."""

    def open(self, ref: str, base: str, *, title: str, body: str, draft: bool) -> OpenedPull:
        """Open a pull request from ``ref`` onto ``base``; GitHub's 422 "already exists" means
        another run opened it between our listing and now: that one is adopted."""
        repo = self.api.repo

        def open_or_adopt() -> tuple[PullRequest, bool]:
            try:
                created = repo.create_pull(title=title, body=body, head=ref, base=base, draft=draft)
            except GithubException as exc:
                if exc.status != 422 or "already exists" not in error_messages(exc):
                    raise
                # another run opened it between our listing and now: adopt, never duplicate
                listed = repo.get_pulls(state="open", head=f"{self.api.owner}:{ref}", base=base)
                return next(iter(listed)), True
            return created, False

        pull, adopted = self.api.call("open a pull request", open_or_adopt)
        self.pulls.objects[pull.number] = pull
        return OpenedPull(pull.number, pull.html_url, adopted)

    def update(self, number: int, *, title: str | None = None, body: str | None = None) -> None:
        pull = self.pulls.object(number)
        kwargs: dict[str, Any] = {}
        if title is not None:
            kwargs["title"] = title
        if body is not None:
            kwargs["body"] = body
        self.api.call(f"update #{number}", lambda: pull.edit(**kwargs))

    def comment(self, number: int, text: str) -> None:
        pull = self.pulls.object(number)
        self.api.call(f"comment on #{number}", lambda: pull.create_issue_comment(text))

    def comments(self, number: int) -> tuple[ListedComment, ...]:
        """Every comment on pull request ``number``, oldest first."""
        pull = self.pulls.object(number)
        found = self.api.call(
            f"list comments of #{number}", lambda: list(pull.get_issue_comments())
        )
        self.comment_objects.update({c.id: c for c in found})
        return tuple(ListedComment(c.id, c.body or "") for c in found)

    def edit_comment(self, comment_id: int, text: str) -> None:
        """Replace the text of a comment ``comments`` listed."""
        comment = self.comment_objects[comment_id]
        self.api.call(f"edit comment {comment_id}", lambda: comment.edit(text))

    def close(self, number: int) -> None:
        pull = self.pulls.object(number)
        self.api.call(f"close #{number}", lambda: pull.edit(state="closed"))

    def set_labels(
        self, number: int, *, labels: Sequence[str] | None, assignees: Sequence[str] | None
    ) -> None:
        """Labels and assignees in one edit of the pull request's issue."""
        issue = self.api.repo.get_issue(number)
        kwargs: dict[str, Any] = {}
        if labels is not None:
            kwargs["labels"] = list(labels)
        if assignees is not None:
            kwargs["assignees"] = list(assignees)
        self.api.call(f"label #{number}", lambda: issue.edit(**kwargs))

    def request_reviews(
        self, number: int, *, reviewers: Sequence[str], team_reviewers: Sequence[str]
    ) -> None:
        pull = self.pulls.object(number)
        self.api.call(
            f"request reviews on #{number}",
            lambda: pull.create_review_request(
                reviewers=list(reviewers), team_reviewers=list(team_reviewers)
            ),
        )


__all__ = ["PullRequestWrites"]
