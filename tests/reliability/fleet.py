"""Repositories of simulated workloads that always need a change, their recorded history, the
bot run as a process, and the state of GitHub reduced to what must not differ between runs.

``make_fleet`` writes one raw manifest per simulated service with requests ``OVERSIZE`` times
the simulated ones, so every run with Tortoise's step limit (``STEP_LIMITED``) lowers each of
them by 20 %: every workload gets a pull request, and a file changed twice shows. The history is the simulator's
truth, written as a snapshot (``run --snapshot``), so no Prometheus is needed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.metrics.snapshot import write_snapshot
from bot.metrics.source import FetchResult
from bot.report import parse_state
from bot.sim import ClusterSpec, simulate
from bot.sim.manifests import write_manifests
from tests.conftest import PROJECT, console_script
from tests.reliability.hostile import TOKEN, bot_config
from tests.support.github import GitHubEmulator
from tests.support.github.gitrepo import git

OVERSIZE = 4
"""Requests are this many times the simulated ones: every run steps them down."""

OPT_IN = b"update_mode: auto\npull_requests:\n  labels: [right-sizing]\n  assignees: [octocat]\n"
"""The opt-in file: pull requests on, each labelled and assigned (two more writes to lose)."""


STEP_LIMITED = {"recommend": {"noise": {"step_limit": True, "oom_response": "stacked"}}}
"""Bot settings with Tortoise's step limit: each run lowers a request by at most 20 %; and its
OOM response, so a leaking service changes at every run too (the bot's own holds a leak)."""


@dataclass(frozen=True)
class Fleet:
    root: Path
    """The repository as a directory: one manifest per service and the opt-in file."""
    snapshot: Path
    """The services' history (``run --snapshot``, ``plan --snapshot``)."""
    services: int

    @property
    def files(self) -> dict[str, bytes]:
        return {
            p.relative_to(self.root).as_posix(): p.read_bytes()
            for p in self.root.rglob("*")
            if p.is_file()
        }


def oversize(text: str) -> str:
    """Manifest text with every ``NNNMi`` memory and ``NNNm`` CPU quantity ``OVERSIZE`` times."""
    text = re.sub(r"(memory: )(\d+)Mi", lambda m: f"{m[1]}{int(m[2]) * OVERSIZE}Mi", text)
    return re.sub(r"(cpu: )(\d+)m\b", lambda m: f"{m[1]}{int(m[2]) * OVERSIZE}m", text)


def make_fleet(directory: Path, *, services: int, seed: int, namespaces: int = 2) -> Fleet:
    """``services`` workloads over two days, manifests under ``directory/repo``."""
    spec = ClusterSpec.generate(
        seed=seed, services=services, namespaces=namespaces, days=2, step_s=600
    )
    cluster = simulate(spec)
    root = directory / "repo"
    for path in write_manifests(spec, root):
        path.write_text(oversize(path.read_text()))
    snapshot = directory / "history.zip"
    write_snapshot(
        snapshot,
        FetchResult({s.ref: cluster.expected_history(s.ref) for s in cluster.services}),
        start_s=float(cluster.t_s[0]),
        end_s=float(cluster.t_s[-1]),
        compression=zipfile.ZIP_STORED,
    )
    (root / ".tortoise-bot.yaml").write_bytes(OPT_IN)
    return Fleet(root, snapshot, services)


def fleet_config(
    path: Path, gh: GitHubEmulator, repositories: Sequence[str], *, ratio: float = 0.8
) -> Path:
    """Bot settings for ``repositories`` on the emulator, step-limited to ``ratio`` per run."""
    admin = {"max_allowed_scaling_down_ratio": ratio}
    recommend = {**STEP_LIMITED["recommend"], "admin": admin}
    return bot_config(path, {}, gh.api_url, tuple(repositories), recommend=recommend)


def run_command(config: Path, snapshot: Path, *extra: str) -> list[str]:
    """``tortoise-bot run`` on ``config`` with the history of ``snapshot``."""
    return [*console_script(), "run", "--config", str(config), "--snapshot", str(snapshot), *extra]


def bot_env(**extra: str) -> dict[str, str]:
    """The environment of a bot process: the emulator's token, no colours."""
    return {**os.environ, "GITHUB_TOKEN": TOKEN, "NO_COLOR": "1", "COLUMNS": "200", **extra}


def start(argv: Sequence[str], **env: str) -> subprocess.Popen[str]:
    """A bot (or helper) process from the project's root, output captured."""
    return subprocess.Popen(
        list(argv),
        cwd=PROJECT,
        env={**bot_env(**env), "PYTHONPATH": str(PROJECT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout_s: float = 120) -> tuple[int, str]:
    """Wait for ``proc``: its exit code and its stdout plus stderr."""
    out, err = proc.communicate(timeout=timeout_s)
    return proc.returncode, out + err


def python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


# --------------------------------------------------------------------------- GitHub's state


def _normalise(text: str, full_name: str) -> str:
    """``text`` without what differs between two repositories given the same run: the
    repository's name, issue and pull-request numbers, and commit SHAs."""
    text = text.replace(full_name, "OWNER/REPO")
    text = re.sub(r"\b[0-9a-f]{40}\b", "SHA", text)
    return re.sub(r"(#|/issues/|/pull/)\d+", r"\1N", text)


def github_state(gh: GitHubEmulator, full_name: str) -> dict[str, Any]:
    """What a run leaves on GitHub, comparable between repositories that got the same runs.

    Per bot branch: the tree of its head commit (the files), and its pull requests (state,
    title, body, labels, assignees, comments, and whether the body's state names the branch's
    head); the open dashboard issues (bodies); branches without a pull request.
    """
    bare = gh.repository(full_name).git
    branches = {b: sha for b, sha in bare.branches().items() if b != "main"}
    pulls: dict[str, list[dict[str, Any]]] = {}
    for issue in gh.pulls(full_name):
        assert issue.pull is not None
        state = parse_state(issue.body)
        pulls.setdefault(issue.pull.head, []).append(
            {
                "state": issue.state,
                "title": issue.title,
                "body": _normalise(issue.body or "", full_name),
                "labels": sorted(issue.labels),
                "assignees": sorted(issue.assignees),
                "comments": [_normalise(c.body, full_name) for c in issue.comments],
                "body names the head": state is not None
                and state.head == branches.get(issue.pull.head),
            }
        )
    trees = {
        b: git("rev-parse", f"{sha}^{{tree}}", cwd=bare.path).strip() for b, sha in branches.items()
    }
    dashboards = [
        _normalise(i.body or "", full_name) for i in gh.issues(full_name) if i.state == "open"
    ]
    return {
        "trees": trees,
        "pulls": pulls,
        "dashboards": sorted(dashboards),
        "branches without pull request": sorted(set(branches) - set(pulls)),
    }


def closed_dashboards(gh: GitHubEmulator, full_name: str) -> int:
    """Dashboard issues closed as duplicates of another."""
    return sum(i.state == "closed" and i.state_reason == "duplicate" for i in gh.issues(full_name))


def open_pulls(state: Mapping[str, Any]) -> int:
    return sum(p["state"] == "open" for ps in state["pulls"].values() for p in ps)
