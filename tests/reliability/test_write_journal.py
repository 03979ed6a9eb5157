"""A change set is written as one unit: killed at any moment, the next start undoes what the
killed process left, and a rerun ends byte-identical to one uninterrupted run.

The repository has 305 manifests whose requests are four times what the workloads use, so every
run with Tortoise's step limit lowers them by 20 %: a rerun over a file the killed run had already
changed would change it a second time (1Gi -> 820Mi -> 656Mi), which is what a half-applied set
used to cause. Kills are ``SIGKILL`` before a chosen file-system operation
(``tests/reliability/crashing.py``) or at a random moment of the process (seeded).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.manifests.journal import SET_FILE, journal_dir
from tests.conftest import PROJECT
from tests.reliability.crashing import read_log, temporaries, tree
from tests.reliability.fleet import STEP_LIMITED, make_fleet

SEED = 15
"""Seed of the workloads, of the random kill points and of the random kill times."""

SERVICES = 305
"""Manifests in the repository (the size at which the half-applied sets were seen)."""

RANDOM_POINTS = 10
"""Random operations to kill the change-set writer before, on top of each phase's edges."""

RANDOM_TIMES = 6
"""Random moments to kill the change-set writer at, from outside."""

CHANGED_BY_THE_SET = 60
"""Files of the repository the many-kills set changes (each kill writes it up to twice)."""


@dataclass(frozen=True)
class Shop:
    before: Path
    """The repository (a git checkout) before any run."""
    snapshot: Path
    settings: Path
    """Bot settings with the step limit."""
    after: Path
    """The repository after one uninterrupted ``plan --write``."""
    log: Path
    """File-system operations of that run (``crashing.read_log``)."""


def crashing(*args: str) -> list[str]:
    return [sys.executable, "-m", "tests.reliability.crashing", *args]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(PROJECT), "NO_COLOR": "1", **extra}


def plan_write(shop: Shop, root: Path) -> list[str]:
    return [
        "plan",
        "--repo",
        str(root),
        "--snapshot",
        str(shop.snapshot),
        "--config",
        str(shop.settings),
        "--write",
    ]


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Shop:
    base = tmp_path_factory.mktemp("journal")
    fleet = make_fleet(base, services=SERVICES, seed=SEED, namespaces=5)
    before = fleet.root
    subprocess.run(["git", "init", "-q", str(before)], check=True)
    settings = base / "bot.yaml"
    settings.write_text(json.dumps(STEP_LIMITED))  # JSON is YAML
    after, log = base / "after", base / "operations.log"
    shutil.copytree(before, after)
    shop = Shop(before, fleet.snapshot, settings, after, log)
    done = subprocess.run(
        crashing("cli", "0", str(log), "--", *plan_write(shop, after)),
        env=_env(),
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return shop


def test_every_file_steps_down_so_a_double_step_would_show(shop, tmp_path):
    old, _ = tree(shop.before)
    new, _ = tree(shop.after)
    assert len(old) == SERVICES + 1  # and the opt-in file
    assert sum(old[p] != new[p] for p in old) == SERVICES
    again = tmp_path / "again"
    shutil.copytree(shop.after, again)
    run = subprocess.run(
        crashing("cli", "0", "-", "--", *plan_write(shop, again)),
        env=_env(),
        cwd=PROJECT,
        capture_output=True,
        check=False,
    )
    assert run.returncode == 0
    twice, _ = tree(again)
    assert sum(twice[p] != new[p] for p in new) > 0.9 * SERVICES  # a second run steps again


def _boundaries(rows: list[tuple[int, str, str]]) -> dict[str, int]:
    """Operation numbers where each phase of the writer begins and ends."""
    records = [n for n, op, what in rows if op == "replace" and what == SET_FILE + ".tmp"]
    renames = [n for n, op, what in rows if op == "replace" and what.startswith(".tortoise-bot-")]
    cleared = [n for n, op, what in rows if op == "unlink" and what == SET_FILE][-1]
    return {
        "first": rows[0][0],
        "recorded": records[0],
        "committed": records[1],
        "first rename": renames[0],
        "last rename": renames[-1],
        "cleared": cleared,
        "last": rows[-1][0],
    }


def test_a_change_set_killed_at_any_moment_is_undone_and_rewritten_whole(shop, tmp_path):
    after = tmp_path / "after"
    shutil.copytree(shop.before, after)
    changed, _ = tree(shop.after)
    for path in sorted(changed)[:CHANGED_BY_THE_SET]:
        (after / path).write_bytes(changed[path])
    new = after / "overlays" / "new"
    new.mkdir(parents=True)
    for i in range(2):  # files in directories the set creates
        (new / f"patch-{i}.yaml").write_text(f"added: {i}\n")
    root, log = tmp_path / "root", tmp_path / "count.log"
    counted = subprocess.run(
        crashing("count", str(shop.before), str(after), str(root), str(log)),
        env=_env(),
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = float(counted.stdout)
    edges = _boundaries(read_log(log))
    total = edges["last"]
    rng = random.Random(SEED)
    at = {1, total} | {n + d for n in edges.values() for d in (0, 1)}
    at |= set(rng.sample(range(1, total + 1), RANDOM_POINTS))
    points: list[dict[str, float]] = [{"at": n} for n in sorted(a for a in at if 1 <= a <= total)]
    points += [{"after_s": round(rng.uniform(0, seconds), 4)} for _ in range(RANDOM_TIMES)]
    out = tmp_path / "results.json"
    subprocess.run(
        crashing("kill", str(shop.before), str(after), str(root), json.dumps(points), str(out)),
        env=_env(),
        cwd=PROJECT,
        check=True,
    )
    results = json.loads(out.read_text())
    assert len(results) == len(points)
    for r in results:
        assert r["after_recovery"] in ("before", "after"), r  # never a mix
        if "at" in r:  # the set is whole once its record is cleared, undone before that
            assert r["killed"], r
            assert r["after_recovery"] == ("after" if r["at"] > edges["cleared"] else "before")
        elif not r["killed"]:  # the writer had finished before the signal
            assert r["after_recovery"] == "after", r
        assert r["temporaries_after_recovery"] == 0 and not r["journal_after_recovery"], r
        if r["after_recovery"] == "before":
            assert r["after_rerun"] == "after", r
    mid = [r for r in results if edges["first rename"] < r.get("at", 0) <= edges["last rename"]]
    assert mid and all(r["restored"] > 0 for r in mid)  # a half-applied set was undone
    assert any(r["temporaries_at_kill"] > 0 for r in results)


def _rerun(shop: Shop, root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        crashing("cli", "0", "-", "--", *plan_write(shop, root)),
        env=_env(**env),
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_plan_write_killed_mid_set_then_rerun_equals_one_uninterrupted_run(
    shop, tmp_path, monkeypatch
):
    rows = read_log(shop.log)
    edges = _boundaries(rows)
    rng = random.Random(SEED)
    cases = [
        # before the commit, outside a git checkout: the journal lives in TMPDIR
        ("staging, no .git", rng.randint(edges["recorded"] + 1, edges["committed"])),
        # renames under way: some files are new, some old
        ("renaming", rng.randint(edges["first rename"] + 1, edges["last rename"])),
    ]
    reference, _ = tree(shop.after)
    for name, kill_at in cases:
        root = tmp_path / name.replace(" ", "-").replace(",", "")
        shutil.copytree(shop.before, root)
        env = {}
        if name.endswith("no .git"):
            shutil.rmtree(root / ".git")
            env["TMPDIR"] = str(tmp_path / "tmp")
            (tmp_path / "tmp").mkdir()
        monkeypatch.setattr(tempfile, "tempdir", env.get("TMPDIR"))  # where journal_dir looks
        killed = subprocess.run(
            crashing("cli", str(kill_at), "-", "--", *plan_write(shop, root)),
            env=_env(**env),
            cwd=PROJECT,
            capture_output=True,
            check=False,
        )
        assert killed.returncode == -signal.SIGKILL, name
        assert (journal_dir(root) / SET_FILE).exists(), name  # found by the next start
        if name == "renaming":
            half, _ = tree(root)
            assert half != reference and half != tree(shop.before)[0]  # killed mid-set
        rerun = _rerun(shop, root, **env)
        assert rerun.returncode == 0, (name, rerun.stderr[-2000:])
        files, _ = tree(root)
        assert files == reference, name
        assert temporaries(root) == [], name
        assert not (journal_dir(root) / SET_FILE).exists(), name
        assert "interrupted change set was undone" in rerun.stderr, name
