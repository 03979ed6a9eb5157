"""Several ``tortoise-bot run`` processes at once on the same repositories.

The emulator holds each process at the first pull request it opens and at the first issue it
creates until the others arrive there too (``GitHubEmulator.gate``), so none has seen a pull
request or a dashboard before one writes it: the race happens on every run of this test, not by
chance. Deterministic commits, pushes with a lease on the SHA each run observed, and adopting
what another run opened must leave exactly what one run leaves: no duplicate pull request or
dashboard, no update lost; and each run reports only the writes it made (a pull request another
run opened is "already open", never "opened" twice).

Two runs with other proposals for the same open pull requests (other step limits) meet at the
first push: each key is updated by exactly one of them, and every branch and its body describe
the same proposal, the one that run alone would have left.
"""

from __future__ import annotations

import pytest

from tests.reliability.fleet import (
    Fleet,
    closed_dashboards,
    finish,
    fleet_config,
    github_state,
    make_fleet,
    open_pulls,
    run_command,
    start,
)
from tests.reliability.hostile import serve_repositories, summary_lines

pytestmark = pytest.mark.github

SERVICES = 3
REPOSITORIES = ("octo/a", "octo/b")
RUNS = 3


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return make_fleet(tmp_path_factory.mktemp("fleet"), services=SERVICES, seed=21)


def _counts(line: str) -> tuple[int, int]:
    """(opened, already open) of one repository's summary line."""
    opened = int(line.split("opened ", 1)[1].split(",", 1)[0])
    adopted = (
        int(line.split("already open ", 1)[1].split(",", 1)[0]) if "already open" in line else 0
    )
    return opened, adopted


def test_runs_at_once_leave_what_one_run_leaves(github_emulator, fleet, tmp_path):
    gh = github_emulator
    serve_repositories(gh, {name: fleet.files for name in (*REPOSITORIES, "octo/alone")})
    both = fleet_config(tmp_path / "both.yaml", gh, REPOSITORIES)
    alone = fleet_config(tmp_path / "alone.yaml", gh, ("octo/alone",))

    gates = [gh.gate("POST", r"/pulls$", parties=RUNS), gh.gate("POST", r"/issues$", parties=RUNS)]
    runs = [start(run_command(both, fleet.snapshot)) for _ in range(RUNS)]
    results = [finish(p) for p in runs]
    assert [code for code, _ in results] == [0] * RUNS, results
    assert all(g.met for g in gates)  # every run met the others at the first pull request
    for name in REPOSITORIES:
        counts = [_counts(summary_lines(out)[name]) for _, out in results]
        assert sum(opened for opened, _ in counts) == SERVICES, (name, results)  # each once
        assert all(opened + adopted == SERVICES for opened, adopted in counts), (name, results)
        assert sum(adopted for _, adopted in counts) == SERVICES * (RUNS - 1), (name, results)

    code, out = finish(start(run_command(alone, fleet.snapshot)))
    assert code == 0, out
    expected = github_state(gh, "octo/alone")
    assert open_pulls(expected) == SERVICES
    for name in REPOSITORIES:
        state = github_state(gh, name)
        assert state == expected, name
        assert all(p["body names the head"] for ps in state["pulls"].values() for p in ps)
        assert closed_dashboards(gh, name) <= RUNS - 1  # the later ones of those created at once


def test_two_runs_with_other_proposals_never_lose_an_update(github_emulator, fleet, tmp_path):
    gh = github_emulator
    serve_repositories(gh, {n: fleet.files for n in ("octo/race", "octo/one", "octo/two")})
    first = fleet_config(tmp_path / "first.yaml", gh, ("octo/race", "octo/one", "octo/two"))
    code, out = finish(start(run_command(first, fleet.snapshot)))
    assert code == 0, out

    one = fleet_config(tmp_path / "one.yaml", gh, ("octo/race",), ratio=0.7)
    two = fleet_config(tmp_path / "two.yaml", gh, ("octo/race",), ratio=0.9)
    gate = gh.gate("POST", r"git-receive-pack$")
    results = [finish(p) for p in [start(run_command(c, fleet.snapshot)) for c in (one, two)]]
    assert gate.met  # both pushed the first branch at once, each with a lease on the same head
    assert sorted(code for code, _ in results) in ([0, 1], [1, 1]), results

    for config, name in ((one, "octo/one"), (two, "octo/two")):
        config.write_text(config.read_text().replace("octo/race", name))
        code, out = finish(start(run_command(config, fleet.snapshot)))
        assert code == 0, out
    race, by_one, by_two = (github_state(gh, n) for n in ("octo/race", "octo/one", "octo/two"))
    assert set(race["trees"]) == set(by_one["trees"]) == set(by_two["trees"])
    winners = []
    for branch, tree in race["trees"].items():
        pulls = race["pulls"][branch]
        assert len(pulls) == 1 and pulls[0]["state"] == "open" and pulls[0]["body names the head"]
        got = (tree, pulls[0]["body"])
        options = {
            "one": (by_one["trees"][branch], by_one["pulls"][branch][0]["body"]),
            "two": (by_two["trees"][branch], by_two["pulls"][branch][0]["body"]),
        }
        assert options["one"] != options["two"], branch  # the two runs disagree everywhere
        winners += [name for name, option in options.items() if option == got]
        assert got in options.values(), branch  # the branch and its body tell one proposal
    assert len(winners) == SERVICES
