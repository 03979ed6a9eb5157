"""Verification of merged bot pull requests, on real parts: the pull requests are opened by a
run and merged in the GitHub emulator; what ran before and after each merge is a history
backfilled into a real Prometheus, kube-state-metrics' requests changing mid-history as the
new pods roll out.

- ``web``: rolled out, CPU well under its new request: verified;
- ``api``: merged a day ago, its pods still run the old request: waiting;
- ``cart``: rolled out, then OOM-killed twice where none was predicted: regressed;
- ``pay``: rolled out with a request below its usage: CPU over request, regressed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.config.bot import BotSettings
from bot.config.forge import PullRequestConfig
from bot.config.metrics import PrometheusConfig
from bot.forge.github import GitHubForge
from bot.forge.github.auth import TokenCredentials
from bot.forge.previous import PreviousProposal
from bot.metrics import HistoryRequest, PrometheusSource
from bot.metrics.client import ClientStats
from bot.metrics.snapshot import SnapshotSource, record_snapshot
from bot.model import DeclaredContainer, DeclaredWorkload, Inventory, ResourceValues
from bot.pipeline.verification import comment_on_merges, verification_unavailable, verify_merged
from bot.report import Proposal
from bot.report.proposal import PullRequestState
from bot.report.verification import VERIFICATION_MARKER, said_verdicts
from tests.forge.verify_history import STEP_S, Workload, generation, rollout, write
from tests.report.replays import comparison
from tests.support.github.scenario import REPO, create_repository, proposal_for, ref, run_once
from tests.support.github.scenario import settings as fast_settings
from tests.support.prometheus import RunningPrometheus, backfill, start_prometheus
from tests.support.snapshots import without_cluster_state

DAY = 86_400.0
LIVE = 1_699_833_600.0
"""When the rollouts of the merged values finish (a whole hour)."""
START = LIVE - 8 * DAY
NOW = LIVE + 7 * DAY + 3600
MERGED = LIVE - 2 * 3600
API_MERGED = NOW - DAY
NAMES = ["web", "api", "cart", "pay"]
OLD_PODS = {n: (f"{n}-7c9d8b-bcdfg", f"{n}-7c9d8b-hjklm") for n in NAMES}
NEW_PODS = {n: (f"{n}-5f6g7h-nprst", f"{n}-5f6g7h-vwxz2") for n in NAMES}
PROPOSED = {"web": 250, "api": 250, "cart": 250, "pay": 100}
"""The CPU request each merged pull request sets (millicores); each was 500m."""
REVERT_MERGED = NOW + 3600
REVERT_LIVE = NOW + 2 * 3600
"""``pay``'s revert (back to 500m) is merged and rolled out after ``NOW``."""
LATER = REVERT_LIVE + 7 * DAY + 3600
"""A week after the revert went live: the revert verified, ``api`` never live."""


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningPrometheus]:
    old = {"cpu_request": 0.5, "cpu_cores": 0.1, "throttled_share": 0.0}
    new = {"cpu_request": 0.25, "cpu_cores": 0.1, "throttled_share": 0.0}

    def roll(name: str, before: dict[str, float], after=None, oom: tuple[float, ...] = ()):
        return rollout(
            name,
            start_s=START,
            switch_s=LIVE,
            end_s=LATER,
            before=before,
            after=after,
            oom_at_s=oom,
        )

    workloads = [
        roll("web", old, new),
        roll("api", old),
        roll("cart", old, new, (LIVE + DAY, LIVE + 2 * DAY)),
        Workload(
            "pay",
            (
                generation(OLD_PODS["pay"], START, LIVE, {"cpu_request": 0.5, "cpu_cores": 0.15}),
                generation(
                    NEW_PODS["pay"],
                    LIVE - 1800,
                    REVERT_LIVE,
                    {"cpu_request": 0.1, "cpu_cores": 0.15},
                ),
                generation(
                    ("pay-8d9f2b-bcdfg", "pay-8d9f2b-hjklm"),
                    REVERT_LIVE - 1800,
                    LATER,
                    {"cpu_request": 0.5, "cpu_cores": 0.15},
                ),
            ),
        ),
    ]
    work = tmp_path_factory.mktemp("verification")
    written = write(workloads, work / "history.om")
    backfill([work / "history.om"], work / "data", expected_samples=written)
    with start_prometheus(work / "data", workdir=work) as running:
        yield running


def _proposals(checkout: Path) -> list[Proposal]:
    """One pull request per workload, its replay predicting no CPU over request, no OOM."""
    out = []
    for name in NAMES:
        p = proposal_for(checkout, [name], PROPOSED[name])
        recs = tuple(replace(r, replay=comparison()) for r in p.change_set.recommendations)
        out.append(replace(p, change_set=replace(p.change_set, recommendations=recs)))
    return out


def _inventory() -> Inventory:
    """What the repository declares once merged: each workload's container at its new request."""
    return Inventory(
        ("prod",),
        tuple(
            DeclaredWorkload(
                ref(n), 2, (DeclaredContainer("app", ResourceValues(PROPOSED[n] / 1000)),)
            )
            for n in NAMES
        ),
    )


def _verify(gh, prom: RunningPrometheus, workdir: Path, now_s: float = NOW):
    forge = GitHubForge(fast_settings(gh), TokenCredentials(gh.token), workdir=workdir)
    session = forge.open(REPO, PullRequestConfig())
    source = PrometheusSource(PrometheusConfig(url=prom.url, gzip=False, step_s=STEP_S))
    try:
        verified = verify_merged(
            session.previous_proposals(),
            _inventory(),
            source,
            [HistoryRequest(ref(n), ("app",)) for n in NAMES],
            BotSettings(),
            now_s=now_s,
        )
        return verified, comment_on_merges(session, verified)
    finally:
        source.close()
        session.disconnect()


def merge_open(gh, at: float | Callable[[str], float] = MERGED) -> dict[str, int]:
    """Merge every open pull request of ``REPO`` at ``at`` (unix seconds, or a function of the
    workload's name, the last part of its branch): the pull requests' numbers by that name."""
    numbers = {}
    for issue in gh.pulls(REPO, state="open"):
        name = issue.pull.head.rsplit("/", 1)[-1]
        when = at(name) if callable(at) else at
        gh.merge(REPO, issue.number, at=datetime.fromtimestamp(when, UTC))
        numbers[name] = issue.number
    return numbers


@pytest.fixture
def merged(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, NAMES)
    run_once(gh, tmp_path / "run", _proposals)
    numbers = merge_open(gh, lambda name: API_MERGED if name == "api" else MERGED)
    assert sorted(numbers) == sorted(NAMES)
    return gh, numbers


def _comments(gh, number: int) -> list[str]:
    issue = next(i for i in gh.pulls(REPO) if i.number == number)
    return [c.body for c in issue.comments if VERIFICATION_MARKER in c.body]


def test_each_merge_is_verified_waiting_or_regressed_and_said_once(merged, prom, tmp_path):
    gh, numbers = merged
    verified, problems = _verify(gh, prom, tmp_path / "first")
    assert problems == []
    status = {key.rsplit("/", 1)[-1]: v for p in verified for key, v in p.verdicts.items()}
    assert {n: v.status for n, v in status.items()} == {
        "web": "verified",
        "api": "waiting",
        "cart": "regressed",
        "pay": "regressed",
    }, {n: v.reason for n, v in status.items()}
    assert status["api"].reason == "waiting for the new values to be live"
    live = status["web"].live_s
    assert live is not None and LIVE - STEP_S <= live <= LIVE + STEP_S
    (oom,) = status["cart"].findings
    assert oom.kind == "oom" and oom.observed == 2.0 and oom.predicted == 0.0
    (cpu,) = status["pay"].findings
    assert cpu.kind == "cpu" and cpu.observed == pytest.approx(1.0) and cpu.before == 0.0
    restore = {p.number: dict(p.restore) for p in verified}
    pay_cpu = f"{ref('pay').key}/app/requests.cpu"
    assert restore[numbers["pay"]] == {pay_cpu: (0.1, 0.5)}  # the regressed field only
    assert restore[numbers["cart"]] == {}  # OOM names the memory fields, which it left alone
    assert restore[numbers["web"]] == restore[numbers["api"]] == {}
    assert "`requests.cpu`: 0.1 → 0.5" in _comments(gh, numbers["pay"])[0]
    for name, number in numbers.items():
        (comment,) = _comments(gh, number)
        assert said_verdicts(comment) == {ref(name).key: status[name].status}
    assert "| app\\: CPU throttled | – | 0.0 % | 0.0 % |" in _comments(gh, numbers["web"])[0]
    assert (
        "| app\\: CPU minutes over request | 0.0 % | 0.0 % | 100.0 % |"
        in _comments(gh, numbers["pay"])[0]
    )


def test_a_second_run_with_nothing_new_writes_nothing(merged, prom, tmp_path):
    gh, numbers = merged
    _verify(gh, prom, tmp_path / "first")
    gh.reset_calls()
    _, problems = _verify(gh, prom, tmp_path / "second")
    assert problems == [] and gh.writes() == []
    assert all(len(_comments(gh, n)) == 1 for n in numbers.values())


def test_a_verdict_that_changes_edits_the_one_comment(merged, prom, tmp_path):
    gh, numbers = merged
    early, _ = _verify(gh, prom, tmp_path / "first", now_s=LIVE + DAY / 2)
    cart = ref("cart").key
    said = {k: v for p in early for k, v in p.verdicts.items()}
    assert said[cart].status == "waiting" and "0.5 of 7 days" in said[cart].reason
    assert said[ref("pay").key].status == "regressed"  # said as soon as seen, not after 7 days
    assert said_verdicts(_comments(gh, numbers["cart"])[0]) == {cart: "waiting"}
    gh.reset_calls()
    _verify(gh, prom, tmp_path / "second")
    edits = [c for c in gh.writes() if c.method == "PATCH" and "/issues/comments/" in c.path]
    edited = {said_verdicts(c.body["body"]).popitem()[0] for c in edits}
    assert edited == {cart, ref("web").key}  # waiting -> regressed, waiting -> verified
    (comment,) = _comments(gh, numbers["cart"])
    assert said_verdicts(comment) == {cart: "regressed"}


def _pulls(merged_s: float = MERGED) -> list[PreviousProposal]:
    """One merged pull request per workload, each setting its ``PROPOSED`` CPU request (500m
    before), all merged at ``merged_s``, as a forge would list them."""
    return [
        PreviousProposal(
            f"k-{n}",
            i + 1,
            f"b-{n}",
            open=False,
            merged=True,
            state=PullRequestState(
                f"k-{n}",
                "p",
                "f",
                changes={f"{ref(n).key}/app/requests.cpu": PROPOSED[n] / 1000},
                previous={f"{ref(n).key}/app/requests.cpu": 0.5},
            ),
            merged_at_s=merged_s,
        )
        for i, n in enumerate(NAMES)
    ]


def test_the_live_moments_and_the_throttling_take_three_queries(prom):
    """Four merged workloads of one namespace, read through the history source: the live
    moments and the throttling in a fixed number of queries, whatever the number of workloads
    (``api`` never ran its merged value: merged a week ago here, never live)."""
    pulls = _pulls()
    source = PrometheusSource(PrometheusConfig(url=prom.url, gzip=False, step_s=STEP_S))
    stats = ClientStats()
    try:
        with source.client.counting(stats):
            verified = verify_merged(
                pulls,
                _inventory(),
                source,
                [HistoryRequest(ref(n), ("app",)) for n in NAMES],
                BotSettings(),
                now_s=NOW,
            )
    finally:
        source.close()
    statuses = sorted(v.status for p in verified for v in p.verdicts.values())
    assert statuses == ["never-live", "regressed", "regressed", "verified"]
    # on the calling thread (the history fetch runs on its own threads): the live moments in
    # one query (every merge sets requests.cpu) and the throttling in two (one chunk)
    assert stats.requests == 3


def _statuses(pulls) -> dict[str, tuple[str, float | None, list[str]]]:
    return {
        key: (v.status, v.live_s, sorted(f.kind for f in v.findings))
        for p in pulls
        for key, v in p.verdicts.items()
    }


Figures = tuple[dict[str, float], dict[str, float], int]


def _figures(pulls) -> dict[str, tuple[Figures, Figures]]:
    """Per live workload, its figures before and after the merge (CPU minutes over request,
    throttled periods, OOM kills), rounded."""

    def rounded(figures) -> Figures:
        return (
            {k: round(v, 3) for k, v in figures.cpu_share.items()},
            {k: round(v, 3) for k, v in figures.throttle_share.items()},
            figures.total_oom_kills,
        )

    return {
        key: (rounded(v.before), rounded(v.after))
        for p in pulls
        for key, v in p.verdicts.items()
        if v.before is not None and v.after is not None
    }


def test_a_snapshot_that_recorded_what_ran_verifies_as_prometheus_does(prom, tmp_path):
    """``tortoise-bot snapshot`` records the requests and CFS periods with the history: the
    replayed verification gives Prometheus' verdicts; an older snapshot without those members
    still replays the history and says why it cannot verify."""
    requests = [HistoryRequest(ref(n), ("app",)) for n in NAMES]
    source = PrometheusSource(PrometheusConfig(url=prom.url, gzip=False, step_s=STEP_S))
    path = tmp_path / "history.snapshot"
    try:
        direct = verify_merged(_pulls(), _inventory(), source, requests, BotSettings(), now_s=NOW)
        record_snapshot(source, requests, start_s=START, end_s=NOW, path=path, cluster=source)
    finally:
        source.close()
    replay = SnapshotSource(path)
    assert verification_unavailable(replay, BotSettings()) is None
    replayed = verify_merged(_pulls(), _inventory(), replay, requests, BotSettings(), now_s=NOW)
    assert _statuses(replayed) == _statuses(direct)
    # the same figures: the throttling from the recorded CFS periods, the shares from the history
    assert _figures(replayed) == _figures(direct)
    assert any(after[1] for _, after in _figures(replayed).values())  # throttling read
    assert {s for s, _, _ in _statuses(replayed).values()} == {
        "verified",
        "regressed",
        "never-live",
    }
    web = {k: v for p in replayed for k, v in p.verdicts.items()}[ref("web").key]
    assert web.live_s is not None and LIVE - STEP_S <= web.live_s <= LIVE + STEP_S

    old = tmp_path / "old.snapshot"
    without_cluster_state(path, old)
    older = SnapshotSource(old)
    assert older.fetch(requests, start_s=START, end_s=NOW).histories.keys() == set(map(ref, NAMES))
    reason = verification_unavailable(older, BotSettings())
    assert reason is not None and reason.startswith("old.snapshot was recorded without")
    assert "record it again with `tortoise-bot snapshot`" in reason
    assert verify_merged(_pulls(), _inventory(), older, requests, BotSettings(), now_s=NOW) == []
