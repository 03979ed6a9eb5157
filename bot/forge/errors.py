"""Errors of the forge (git and GitHub); every one carries its context, tokens redacted::

    ForgeError(repo, operation, status, message)   a GitHub call or git command failed
    ├── AuthError                                  no usable credentials, or GitHub refused them
    ├── RateLimitError(wait_s)                     the API budget is gone; the run stops cleanly
    └── GitError(cmd, returncode, stderr)          a git command failed (repo = the remote)

The pipeline catches ``ForgeError`` per repository and per pull request, records it in the
summary and on the dashboard, and goes on.
"""

from __future__ import annotations

from collections.abc import Sequence


class ForgeError(Exception):
    """A forge operation failed on ``repo``; ``status`` is the HTTP status when there was one."""

    def __init__(self, repo: str, operation: str, message: str, status: int | None = None) -> None:
        self.repo = repo
        self.operation = operation
        self.status = status
        self.message = message
        where = f"{repo}: {operation}" + (f" (HTTP {status})" if status else "")
        super().__init__(f"{where}: {message}")


class AuthError(ForgeError):
    """Credentials are missing, malformed or refused."""


class RateLimitError(ForgeError):
    """GitHub's rate limit would need a wait longer than allowed (``wait_s``); ``status`` None
    when the bot stopped before a write that its budget could not finish (no request made)."""

    def __init__(
        self,
        repo: str,
        operation: str,
        message: str,
        wait_s: float | None = None,
        *,
        status: int | None = 403,
    ) -> None:
        super().__init__(repo, operation, message, status=status)
        self.wait_s = wait_s


class GitError(ForgeError):
    """A git command failed; ``cmd`` and ``stderr`` never contain the token."""

    def __init__(self, repo: str, cmd: Sequence[str], returncode: int, stderr: str) -> None:
        self.cmd = tuple(cmd)
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(
            repo, "git " + " ".join(cmd[1:3]), f"exit {returncode}: {stderr.strip()[-500:]}"
        )
