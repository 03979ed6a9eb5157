"""The dashboard on GitHub: one open issue with the dashboard label, looked up once per run,
created or edited only when its body changes."""

from __future__ import annotations

import logging

from github.Issue import Issue

from bot.config.forge import PullRequestConfig
from bot.forge.github.api import RepositoryApi
from bot.forge.messages import public

LOG = logging.getLogger(__name__)


class DashboardIssue:
    """One repository's dashboard issue (``None`` until created)."""

    def __init__(self, api: RepositoryApi) -> None:
        self.api = api
        self._issue: Issue | None = None
        self._loaded = False

    def oldest(self, label: str) -> Issue | None:
        """The oldest open issue with the dashboard label (one listing call)."""

        def lookup() -> Issue | None:
            issues = self.api.repo.get_issues(
                state="open", labels=[label], sort="created", direction="asc"
            )
            return next(iter(issues), None)

        return self.api.call("find the dashboard issue", lookup)

    def load(self, label: str) -> Issue | None:
        """The dashboard, looked up on first use."""
        if not self._loaded:
            self._issue = self.oldest(label)
            self._loaded = True
        return self._issue

    @property
    def url(self) -> str | None:
        """The dashboard's address, once looked up or created."""
        return self._issue.html_url if self._issue is not None else None

    def write(self, text: str, config: PullRequestConfig) -> None:
        """Create the dashboard issue with ``text``, or edit it when its body differs."""
        body = public(text)
        issue = self.load(config.dashboard_label)
        if issue is None:
            label, title = config.dashboard_label, config.dashboard_title
            created = self.api.call(
                "create the dashboard issue",
                lambda: self.api.repo.create_issue(title=title, body=body, labels=[label]),
            )
            self._issue = self._one(created, body, label)
        elif issue.body != body:
            self.api.call("update the dashboard issue", lambda: issue.edit(body=body))

    def _one(self, created: Issue, body: str, label: str) -> Issue:
        """The dashboard to keep after creating ``created``: itself, or the older one another
        run created meanwhile (both found none); then ``created`` is closed as a duplicate and
        its body goes to the older one. The oldest open dashboard always wins, so two runs
        that both created one agree on which stays."""
        oldest = self.oldest(label)
        if oldest is None or oldest.number == created.number:
            return created
        LOG.warning(
            "%s: another run created dashboard #%d at the same time; #%d is closed",
            self.api.full_name,
            oldest.number,
            created.number,
        )
        self.api.call(
            f"close #{created.number}",
            lambda: created.edit(state="closed", state_reason="duplicate"),
        )
        if oldest.body != body:
            self.api.call("update the dashboard issue", lambda: oldest.edit(body=body))
        return oldest


__all__ = ["DashboardIssue"]
