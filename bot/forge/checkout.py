"""A repository's checkout: a shallow clone of its default branch, and the bot's branches
pushed from it (``git.Git``; any forge that serves git over HTTPS)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from bot.forge.branches import BranchNames
from bot.forge.errors import ForgeError, GitError
from bot.forge.git import Author, Git
from bot.report.proposal import Proposal


@dataclass(frozen=True, slots=True)
class Checkout:
    """The clone at ``path`` of ``default_branch`` at ``base_sha``; ``git`` reaches the remote."""

    git: Git
    path: Path
    base_sha: str
    default_branch: str

    @classmethod
    def clone(cls, git: Git, path: Path, default_branch: str) -> Checkout:
        """Shallow clone of ``default_branch`` into ``path`` (token only in git's environment)."""
        return cls(git, path, git.clone(path, default_branch), default_branch)

    def bot_branches(self, names: BranchNames) -> dict[str, str]:
        """Bot branch -> SHA on the remote (``git ls-remote``, no API call)."""
        found = self.git.remote_branches(names.head)
        return {name: sha for name, sha in found.items() if names.is_bot(name)}

    def push(
        self,
        proposal: Proposal,
        ref: str,
        expected: str | None,
        *,
        message: str,
        author: Author,
        names: BranchNames,
    ) -> str:
        """Commit ``proposal``'s files on the base and push them to ``ref`` (leased on
        ``expected``, the SHA the branch had when observed); the commit's SHA.

        A file that changed on the base since the proposal was computed stops the push (the
        next run recomputes it). The commit is deterministic, so the same SHA already on the
        branch is not pushed again, and a push refused because another run pushed that very
        commit meanwhile is a success."""
        for change in proposal.files:
            current = self.git.read_blob(self.path, self.base_sha, change.path)
            if (current or b"") != change.old:
                raise ForgeError(
                    self.git.repo,
                    f"push {ref}",
                    f"{change.path} changed since the proposal was computed; it is recomputed next run",
                )
        sha = self.git.commit_files(
            self.path, self.base_sha, proposal.files, message=message, author=author
        )
        if sha == expected:
            return sha
        try:
            self.git.push(self.path, sha, ref, expected=expected)
        except GitError:
            if self.bot_branches(names).get(ref) != sha:
                raise
        return sha

    def delete(self, ref: str, *, expected: str) -> None:
        """Delete branch ``ref`` on the remote, leased on ``expected``."""
        self.git.delete(self.path, ref, expected=expected)

    def head_author_email(self, ref: str) -> str:
        """The author e-mail of the head commit of branch ``ref``."""
        return self.git.head_author_email(self.path, ref)

    def remove(self) -> None:
        """Remove the clone from disk."""
        if self.path.exists():
            shutil.rmtree(self.path)


__all__ = ["Checkout"]
