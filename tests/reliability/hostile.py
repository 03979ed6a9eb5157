"""Shared pieces of the reliability tests: small repositories, a bot configuration for the
GitHub emulator, a fake Prometheus on 127.0.0.1, and every text the bot published.

The fake Prometheus is ``tests.metrics.faults.FaultProxy`` without an upstream: each request is
answered by a rule (an empty answer by default), so a test chooses the fault it injects.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

from ruamel.yaml import YAML

from bot.sim import write_manifests
from tests.metrics.faults import FaultProxy, Reply, Seen, empty_body
from tests.support.github import GitHubEmulator
from tests.support.github.gitrepo import FileContent, git
from tests.support.prometheus import TEST_LABELS, TEST_SPEC

SIM_NOW = datetime.fromtimestamp(TEST_SPEC.end_s, UTC).isoformat()
"""The end of the history ``sim_prometheus`` serves: ``--now`` of runs against it."""

TOKEN = "ghp_reliabilityTOKENreliabilityTOKEN00"
"""The GitHub token the bot runs with (registered in the emulator)."""

OPT_IN = b"update_mode: auto\n"
"""A minimal opt-in file."""


def deployment(
    namespace: str, name: str = "web", cpu: str = "500m", memory: str = "512Mi"
) -> bytes:
    """One Deployment with one container and its requests."""
    return (
        "apiVersion: apps/v1\n"
        "kind: Deployment\n"
        f"metadata:\n  name: {name}\n  namespace: {namespace}\n"
        "spec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n"
        f"        - name: {name}\n          image: nginx\n          resources:\n"
        f"            requests:\n              cpu: {cpu}\n              memory: {memory}\n"
    ).encode()


def repo_files(
    namespace: str, opt_in: bytes = OPT_IN, **more: FileContent
) -> dict[str, FileContent]:
    """An opted-in repository with one Deployment in ``namespace`` (and ``more`` files)."""
    return {".tortoise-bot.yaml": opt_in, "deploy.yaml": deployment(namespace), **more}


def sim_repository(namespace: str, tmp: Path) -> dict[str, FileContent]:
    """An opted-in repository with the manifests of one namespace of ``sim_prometheus``'s
    cluster (``ns-0`` or ``ns-1``): workloads with history, so pull requests are opened."""
    write_manifests(TEST_SPEC, tmp)
    files: dict[str, FileContent] = {
        p.relative_to(tmp).as_posix(): p.read_bytes()
        for p in tmp.rglob("*.yaml")
        if p.relative_to(tmp).parts[0] == namespace
    }
    return {".tortoise-bot.yaml": OPT_IN, **files}


def sim_settings(url: str) -> dict[str, Any]:
    """Prometheus settings that read ``sim_prometheus``'s cluster at ``url``."""
    return {
        "url": url,
        "window_days": 2,
        "step_s": 60,
        "matchers": [{"label": k, "value": v} for k, v in TEST_LABELS.items()],
    }


def serve_repositories(gh: GitHubEmulator, repos: Mapping[str, Mapping[str, FileContent]]) -> None:
    """Create each ``owner/name`` repository with its files and let the bot's token reach it."""
    for full_name, files in repos.items():
        owner, name = full_name.split("/")
        gh.create_repository(owner, name, dict(files))
    gh.add_token(TOKEN, "tortoise-bot")


def bot_config(
    path: Path,
    prometheus: Mapping[str, Any],
    api_url: str,
    repositories: tuple[str, ...],
    **more: Any,
) -> Path:
    """A bot settings file: ``prometheus`` settings, the emulator, fast retries, ``more`` keys."""
    config = {
        "repositories": list(repositories),
        "prometheus": {"window_days": 1, "step_s": 300, "gzip": False, **prometheus},
        "github": {
            "api_url": api_url,
            "seconds_between_requests": None,
            "seconds_between_writes": None,
            "retries": 1,
            "backoff_factor": 0.001,
        },
        **more,
    }
    with path.open("w") as out:
        YAML().dump(config, out)
    return path


Rule = Callable[[int, Seen], Reply | None]


def no_remote_read(rule: Callable[[Seen], Reply]) -> Rule:
    """A rule: 404 for remote read (the bot falls back to the query API), ``rule`` otherwise."""

    def answer(n: int, seen: Seen) -> Reply:
        del n
        if seen.path.endswith("/api/v1/read"):
            return Reply(404, b"404 page not found")
        return rule(seen)

    return answer


def empty(seen: Seen) -> Reply:
    """An empty, successful answer of the right type."""
    return Reply(200, empty_body(seen), {"Content-Type": "application/json"})


@contextmanager
def fake_prometheus(rule: Callable[[Seen], Reply] = empty) -> Iterator[FaultProxy]:
    """A fake Prometheus on 127.0.0.1 answering every query with ``rule``."""
    with FaultProxy(None, no_remote_read(rule)) as proxy:
        yield proxy


def published(gh: GitHubEmulator, full_name: str) -> str:
    """Every text the bot wrote to ``full_name``: titles, bodies and comments of its issues and
    pull requests, and the commit messages and files of every branch."""
    parts: list[str] = []
    for issue in gh.issues(full_name) + gh.pulls(full_name):
        parts += [issue.title, issue.body or "", *(c.body for c in issue.comments)]
    bare = gh.repository(full_name).git.path
    parts.append(git("--git-dir", str(bare), "log", "--all", "-p", "--format=%B"))
    return "\n".join(parts)


def summary_lines(stdout: str) -> dict[str, str]:
    """The run summary's line per repository, by repository name."""
    return {
        line.split()[1]: line.strip()
        for line in stdout.splitlines()
        if line.strip().startswith(("ok", "FAILED"))
    }


def plan_against(
    cli: Callable[..., Any], tmp_path: Path, url: str, **prometheus: object
) -> tuple[Any, float]:
    """``plan`` of a one-Deployment repository against the Prometheus at ``url`` with a 3 s
    total deadline and one retry (``prometheus`` adds settings): its result and seconds."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "deploy.yaml").write_bytes(deployment("shop"))
    settings = {
        "url": url,
        "timeout_s": 3,
        "retries": 1,
        "backoff_s": 0.01,
        "concurrency": 1,
        **prometheus,
    }
    config = bot_config(tmp_path / "bot.yaml", settings, "http://127.0.0.1:9", ())
    began = time.monotonic()
    done = cli("plan", "--repo", str(tmp_path / "repo"), "--config", str(config), timeout=60)
    return done, time.monotonic() - began


class _RawServer:
    """A TCP server on 127.0.0.1 whose every connection goes to ``answer`` (a context manager:
    serving inside ``with``); ``seen`` counts connections, ``_stop`` is set on leaving."""

    def __init__(self) -> None:
        self.seen = 0
        self._stop = threading.Event()
        server = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                server.seen += 1
                server.answer(self.request)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)

    def answer(self, conn: socket.socket) -> None:
        raise NotImplementedError


class Trickle(_RawServer):
    """A server on 127.0.0.1 that answers every request one byte per ``interval_s``: the status
    line and headers at once and then the body (``stage="body"``), or the headers themselves
    (``stage="headers"``), until the client goes away. ``Trickle.seen`` counts requests."""

    def __init__(self, stage: str = "body", interval_s: float = 1.0) -> None:
        super().__init__()
        self.stage, self.interval_s = stage, interval_s

    def answer(self, conn: socket.socket) -> None:
        head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
        )
        try:
            conn.recv(65536)
            if self.stage == "body":
                conn.sendall(head)
                payload = b'{"status":"success","data":' + b" " * 100_000
            else:
                payload = head
            for byte in payload:
                if self._stop.wait(self.interval_s):
                    return
                conn.sendall(bytes([byte]))
        except OSError:  # the client hung up: what the test wants
            return


class Endless(_RawServer):
    """A server on 127.0.0.1 whose every answer is a 200 with a body that never ends (no
    ``Content-Length``, zeros until the client goes away), or announces ``length`` bytes
    when given. ``Endless.sent`` counts the body bytes it managed to send."""

    def __init__(self, length: int | None = None) -> None:
        super().__init__()
        self.length, self.sent = length, 0

    def answer(self, conn: socket.socket) -> None:
        length = "" if self.length is None else f"Content-Length: {self.length}\r\n"
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{length}\r\n"
        block = b'{"status":"success","data":' + b" " * (1 << 20)
        try:
            conn.recv(65536)
            conn.sendall(head.encode())
            while not self._stop.is_set():
                conn.sendall(block)
                self.sent += len(block)
        except OSError:  # the client hung up: what the test wants
            return


def redirect_to(location: str, status: int = 307) -> Callable[[Seen], Reply]:
    """A rule: every request is redirected to ``location`` (plus the request's path)."""

    def answer(seen: Seen) -> Reply:
        return Reply(status, b"", {"Location": location.rstrip("/") + seen.path})

    return answer
