"""Real bare repositories on disk and git's smart HTTP protocol through ``git http-backend``.

The CGI environment follows toolchain.md section 7 (verified there): ``GIT_PROJECT_ROOT``,
``GIT_HTTP_EXPORT_ALL=1``, ``REMOTE_USER`` to allow ``git-receive-pack``; chunked request
bodies are de-chunked by the HTTP server before they reach the CGI.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"
"""Debian's path of git's CGI program."""

ZERO_SHA = "0" * 40

_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "HOME": "/nonexistent",
}


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """One commit as ``git log`` reports it."""

    sha: str
    tree: str
    parents: tuple[str, ...]
    author_name: str
    author_email: str
    author_date: str
    committer_name: str
    committer_email: str
    committer_date: str
    message: str


@dataclass(frozen=True)
class Symlink:
    """A symbolic link to commit (git mode 120000) pointing at ``target``."""

    target: str


FileContent = bytes | Symlink
"""What a committed path holds: bytes (mode 100644) or a symbolic link."""


def git(*args: str, cwd: Path | None = None, input: bytes | None = None) -> str:
    """Run git with a clean environment; stdout as text. Raises ``CalledProcessError``."""
    env = {**_GIT_ENV, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    done = subprocess.run(
        ["git", *args], cwd=cwd, input=input, capture_output=True, env=env, check=False
    )
    if done.returncode != 0:
        raise subprocess.CalledProcessError(
            done.returncode, ["git", *args], done.stdout, done.stderr
        )
    return done.stdout.decode()


class BareRepository:
    """One bare repository the emulator serves as ``/{owner}/{name}.git``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(
        cls,
        path: Path,
        files: Mapping[str, FileContent],
        *,
        default_branch: str,
        author: tuple[str, str] = ("Repository Owner", "owner@example.com"),
    ) -> BareRepository:
        path.parent.mkdir(parents=True, exist_ok=True)
        git("init", "--quiet", "--bare", f"--initial-branch={default_branch}", str(path))
        repo = cls(path)
        repo.commit(
            default_branch, dict(files), message="Initial commit", author=author, parent=None
        )
        return repo

    def ref(self, branch: str) -> str | None:
        """SHA of ``refs/heads/<branch>``, None when the branch does not exist."""
        try:
            return (
                git(
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    f"refs/heads/{branch}^{{commit}}",
                    cwd=self.path,
                ).strip()
                or None
            )
        except subprocess.CalledProcessError:
            return None

    def branches(self) -> dict[str, str]:
        out = git(
            "for-each-ref", "--format=%(refname:strip=2) %(objectname)", "refs/heads", cwd=self.path
        )
        return dict(line.split(" ", 1) for line in out.splitlines() if line)

    def set_ref(self, branch: str, sha: str) -> None:
        git("update-ref", f"refs/heads/{branch}", sha, cwd=self.path)

    def delete_ref(self, branch: str) -> None:
        git("update-ref", "-d", f"refs/heads/{branch}", cwd=self.path)

    def has_commit(self, sha: str) -> bool:
        try:
            git("cat-file", "-e", f"{sha}^{{commit}}", cwd=self.path)
        except subprocess.CalledProcessError:
            return False
        return True

    def mode(self, ref: str, path: str) -> str | None:
        """The git mode of ``path`` at ``ref`` (``100644``, ``120000`` for a symlink), or None."""
        listed = git("ls-tree", ref, "--", path, cwd=self.path).split()
        return listed[0] if listed else None

    def read_file(self, ref: str, path: str) -> bytes | None:
        try:
            env = {**_GIT_ENV, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
            done = subprocess.run(
                ["git", "cat-file", "blob", f"{ref}:{path}"],
                cwd=self.path,
                capture_output=True,
                env=env,
                check=True,
            )
        except subprocess.CalledProcessError:
            return None
        return done.stdout

    def commits_between(self, base: str, head: str) -> list[CommitInfo]:
        """Commits reachable from ``head`` and not from ``base``, oldest first."""
        fmt = "%H%x00%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B%x1e"
        out = git("log", "--reverse", f"--format={fmt}", f"{base}..{head}", cwd=self.path)
        commits = []
        for raw in out.split("\x1e"):
            record = raw.strip("\n")
            if not record:
                continue
            f = record.split("\x00")
            commits.append(
                CommitInfo(
                    f[0],
                    f[1],
                    tuple(f[2].split()),
                    f[3],
                    f[4],
                    f[5],
                    f[6],
                    f[7],
                    f[8],
                    f[9].strip(),
                )
            )
        return commits

    def commit(
        self,
        branch: str,
        files: Mapping[str, FileContent | None],
        *,
        message: str,
        author: tuple[str, str],
        parent: str | bool | None = True,
    ) -> str:
        """Commit ``files`` (None deletes) on top of ``branch`` (or ``parent``); returns the SHA."""
        start = self.ref(branch) if parent is True else (parent or None)
        with tempfile.TemporaryDirectory() as tmp:
            index = Path(tmp) / "index"
            env = {
                **_GIT_ENV,
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "GIT_INDEX_FILE": str(index),
                "GIT_AUTHOR_NAME": author[0],
                "GIT_AUTHOR_EMAIL": author[1],
                "GIT_COMMITTER_NAME": author[0],
                "GIT_COMMITTER_EMAIL": author[1],
            }

            def run(*args: str, input: bytes | None = None) -> str:
                done = subprocess.run(
                    ["git", *args],
                    cwd=self.path,
                    input=input,
                    env=env,
                    capture_output=True,
                    check=True,
                )
                return done.stdout.decode().strip()

            if start:
                run("read-tree", start)
            for name, content in files.items():
                if content is None:
                    run("update-index", "--force-remove", name)
                else:
                    link = isinstance(content, Symlink)
                    data = content.target.encode() if isinstance(content, Symlink) else content
                    blob = run("hash-object", "-w", "--stdin", input=data)
                    mode = "120000" if link else "100644"
                    run("update-index", "--add", "--cacheinfo", f"{mode},{blob},{name}")
            tree = run("write-tree")
            parents = ["-p", start] if start else []
            sha = run("commit-tree", tree, *parents, "-m", message)
        self.set_ref(branch, sha)
        return sha

    def merge(self, base: str, head: str, message: str, author: tuple[str, str]) -> str | None:
        """Merge commit of ``head`` into branch ``base``; None on conflicts."""
        base_sha = self.ref(base)
        head_sha = self.ref(head) or head
        try:
            tree = git(
                "merge-tree", "--write-tree", str(base_sha), head_sha, cwd=self.path
            ).split()[0]
        except subprocess.CalledProcessError:
            return None
        env_author = [
            "-c",
            f"user.name={author[0]}",
            "-c",
            f"user.email={author[1]}",
        ]
        sha = git(
            *env_author,
            "commit-tree",
            tree,
            "-p",
            str(base_sha),
            "-p",
            head_sha,
            "-m",
            message,
            cwd=self.path,
        ).strip()
        self.set_ref(base, sha)
        return sha

    def mergeable(self, base: str, head: str) -> bool:
        try:
            git(
                "merge-tree",
                "--write-tree",
                f"refs/heads/{base}",
                f"refs/heads/{head}",
                cwd=self.path,
            )
        except subprocess.CalledProcessError:
            return False
        return True


def run_http_backend(
    root: Path,
    *,
    method: str,
    path: str,
    query: str,
    body: bytes,
    content_type: str,
    remote_user: str | None,
    content_encoding: str | None,
    git_protocol: str | None,
) -> tuple[int, list[tuple[str, str]], bytes]:
    """One CGI exchange with ``git http-backend``: (status, headers, body)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_PROJECT_ROOT": str(root),
        "GIT_HTTP_EXPORT_ALL": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": "/nonexistent",
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "CONTENT_TYPE": content_type,
        "CONTENT_LENGTH": str(len(body)),
        "REMOTE_ADDR": "127.0.0.1",
    }
    if remote_user:
        env["REMOTE_USER"] = remote_user
    if content_encoding:
        env["HTTP_CONTENT_ENCODING"] = content_encoding
    if git_protocol:
        env["GIT_PROTOCOL"] = git_protocol
    done = subprocess.run([HTTP_BACKEND], input=body, env=env, capture_output=True, check=False)
    head, _, data = done.stdout.partition(b"\r\n\r\n")
    status, headers = 200, []
    for line in head.decode("latin-1").split("\r\n"):
        key, _, value = line.partition(":")
        if key.lower() == "status":
            status = int(value.split()[0])
        elif key:
            headers.append((key, value.strip()))
    return status, headers, data
