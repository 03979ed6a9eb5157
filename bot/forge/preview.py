"""A forge that writes files: what a run would publish, previewed without a forge or a token.

``PreviewForge`` serves local checkouts (``--repo PATH``, the demo) and implements the
primitives of ``bot.forge.protocol``, so ``bot.forge.publish`` runs the same lifecycle as on
GitHub; where GitHub's session would push, open a pull request, label it or write the
dashboard issue, this one writes files under the output folder:

- ``index.md``: every repository, its pull requests and its dashboard, or why it has none;
- ``<repository>/dashboard.md``: the dashboard issue's body;
- ``<repository>/NN-<key>.md``: one pull request: title, branch, labels, assignees,
  reviewers, draft, then its body as Markdown, as the forge would receive them;
- ``<repository>/NN-<key>.patch``: the commit the bot would push, as ``git format-patch``
  writes it (``git am`` or ``git apply`` takes it).

A preview starts from nothing on the forge: no bot branch, no pull request, no dashboard, so
every change set is a new pull request (within ``max_open`` and ``max_new_per_run``) and the
engine has no memory of merged ones. The head commit recorded in a body's hidden state is a
digest of the patch, not a commit of the repository. No network is used; each file is
written whole (temporary file, then rename).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bot.config.forge import PullRequestConfig
from bot.forge.branches import BranchNames
from bot.forge.git import Author
from bot.forge.messages import config_error_notice, failure_notice
from bot.forge.previous import PreviousProposal, WorkloadMemory
from bot.forge.pulls import ListedComment, ListedPull, OpenedPull, Write
from bot.report.markdown import escape
from bot.report.proposal import Proposal

DASHBOARD_FILE = "dashboard.md"
INDEX_FILE = "index.md"
PREVIEW_SUFFIXES = (".md", ".patch")
"""What a preview writes in a repository's folder; only such files are removed before the
folder is written again, so a stale pull request never lingers and nothing else is touched."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def file_stem(text: str) -> str:
    """``text`` as one safe file-name part (``/`` and other characters become ``-``)."""
    return _UNSAFE.sub("-", text).strip("-.") or "_"


def write_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole: a temporary file beside it, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def format_patch(diff: str, *, message: str, author: Author, commit: str) -> str:
    """The commit as ``git format-patch`` writes it: mail headers, the message, the diff."""
    subject, _, rest = message.partition("\n")
    return (
        f"From {commit} Mon Sep 17 00:00:00 2001\n"
        f"From: {author.name} <{author.email}>\n"
        f"Subject: [PATCH] {subject}\n\n"
        f"{rest.strip()}\n---\n{diff}-- \ntortoise-bot preview\n"
    )


@dataclass(slots=True)
class PreviewPull:
    """One pull request the run would open: where its files are and how it is decorated."""

    number: int
    ref: str
    title: str
    body: str
    draft: bool
    stem: str
    labels: tuple[str, ...] = ()
    assignees: tuple[str, ...] = ()
    reviewers: tuple[str, ...] = ()
    team_reviewers: tuple[str, ...] = ()

    @property
    def markdown_file(self) -> str:
        return f"{self.stem}.md"

    @property
    def patch_file(self) -> str:
        return f"{self.stem}.patch"

    def markdown(self) -> str:
        """The pull request's file: its fields, then the body as the forge receives it."""

        def names(values: Sequence[str]) -> str:
            return ", ".join(f"`{v}`" for v in values) or "none"

        return (
            f"# {escape(self.title)}\n\n"
            f"- branch: `{self.ref}`\n"
            f"- draft: {'yes' if self.draft else 'no'}\n"
            f"- labels: {names(self.labels)}\n"
            f"- assignees: {names(self.assignees)}\n"
            f"- reviewers: {names([*self.reviewers, *self.team_reviewers])}\n"
            f"- commit: [{self.patch_file}]({self.patch_file})\n\n"
            "---\n\n"
            f"{self.body}"
        )


@dataclass(slots=True)
class PreviewSession:
    """One repository of a preview (``bot.forge.protocol.ForgeSession``): a copy of the local
    checkout, nothing on the forge, and every write recorded as files in ``folder``."""

    full_name: str
    source: Path
    folder: Path
    workdir: Path
    config: PullRequestConfig = field(default_factory=PullRequestConfig)
    dashboard_enabled: bool = True
    pulls: list[PreviewPull] = field(default_factory=list)
    dashboard_url: str | None = None
    patches: dict[str, str] = field(default_factory=dict)
    """Branch -> its patch, pushed before the pull request opens."""

    # ------------------------------------------------------------------ session

    def checkout(self) -> Path:
        """A copy of the local checkout (its ``.git`` left out): the run plans on the copy and
        the source stays as it was."""
        path = self.workdir / file_stem(self.full_name)
        if path.exists():
            shutil.rmtree(path)
        output = self.folder.parent.resolve()

        def ignored(directory: str, names: list[str]) -> set[str]:
            """``.git``, and the preview's own output when it lies inside the checkout."""
            return {n for n in names if n == ".git" or Path(directory, n).resolve() == output}

        shutil.copytree(self.source, path, symlinks=True, ignore=ignored)
        self._clear_folder()
        return path

    def _clear_folder(self) -> None:
        """Remove what an earlier preview wrote in this repository's folder (only its files)."""
        if not self.folder.is_dir():
            return
        for path in self.folder.iterdir():
            if path.is_file() and path.suffix in PREVIEW_SUFFIXES:
                path.unlink()

    def configure(self, pull_requests: PullRequestConfig, *, dashboard: bool = True) -> None:
        self.config = pull_requests
        self.dashboard_enabled = dashboard

    def workload_memory(self) -> dict[str, WorkloadMemory]:
        """Nothing merged on the forge: no memory."""
        return {}

    def previous_proposals(self) -> tuple[PreviousProposal, ...]:
        """A preview has no earlier pull request."""
        return ()

    def report_config_error(self, problems: Sequence[str]) -> None:
        self.write_dashboard(config_error_notice(self.config.dashboard_title, problems))

    def report_failure(self, message: str) -> None:
        if self.dashboard_enabled:
            self.write_dashboard(failure_notice(self.config.dashboard_title, message))

    def disconnect(self) -> None:
        """Nothing to release: no connection was made."""

    # ------------------------------------------------------------------ branches

    def bot_branches(self) -> dict[str, str]:
        return {}

    def push_branch(
        self, proposal: Proposal, ref: str, expected: str | None, *, message: str, author: Author
    ) -> str:
        """Keep the commit as a patch; a digest of it stands for the commit's SHA."""
        commit = hashlib.sha1((message + proposal.diff).encode(), usedforsecurity=False)
        sha = commit.hexdigest()
        self.patches[ref] = format_patch(proposal.diff, message=message, author=author, commit=sha)
        return sha

    def delete_branch(self, ref: str, *, expected: str) -> None:
        self.patches.pop(ref, None)

    def branch_author_email(self, ref: str) -> str:
        return self.config.author_email

    # ------------------------------------------------------------------ pull requests

    def pull_requests(self) -> tuple[ListedPull, ...]:
        return ()

    def commit_emails(self, pull: ListedPull) -> tuple[str, ...]:
        return ()

    def open_pull(self, ref: str, *, title: str, body: str, draft: bool) -> OpenedPull:
        """Write the pull request's two files; its address is its Markdown file's name."""
        number = len(self.pulls) + 1
        stem = f"{number:02d}-{file_stem(BranchNames.of_settings(self.config).key_of(ref))}"
        pull = PreviewPull(number, ref, title, body, draft, stem)
        self.pulls.append(pull)
        write_file(self.folder / pull.patch_file, self.patches.get(ref, ""))
        self._write_pull(pull)
        return OpenedPull(number, pull.markdown_file)

    def _pull(self, number: int) -> PreviewPull:
        return self.pulls[number - 1]

    def _write_pull(self, pull: PreviewPull) -> None:
        write_file(self.folder / pull.markdown_file, pull.markdown())

    def update_pull(
        self, number: int, *, title: str | None = None, body: str | None = None
    ) -> None:
        pull = self._pull(number)
        pull.title = title if title is not None else pull.title
        pull.body = body if body is not None else pull.body
        self._write_pull(pull)

    def comment(self, number: int, text: str) -> None:
        """A preview opens pull requests only; there is nothing to comment on."""

    def comments(self, number: int) -> tuple[ListedComment, ...]:
        """A preview has no earlier pull request, so no comment."""
        return ()

    def edit_comment(self, comment_id: int, text: str) -> None:
        """A preview has no comment to edit."""

    def close_pull(self, number: int) -> None:
        """A preview opens pull requests only; there is nothing to close."""

    def set_labels(
        self, number: int, *, labels: Sequence[str] | None, assignees: Sequence[str] | None
    ) -> None:
        pull = self._pull(number)
        pull.labels = tuple(labels) if labels is not None else pull.labels
        pull.assignees = tuple(assignees) if assignees is not None else pull.assignees
        self._write_pull(pull)

    def request_reviews(
        self, number: int, *, reviewers: Sequence[str], team_reviewers: Sequence[str]
    ) -> None:
        pull = self._pull(number)
        pull.reviewers, pull.team_reviewers = tuple(reviewers), tuple(team_reviewers)
        self._write_pull(pull)

    def reserve(self, writes: Sequence[Write], before: str) -> None:
        """Files cost no API budget."""

    # ------------------------------------------------------------------ dashboard

    def read_dashboard(self) -> str | None:
        """A preview starts without a dashboard (so nothing is ticked)."""
        return None

    def write_dashboard(self, text: str) -> None:
        write_file(self.folder / DASHBOARD_FILE, text)
        self.dashboard_url = DASHBOARD_FILE


class PreviewForge:
    """Local checkouts (name -> path) served into ``out``: one folder per repository."""

    def __init__(self, out: Path, checkouts: Mapping[str, Path], *, workdir: Path) -> None:
        self.out = out
        self.checkouts = dict(checkouts)
        self.workdir = workdir
        self.sessions: dict[str, PreviewSession] = {}

    def repositories(self) -> list[str]:
        return sorted(self.checkouts)

    def folder(self, full_name: str) -> Path:
        return self.out / file_stem(full_name)

    def open(
        self, full_name: str, pull_requests: PullRequestConfig, *, dashboard: bool = True
    ) -> PreviewSession:
        session = PreviewSession(
            full_name,
            self.checkouts[full_name],
            self.folder(full_name),
            self.workdir,
            pull_requests,
            dashboard,
        )
        self.sessions[full_name] = session
        return session

    def write_index(self, messages: Mapping[str, str]) -> Path:
        """``index.md``: per repository its pull requests and dashboard, and ``messages``
        (why a repository has none: not opted in, failed, held back)."""
        lines = ["# tortoise-bot preview", ""]
        lines.append(
            "What a run would publish, from the files of each repository as they are now and "
            "nothing on the forge yet. Each pull request has its body (`.md`) and its commit "
            "(`.patch`, for `git am`)."
        )
        for name in sorted(set(self.sessions) | set(messages)):
            folder = file_stem(name)
            lines += ["", f"## {escape(name)}", ""]
            session = self.sessions.get(name)
            if messages.get(name):
                lines.append(f"{escape(messages[name])}")
                lines.append("")
            if session is not None and session.dashboard_url:
                lines.append(f"- dashboard: [{DASHBOARD_FILE}]({folder}/{DASHBOARD_FILE})")
            pulls = session.pulls if session is not None else []
            for pull in pulls:
                lines.append(
                    f"- [{escape(pull.title)}]({folder}/{pull.markdown_file}) "
                    f"([patch]({folder}/{pull.patch_file}))"
                )
            if not pulls:
                lines.append("- no pull request")
        path = self.out / INDEX_FILE
        write_file(path, "\n".join(lines) + "\n")
        return path


__all__ = [
    "DASHBOARD_FILE",
    "INDEX_FILE",
    "PreviewForge",
    "PreviewPull",
    "PreviewSession",
    "file_stem",
    "format_patch",
    "write_file",
]
