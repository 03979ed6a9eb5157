"""git through subprocess: shallow checkout, deterministic bot commits, guarded pushes.

The token reaches git only through the environment (``GIT_CONFIG_COUNT`` /
``GIT_CONFIG_KEY_0=http.extraHeader``, git >= 2.31): never in argv (process lists), never in
the remote URL or ``.git/config`` on disk, and redacted from every error. Bot commits are
built with plumbing on top of the base commit, with author and committer dates set to the
base commit's date, so the same proposal on the same base is the same commit (SHA) in every
run: concurrent or repeated runs push identical objects.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.forge.errors import GitError
from bot.model import FileChange
from bot.redaction import add_basic, redact

GIT_USER = "x-access-token"
"""The user name of token authentication over HTTPS."""

DEFAULT_FILE_MODE = "100644"
"""Mode of files the bot creates (existing files keep theirs)."""


REFUSED = ("could not read Username", "Authentication failed", "returned error: 401")
"""What git prints when the remote refused its credentials (``GIT_TERMINAL_PROMPT=0``)."""


@dataclass(frozen=True, slots=True)
class Author:
    name: str
    email: str


class Git:
    """git commands against one remote, authenticated by ``token()`` (called per command)."""

    def __init__(
        self,
        remote_url: str,
        token: Callable[[], str],
        *,
        repo: str,
        timeout_s: float = 300.0,
        renew: Callable[[], bool] | None = None,
    ) -> None:
        self.remote_url = remote_url
        self._token = token
        self._renew = renew
        """Gets a new token after the remote refused this one; False when there is none."""
        self.repo = repo
        self.timeout_s = timeout_s

    def _env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        token = self._token()
        add_basic(GIT_USER, token)  # an App's installation token is new to the registry
        basic = base64.b64encode(f"{GIT_USER}:{token}".encode()).decode()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/nonexistent"),
            "LANG": "C",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.extraHeader",
            "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
        }
        env.update(extra or {})
        return env

    def run(
        self,
        *args: str,
        cwd: Path | None = None,
        input: bytes | None = None,
        env: dict[str, str] | None = None,
    ) -> str:
        """stdout of ``git args`` (text); raises ``GitError`` with the token redacted.

        When the remote refuses the token (HTTP 401: git cannot ask for a user name), the
        command runs once more with a renewed token, if ``renew`` gets one: a refused push or
        fetch changed nothing."""
        try:
            return self._run_once(args, cwd=cwd, input=input, env=env)
        except GitError as exc:
            if not any(sign in exc.stderr for sign in REFUSED) or self._renew is None:
                raise
            if not self._renew():
                raise
            return self._run_once(args, cwd=cwd, input=input, env=env)

    def _run_once(
        self,
        args: tuple[str, ...],
        *,
        cwd: Path | None,
        input: bytes | None,
        env: dict[str, str] | None,
    ) -> str:
        cmd = ["git", *args]
        try:
            done = subprocess.run(
                cmd,
                cwd=cwd,
                input=input,
                capture_output=True,
                env=self._env(env),
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise GitError(self.repo, cmd, -1, f"timed out after {self.timeout_s} s") from exc
        if done.returncode != 0:
            stderr = redact(done.stderr.decode(errors="replace"))
            raise GitError(self.repo, [redact(c) for c in cmd], done.returncode, stderr)
        return done.stdout.decode(errors="replace")

    # ------------------------------------------------------------------ remote

    def clone(self, dest: Path, branch: str) -> str:
        """Shallow clone of ``branch`` into ``dest`` (replaced); returns the HEAD SHA."""
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        self.run(
            "clone",
            "--quiet",
            "--depth=1",
            "--single-branch",
            f"--branch={branch}",
            self.remote_url,
            str(dest),
        )
        return self.run("rev-parse", "HEAD", cwd=dest).strip()

    def remote_branches(self, head: str) -> dict[str, str]:
        """Branches whose name starts with ``head`` on the remote: name -> SHA (one ``ls-remote``)."""
        out = self.run("ls-remote", "--heads", self.remote_url, f"refs/heads/{head}*")
        found = {}
        for line in out.splitlines():
            sha, _, ref = line.partition("\t")
            found[ref.removeprefix("refs/heads/")] = sha
        return found

    def head_author_email(self, checkout: Path, branch: str) -> str:
        """Author e-mail of the newest commit of remote ``branch`` (a shallow fetch of one commit)."""
        self.run(
            "fetch", "--quiet", "--depth=1", self.remote_url, f"refs/heads/{branch}", cwd=checkout
        )
        return self.run("log", "-1", "--format=%ae", "FETCH_HEAD", cwd=checkout).strip()

    def push(self, checkout: Path, sha: str, branch: str, *, expected: str | None) -> None:
        """Set remote ``branch`` to ``sha`` only if it is still ``expected`` (None = absent)."""
        self._push_with_lease(checkout, f"{sha}:refs/heads/{branch}", branch, expected or "")

    def delete(self, checkout: Path, branch: str, *, expected: str) -> None:
        """Delete remote ``branch`` only if it still points at ``expected``."""
        self._push_with_lease(checkout, f":refs/heads/{branch}", branch, expected)

    def _push_with_lease(self, checkout: Path, refspec: str, branch: str, expected: str) -> None:
        lease = f"--force-with-lease=refs/heads/{branch}:{expected}"
        self.run("push", "--quiet", "--no-verify", lease, self.remote_url, refspec, cwd=checkout)

    # ------------------------------------------------------------------ local objects

    def read_blob(self, checkout: Path, commit: str, path: str) -> bytes | None:
        """Bytes of ``path`` at ``commit`` in the local clone; None when it does not exist there."""
        try:
            out = subprocess.run(
                ["git", "cat-file", "blob", f"{commit}:{path}"],
                cwd=checkout,
                capture_output=True,
                env=self._env(),
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise GitError(self.repo, ["git", "cat-file", "blob"], -1, "timed out") from exc
        return out.stdout if out.returncode == 0 else None

    def commit_files(
        self,
        checkout: Path,
        base: str,
        files: Sequence[FileChange],
        *,
        message: str,
        author: Author,
    ) -> str:
        """A commit of ``files`` (new bytes) on top of ``base``, deterministic; returns its SHA."""
        date = self.run("log", "-1", "--format=%ct", base, cwd=checkout).strip() + " +0000"
        modes = {}
        paths = sorted({f.path for f in files})
        if paths:
            listing = self.run("ls-tree", "-z", base, "--", *paths, cwd=checkout)
            for entry in listing.split("\0"):
                if entry:
                    meta, _, path = entry.partition("\t")
                    modes[path] = meta.split()[0]
        with tempfile.TemporaryDirectory(prefix="tortoise-bot-index-") as tmp:
            env = {
                "GIT_INDEX_FILE": str(Path(tmp) / "index"),
                "GIT_AUTHOR_NAME": author.name,
                "GIT_AUTHOR_EMAIL": author.email,
                "GIT_AUTHOR_DATE": date,
                "GIT_COMMITTER_NAME": author.name,
                "GIT_COMMITTER_EMAIL": author.email,
                "GIT_COMMITTER_DATE": date,
            }
            self.run("read-tree", base, cwd=checkout, env=env)
            for change in sorted(files, key=lambda f: f.path):
                blob = self.run(
                    "hash-object", "-w", "--stdin", cwd=checkout, input=change.new, env=env
                ).strip()
                mode = modes.get(change.path, DEFAULT_FILE_MODE)
                self.run(
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    f"{mode},{blob},{change.path}",
                    cwd=checkout,
                    env=env,
                )
            tree = self.run("write-tree", cwd=checkout, env=env).strip()
            return self.run(
                "commit-tree", tree, "-p", base, cwd=checkout, input=message.encode(), env=env
            ).strip()
