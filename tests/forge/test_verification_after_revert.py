"""After a merged revert, whole ``serve_repository`` runs on real parts (a real Prometheus, the
GitHub emulator, real manifests) do not cut the restored field as deep again while the history
that led to the regression has not moved (``docs/pull-requests.md``, "Reverting what
regressed").

``pay`` and ``cart`` run the same load throughout: 0.1 core a pod, 0.3 one sample in
``EVERY``. Their merged pull requests cut the CPU request below the spikes, predicting no minute
over it: regressed (CPU over request on one sample in ``EVERY``), reverted by the first run, the
reverts merged and live a week later. The next run verifies each revert, and the engine, which
reads the same history as before, proposes the same VPA target for both (the spikes are under
its percentile): for ``pay`` within the noise thresholds of the cut that regressed, so held
("held after revert #N"); for ``cart`` further from its cut, so opened, but not below the
cut × (1 + ``verify.after_revert_margin``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.config.recommend import NoiseSettings
from bot.config.verify import VerifySettings
from bot.model import ChangeSet, FieldChange, FieldId, FileChange, Recommendation
from bot.recommend.noise import passes_min_change
from bot.report import Proposal, parse_state
from bot.report.markdown import escape
from bot.report.proposal import change_id
from bot.report.verification import said_verdicts
from tests.forge.test_verification import (
    LATER,
    LIVE,
    NOW,
    REVERT_LIVE,
    REVERT_MERGED,
    START,
    merge_open,
)
from tests.forge.test_verification_run import DEPLOYMENT, _comment, _serve, ref
from tests.forge.verify_history import Workload, generation, write
from tests.report.replays import comparison
from tests.support.github.scenario import REPO, run_once
from tests.support.github.server import Issue
from tests.support.prometheus import RunningPrometheus, backfill, start_prometheus

BASE, SPIKE, EVERY = 0.1, 0.3, 12
"""Cores a pod, and one sample in ``EVERY`` at ``SPIKE`` (8.3 %: under the P90 the engine's
VPA target rests on, above ``verify.margins.cpu_share``)."""
CUT = {"pay": 0.12, "cart": 0.11}
"""The CPU request each merged pull request set (it was 500m), under the spikes."""
CONFIG = b"""update_mode: auto
recommend:
  replay:
    gate: report-only
    max_over_request: 1
"""
"""The repository lets the engine cut into rare spikes (the replay shows its minutes over the
request, it does not hold the cut back): what it wants is its VPA target, the same before the
merges and after the reverts."""
MARGIN = VerifySettings().after_revert_margin
NOISE = NoiseSettings()


def _pods(name: str, generation_hash: str) -> tuple[str, str]:
    return (f"{name}-{generation_hash}-bcdfg", f"{name}-{generation_hash}-hjklm")


def _workload(name: str) -> Workload:
    """500m until ``LIVE``, the cut until the revert is live, 500m again; the same load."""
    load = {"cpu_cores": BASE, "spike_every": EVERY, "spike_cores": SPIKE}
    spans = ((START, LIVE, 0.5), (LIVE, REVERT_LIVE, CUT[name]), (REVERT_LIVE, LATER, 0.5))
    return Workload(
        name,
        tuple(
            generation(_pods(name, pods), start, end, {"cpu_request": request, **load})
            for pods, (start, end, request) in zip(
                ("7c9d8b", "5f6g7h", "8d9f2b"), spans, strict=True
            )
        ),
    )


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningPrometheus]:
    work = tmp_path_factory.mktemp("after_revert")
    written = write([_workload(n) for n in CUT], work / "history.om")
    backfill([work / "history.om"], work / "data", expected_samples=written)
    with start_prometheus(work / "data", workdir=work) as running:
        yield running


def _proposals(checkout: Path) -> list[Proposal]:
    """What an earlier run proposed: each cut, its replay predicting no minute over it."""
    out = []
    for name, cut in CUT.items():
        path = f"apps/{name}.yaml"
        old = (checkout / path).read_bytes()
        new = old.replace(b"cpu: 500m", f"cpu: {round(cut * 1000)}m".encode())
        change = FieldChange(ref(name), FieldId.REQUESTS_CPU, cut, 0.5, "app")
        rec = replace(Recommendation(ref(name), "changes"), replay=comparison())
        key = f"default/shop/{name}"
        change_set = ChangeSet(key, (change,), (rec,))
        out.append(Proposal(key, f"Right-size {name}", change_set, (FileChange(path, old, new),)))
    return out


def _open(gh, title: str) -> list[Issue]:
    return [p for p in gh.pulls(REPO, state="open") if p.title.startswith(title)]


@pytest.fixture
def reverted(github_emulator, prom, tmp_path):
    """The cuts merged, regressed and reverted by a run; the reverts merged: the forge, the
    numbers of the cuts and of their reverts."""
    gh = github_emulator
    files = {f"apps/{n}.yaml": DEPLOYMENT.format(name=n).encode() for n in CUT}
    files[".tortoise-bot.yaml"] = CONFIG
    owner, name = REPO.split("/")
    gh.create_repository(owner, name, files)
    run_once(gh, tmp_path / "earlier", _proposals)
    numbers = merge_open(gh)
    report = _serve(gh, prom, tmp_path / "run", NOW)
    assert report.ok, report.message
    assert "verification: regressed 2" in report.message
    reverts = {}
    for name, number in numbers.items():
        assert said_verdicts(_comment(gh, number)) == {ref(name).key: "regressed"}
        (revert,) = _open(gh, f"Revert #{number}")
        gh.merge(REPO, revert.number, at=datetime.fromtimestamp(REVERT_MERGED, UTC))
        reverts[name] = revert.number
    assert not _open(gh, "Right-size")  # each key's proposal was its revert
    return gh, numbers, reverts


def _cpu(name: str) -> str:
    return change_id(ref(name), "app", FieldId.REQUESTS_CPU)


def test_after_a_merged_revert_the_same_cut_is_held_and_a_nearby_one_bounded(
    reverted, prom, tmp_path
):
    gh, numbers, reverts = reverted
    report = _serve(gh, prom, tmp_path / "later", LATER)
    assert report.ok, report.message
    assert "verification: verified 2" in report.message
    for name, revert in reverts.items():
        assert said_verdicts(_comment(gh, revert)) == {ref(name).key: "verified"}

    # cart: opened, bounded by the rule, the note saying what the engine wanted
    (cart,) = _open(gh, "Right-size cart")
    state = parse_state(cart.body)
    assert state is not None
    bound = CUT["cart"] * (1 + MARGIN)
    assert dict(state.changes) == {_cpu("cart"): pytest.approx(bound)}
    said = (
        f"after revert #{reverts['cart']}: no cut as deep as #{numbers['cart']}'s, whose "
        f"outcome regressed: at least {CUT['cart'] * 1000:g}m × (1 + {MARGIN:g}) = "
        f"{bound * 1000:g}m"
    )
    match = re.search(re.escape(escape(said)) + r".*? wanted ([0-9.]+) cores", cart.body or "")
    assert match is not None, cart.body
    assert "`after_revert.floor` (wanted by `vertical.ideal`)" in (cart.body or "")
    wanted = float(match.group(1))  # the engine's own proposal, under the bound
    assert wanted < bound

    # pay: the engine wants the same (the load is the same), within the noise thresholds of
    # the cut that regressed: held, said on the run line and the dashboard, not opened
    moved, _ = passes_min_change(CUT["pay"], wanted, "cpu", NOISE)
    assert not moved  # what makes pay's case "the history has not moved"
    assert f"1 held after revert #{reverts['pay']}: default/shop/pay" in report.message
    assert not _open(gh, "Right-size pay")
    (dashboard,) = gh.issues(REPO)
    (line,) = [x for x in dashboard.body.splitlines() if "default/shop/pay -->" in x]
    why = f"held after revert #{reverts['pay']}: within the noise thresholds of #{numbers['pay']}"
    assert line.startswith("- [ ]") and escape(why) in line  # pending, with its checkbox
