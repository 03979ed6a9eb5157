"""Every text the bot publishes on a forge besides rendered bodies, and ``public``, the step
each one passes (titles, bodies, comments, commit messages)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.redaction import redact
from bot.report.markdown import code, escape
from bot.report.numbers import field_change
from bot.report.proposal import Proposal

MAX_PROBLEM_CHARS = 2_000
"""Longest failure message shown on a dashboard (an issue body holds at most 65,536)."""

HUMAN_COMMITS_NOTE = (
    "This branch has commits that the bot did not make, so the bot will not push to it again. "
    "Merge or close this pull request when you are done; the bot proposes again after that."
)
"""The one comment on a pull request whose branch has a human's commits."""


def public(text: str) -> str:
    """``text`` as it may be published on a forge (every title, body, comment and commit
    message passes here): ``bot.redaction.redact``, with Markdown escaping as one more
    encoding of each secret (bodies escape what they quote)."""
    return redact(text, encodings=(escape,))


def commit_message(proposal: Proposal, prefix: str) -> str:
    """The bot commit's message: ``prefix`` and the title, then one line per value changed."""
    lines = [f"{prefix} {proposal.title}".strip(), ""]
    for c in proposal.change_set.changes:
        where = f"{c.ref.kind}/{c.ref.namespace}/{c.ref.name}@{c.ref.environment}"
        change = field_change(c.field, c.current, c.proposed)
        lines.append(f"- {where} {c.container or ''} {c.field}: {change}".replace("  ", " "))
    return public("\n".join(lines) + "\n")


def closing_comment(reason: str) -> str:
    """The comment on a pull request the bot closes."""
    return public(
        f"Closing: {reason}. The bot's branch is deleted; a new pull request "
        "opens if a change is needed again."
    )


def notice(title: str, intro: str, problems: Sequence[str], outro: str) -> str:
    """A dashboard that shows only why the repository was not served: ``problems`` listed."""
    lines = [intro, "", *(f"- {code(problem)}" for problem in problems), "", outro]
    return f"# {escape(title)}\n\n" + "\n".join(lines) + "\n"


def config_error_notice(title: str, problems: Sequence[str]) -> str:
    """The dashboard of a repository whose opt-in file is invalid (every problem)."""
    return notice(
        title,
        "The opt-in file of this repository is invalid, so tortoise-bot skips the repository "
        "until it is fixed. Each problem names the key and the line:",
        problems,
        "`tortoise-bot validate .` shows the same list locally.",
    )


def failure_notice(title: str, message: str) -> str:
    """The dashboard of a repository this run could not serve (``message`` cut to
    ``MAX_PROBLEM_CHARS``)."""
    return notice(
        title,
        "tortoise-bot could not serve this repository in its last run; its pull requests "
        "were left as they were. The error:",
        [message[:MAX_PROBLEM_CHARS]],
        "The next run tries again.",
    )


__all__ = [
    "HUMAN_COMMITS_NOTE",
    "MAX_PROBLEM_CHARS",
    "closing_comment",
    "commit_message",
    "config_error_notice",
    "failure_notice",
    "notice",
    "public",
]
