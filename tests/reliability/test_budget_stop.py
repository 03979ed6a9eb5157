"""A run whose GitHub API budget runs out: it stops cleanly and the next run starts there.

The emulator's primary budget (``rate_limit_remaining``) is set below what the repositories
need. The bot runs as a process (``tortoise-bot run``), as a schedule starts it: it must stop
before a write it cannot finish (no pull request without its labels and assignees, no branch
without its pull request), say where it stopped (stdout and ``$GITHUB_STEP_SUMMARY``), keep the
repositories it did not finish in ``run.state_dir``, and the next run must serve those first.
"""

from __future__ import annotations

import json

import pytest

from bot.report.markdown import escape
from tests.reliability.fleet import (
    STEP_LIMITED,
    Fleet,
    finish,
    github_state,
    make_fleet,
    open_pulls,
    run_command,
    start,
)
from tests.reliability.hostile import bot_config, serve_repositories

pytestmark = pytest.mark.github

SERVICES = 2
REPOSITORIES = tuple(f"octo/r{i}" for i in range(4))
BUDGET = 16
"""REST requests of the first run: more than one repository needs, fewer than two."""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return make_fleet(tmp_path_factory.mktemp("fleet"), services=SERVICES, seed=5)


def _served_first(gh) -> str:
    """The repository a run read first."""
    path = next(c.path for c in gh.rest_calls() if c.path.startswith("/repos/"))
    return "/".join(path.split("/")[2:4])


def _not_reached(state_dir) -> list[str]:
    return json.loads((state_dir / "run.json").read_text())["not_reached"]


def test_a_run_out_of_budget_stops_cleanly_and_the_next_starts_there(
    github_emulator, fleet, tmp_path
):
    gh = github_emulator
    serve_repositories(gh, {name: fleet.files for name in REPOSITORIES})
    state_dir = tmp_path / "state"
    config = bot_config(
        tmp_path / "bot.yaml",
        {},
        gh.api_url,
        REPOSITORIES,
        recommend=STEP_LIMITED["recommend"],
        run={"state_dir": str(state_dir)},
    )
    run = run_command(config, fleet.snapshot)
    summary = tmp_path / "summary.md"

    # 1. the budget runs out while opening r1's pull requests: stopped before the write
    gh.rate_limit_remaining = BUDGET
    code, out = finish(start(run, GITHUB_STEP_SUMMARY=str(summary)))
    assert code == 1, out
    stop = "3 repositories not finished (octo/r1, octo/r2, octo/r3): the next run starts with them"
    assert "stopped: octo/r1: create" in out and stop in out, out
    assert escape(stop) in summary.read_text()
    assert _not_reached(state_dir) == ["octo/r1", "octo/r2", "octo/r3"]
    assert open_pulls(github_state(gh, "octo/r0")) == SERVICES
    assert not gh.repository("octo/r2").issues and not gh.repository("octo/r3").issues
    dashboard = next(i for i in gh.issues("octo/r1") if i.pull is None)
    assert "not done" in (dashboard.body or "")  # the dashboard still says what is left

    # 2. the budget is gone in the middle of r1's reads (GitHub's 403): it stops there again
    gh.reset_calls()
    gh.rate_limit_remaining = 2
    code, out = finish(start(run))
    assert code == 1 and "stopped: octo/r1" in out, out
    assert _served_first(gh) == "octo/r1"
    assert [c.status for c in gh.rest_calls()][-1] == 403
    assert _not_reached(state_dir) == ["octo/r1", "octo/r2", "octo/r3", "octo/r0"]

    # 3. a full budget: r1 first, then the others; every repository served, nothing half-made
    gh.reset_calls()
    gh.rate_limit_remaining = None
    code, out = finish(start(run))
    assert code == 0, out
    assert _served_first(gh) == "octo/r1" and "stopped" not in out
    served = [c.path.split("/")[3] for c in gh.rest_calls() if c.path.count("/") == 3]
    assert served == ["r1", "r2", "r3", "r0"]
    assert _not_reached(state_dir) == []
    for name in REPOSITORIES:
        state = github_state(gh, name)
        assert open_pulls(state) == SERVICES, name
        assert not state["branches without pull request"], name
        for pulls in state["pulls"].values():
            assert all(p["labels"] == ["right-sizing"] for p in pulls), name
            assert all(p["assignees"] == ["octocat"] for p in pulls), name
