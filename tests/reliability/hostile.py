"""Shared pieces of the reliability tests: small repositories, a bot configuration for the
GitHub emulator, a fake Prometheus on 127.0.0.1, and every text the bot published.

The fake Prometheus is ``tests.metrics.faults.FaultProxy`` without an upstream: each request is
answered by a rule (an empty answer by default), so a test chooses the fault it injects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from tests.metrics.faults import FaultProxy, Reply, Seen, empty_body
from tests.support.github import GitHubEmulator
from tests.support.github.gitrepo import git

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


def repo_files(namespace: str, opt_in: bytes = OPT_IN, **more: bytes) -> dict[str, bytes]:
    """An opted-in repository with one Deployment in ``namespace`` (and ``more`` files)."""
    return {".tortoise-bot.yaml": opt_in, "deploy.yaml": deployment(namespace), **more}


def serve_repositories(gh: GitHubEmulator, repos: Mapping[str, Mapping[str, bytes]]) -> None:
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
