"""``tortoise-bot run`` killed right after one of its writes reached GitHub, then run again.

The writes of one uninterrupted run are counted first: each git push and each REST call that
changes something (one workload: push, pull request, labels, dashboard). For each write in turn, the emulator sends SIGKILL to the run the moment GitHub
has done it and before the answer leaves (``GitHubEmulator.after``): the write happened, the
run never learned of it. That covers every state a crash can leave on GitHub, among them the
classic one, a branch pushed and no pull request yet. The next run must end exactly where one
uninterrupted run ends: no duplicate, nothing missing.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable

import pytest

from tests.reliability.fleet import (
    Fleet,
    finish,
    fleet_config,
    github_state,
    make_fleet,
    run_command,
    start,
)
from tests.reliability.hostile import serve_repositories
from tests.support.github import Call, GitHubEmulator

pytestmark = pytest.mark.github

SEED = 23


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return make_fleet(tmp_path_factory.mktemp("fleet"), services=1, seed=SEED)


def writes_to(full_name: str) -> Callable[[Call], bool]:
    """Whether a call is a write to ``full_name``: a push, or a REST call that is not a GET."""
    owner, name = full_name.split("/")

    def match(call: Call) -> bool:
        if call.kind == "git":
            return call.path == f"/{owner}/{name}.git/git-receive-pack"
        return call.is_write and call.path.startswith(f"/repos/{full_name}/")

    return match


def nth(match: Callable[[Call], bool], n: int) -> Callable[[Call], bool]:
    """Matches the ``n``-th (from 1) call that ``match`` accepts."""
    seen = 0

    def count(call: Call) -> bool:
        nonlocal seen
        if match(call):
            seen += 1
            return seen == n
        return False

    return count


def _run_killed_after(gh: GitHubEmulator, config, fleet: Fleet, full_name: str, n: int) -> int:
    proc: list[subprocess.Popen[str]] = []

    def kill(call: Call) -> None:
        os.kill(proc[0].pid, signal.SIGKILL)
        proc[0].wait(30)

    gh.after(nth(writes_to(full_name), n), kill)
    proc.append(start(run_command(config, fleet.snapshot)))
    code, _ = finish(proc[0])
    return code


def test_a_run_killed_after_any_write_is_completed_by_the_next(github_emulator, fleet, tmp_path):
    gh = github_emulator
    serve_repositories(gh, {"octo/whole": fleet.files})
    whole = fleet_config(tmp_path / "whole.yaml", gh, ("octo/whole",))
    code, out = finish(start(run_command(whole, fleet.snapshot)))
    assert code == 0, out
    expected = github_state(gh, "octo/whole")
    writes = [str(c) for c in gh.calls if writes_to("octo/whole")(c)]
    pushes = [i + 1 for i, w in enumerate(writes) if "git-receive-pack" in w]
    assert pushes and len(writes) > len(pushes)

    for n in range(1, len(writes) + 1):
        name = f"octo/killed-{n}"
        serve_repositories(gh, {name: fleet.files})
        config = fleet_config(tmp_path / f"{n}.yaml", gh, (name,))
        assert _run_killed_after(gh, config, fleet, name, n) == -signal.SIGKILL, writes[n - 1]
        code, out = finish(start(run_command(config, fleet.snapshot)))
        assert code == 0, (writes[n - 1], out)
        assert github_state(gh, name) == expected, f"killed after {writes[n - 1]}"
