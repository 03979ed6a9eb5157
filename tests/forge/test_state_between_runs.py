"""State between runs read back from the bot's own pull requests.

The demo shop (manifests + recorded history) is served through ``serve_repository`` against
the GitHub emulator: a merged bot pull request is the only memory of when an HPA target last
changed and of the emergency phase the last proposal left.
"""

from __future__ import annotations

import gc
import math
import os
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from ruamel.yaml import YAML

from bot.config.forge import PullRequestConfig
from bot.config.recommend import resolve
from bot.forge.branches import group_key
from bot.forge.github import GitHubForge
from bot.forge.github.auth import TokenCredentials
from bot.forge.previous import PreviousProposal, split_change_id, workload_memory
from bot.metrics.snapshot import SnapshotSource
from bot.model import EmergencyPhase, FieldId, WorkloadRef
from bot.pipeline.plan import repository_outcome
from bot.pipeline.serve import serve_repository
from bot.report import PullRequestState, embed_state, parse_state
from bot.report.proposal import change_id
from tests.support.github.scenario import settings as fast_settings
from tests.test_pipeline import demo_settings, demo_source

__all__ = ["demo_settings", "demo_source"]

DEMO = Path(__file__).resolve().parents[2] / "bot" / "demo"
REPO = "octo/shop"
FRONTEND = WorkloadRef("Deployment", "shop", "frontend")
CHECKOUT = WorkloadRef("Deployment", "shop", "checkout", "prod")
"""The demo's checkout runs at 90 % of its CPU request against a 70 % target: the target
goes up 5 points per change (toward 80, then 85)."""
HOUR_S = 3600.0


# --------------------------------------------------------------------------- pure parts


def _state(
    key: str,
    changes: dict[str, float | int | None],
    phases: dict[str, EmergencyPhase] | None = None,
):
    return PullRequestState(key, "p", "f", changes, phases=phases or {})


def _merged(number: int, at: float, state: PullRequestState | None) -> PreviousProposal:
    return PreviousProposal(
        key=state.key if state else "k",
        number=number,
        branch=f"b{number}",
        open=False,
        merged=True,
        state=state,
        merged_at_s=at,
        closed_at_s=at,
    )


def test_state_phases_round_trip_and_old_bodies_read_as_none():
    state = _state("k", {"a/-/hpa.minReplicas": 3}, {"w": "emergency"})
    assert parse_state(f"text\n{embed_state(state)}\n") == state
    old = embed_state(_state("k", {})).replace(',"phases":{}', "")
    assert '"phases"' not in old
    parsed = parse_state(old)
    assert parsed is not None and dict(parsed.phases) == {}


def test_change_ids_split_back_into_workload_container_and_field():
    cid = change_id(FRONTEND, None, FieldId.HPA_TARGET_CPU)
    assert split_change_id(cid) == (FRONTEND.key, "-", "hpa.target.cpu")
    assert split_change_id(change_id(FRONTEND, "app", FieldId.REQUESTS_CPU)) == (
        FRONTEND.key,
        "app",
        "requests.cpu",
    )
    assert split_change_id("no-slashes") is None


def test_memory_takes_the_latest_merge_of_each_target_and_phase():
    w = FRONTEND.key
    pulls = [
        _merged(1, 100.0, _state("k", {f"{w}/-/hpa.target.cpu": 65}, {w: "emergency"})),
        _merged(2, 300.0, _state("k", {f"{w}/app/hpa.target.memory": 70}, {w: "back-to-normal"})),
        _merged(3, 200.0, _state("k", {f"{w}/-/hpa.target.cpu": 70}, {w: "normal"})),
        # open and closed-unmerged pull requests changed nothing in the repository
        PreviousProposal("k", 4, "b4", True, False, _state("k", {f"{w}/-/hpa.target.cpu": 75})),
        PreviousProposal(
            "k", 5, "b5", False, False, _state("k", {}, {w: "emergency"}), None, 400.0
        ),
        _merged(6, 500.0, None),  # unreadable body
    ]
    memory = workload_memory(pulls)[w]
    assert dict(memory.target_changed_s) == {("*", "cpu"): 200.0, ("app", "memory"): 300.0}
    assert (memory.emergency_phase, memory.phase_pull) == ("back-to-normal", 2)


def test_a_merged_state_without_phases_means_normal_and_unmentioned_workloads_know_nothing():
    w = FRONTEND.key
    pulls = [
        _merged(1, 100.0, _state("k", {}, {w: "emergency"})),
        _merged(2, 200.0, _state("k", {f"{w}/app/requests.cpu": 0.5})),
    ]
    memory = workload_memory(pulls)
    assert memory[w].emergency_phase == "normal"
    assert memory[w].target_changed_s == {}
    assert "other" not in memory


# --------------------------------------------------------------------------- against the emulator


def _files(emergency: bool) -> dict[str, bytes]:
    root = DEMO / "repo"
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    # what waits between runs is under test here, not the money threshold: small steps open too
    assert files[".tortoise-bot.yaml"].rstrip().endswith(b"labels: [right-sizing]")
    files[".tortoise-bot.yaml"] += b"  min_monthly_change: 0\n"
    if emergency:
        files[".tortoise-bot.yaml"] = _with_emergency(files[".tortoise-bot.yaml"], True)
    return files


def _with_emergency(config: bytes, on: bool) -> bytes:
    rule = b"  - match: Deployment/shop/frontend\n    emergency: true\n"
    if on:
        return config.replace(b"workloads:\n", b"workloads:\n" + rule, 1)
    return config.replace(rule, b"")


class Runs:
    """Runs of ``serve_repository`` on the demo shop (pushed to the emulator, the frontend in
    emergency when asked), each from a fresh checkout."""

    def __init__(
        self, gh, tmp_path: Path, source: SnapshotSource, bot_settings, *, emergency: bool
    ) -> None:
        gh.create_repository("octo", "shop", _files(emergency=emergency))
        self.gh, self.tmp_path, self.source, self.settings = gh, tmp_path, source, bot_settings
        self.now_s = source.end_s
        self.count = 0
        self.forge = GitHubForge(fast_settings(gh), TokenCredentials(gh.token), workdir=tmp_path)

    def serve(self, now_s: float):
        self.count += 1
        self.forge.workdir = self.tmp_path / f"run{self.count}"
        return serve_repository(REPO, self.forge, self.source, self.settings, now_s=now_s)

    def pull_of(self, name: str, state: str = "open"):
        pulls = [
            p
            for p in self.gh.pulls(REPO, state=state)
            if p.pull is not None and p.pull.head.endswith(f"/{name}")
        ]
        return max(pulls, key=lambda p: p.number) if pulls else None

    def manifest(self) -> dict:
        text = self.gh.repository(REPO).git.read_file("main", "apps/raw/frontend.yaml")
        assert text is not None
        docs = list(YAML(typ="safe").load_all(text))
        return next(d for d in docs if d["kind"] == "HorizontalPodAutoscaler")["spec"]


def _changes(pull) -> dict[str, float | int | None]:
    state = parse_state(pull.body)
    assert state is not None
    return dict(state.changes)


CHECKOUT_TARGET = change_id(CHECKOUT, None, FieldId.HPA_TARGET_CPU)
MIN_REPLICAS = change_id(FRONTEND, None, FieldId.HPA_MIN_REPLICAS)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("hours_ago", "raised"), [(2.0, False), (25.0, True)], ids=["2h-held", "25h-raised"]
)
def test_a_target_raised_by_a_merged_pull_request_waits_24_hours(
    github_emulator, tmp_path, demo_source, demo_settings, hours_ago, raised
):
    gh = github_emulator
    # Tortoise's own target steps (+5 points, one change a day) are what waits across runs.
    recommend = resolve(demo_settings.recommend, {"replicas": {"target": "upstream"}})
    demo_settings = demo_settings.model_copy(update={"recommend": recommend})
    runs = Runs(gh, tmp_path, demo_source, demo_settings, emergency=False)
    now_s = runs.now_s
    assert runs.serve(now_s).ok
    first = runs.pull_of("checkout")
    assert first is not None
    raised_to = _changes(first)[CHECKOUT_TARGET]
    assert raised_to == 75  # 70 + 5
    gh.merge(REPO, first.number, at=datetime.fromtimestamp(now_s - hours_ago * HOUR_S, UTC))

    # what the pipeline hands the engine: the merge time, read from the pull request
    session = _session(gh, tmp_path / "plan")
    root = session.checkout()
    memory = session.workload_memory()
    assert memory[CHECKOUT.key].target_changed_s == {("*", "cpu"): now_s - hours_ago * HOUR_S}
    plan = repository_outcome(root, demo_source, demo_settings, now_s=now_s, memory=memory)
    outcome = next(o for o in plan.outcomes if o.ref == CHECKOUT)
    assert outcome.recommendation is not None and outcome.recommendation.hpa is not None
    target = outcome.recommendation.hpa.targets[0].value
    assert target.current == raised_to
    if raised:
        assert (target.proposed, target.rule) == (80, "tortoise.target.max_increase")
    else:
        assert (target.proposed, target.rule) == (raised_to, "tortoise.target.interval")
        assert f"changed {hours_ago:.1f} h ago" in target.reason
    # without the memory (``plan`` without GitHub), the target would move again at once
    blind = repository_outcome(root, demo_source, demo_settings, now_s=now_s)
    blind_target = next(o for o in blind.outcomes if o.ref == CHECKOUT).recommendation
    assert blind_target is not None and blind_target.hpa is not None
    assert blind_target.hpa.targets[0].value.proposed != raised_to

    # and the next run's pull request says the same
    assert runs.serve(now_s).ok
    second = runs.pull_of("checkout")
    if raised:
        assert second is not None and second.number != first.number
        assert _changes(second)[CHECKOUT_TARGET] == target.proposed
    else:
        assert second is None or CHECKOUT_TARGET not in _changes(second)


@pytest.mark.slow
def test_emergency_then_one_step_back_per_merged_proposal(
    github_emulator, tmp_path, demo_source, demo_settings
):
    gh = github_emulator
    runs = Runs(gh, tmp_path, demo_source, demo_settings, emergency=True)
    now_s = runs.now_s

    # 1. in emergency: minReplicas = maxReplicas, the phase kept in the pull request
    assert runs.serve(now_s).ok
    first = runs.pull_of("frontend")
    assert first is not None
    changes = _changes(first)
    state = parse_state(first.body)
    assert state is not None and state.phases[FRONTEND.key] == "emergency"
    gh.merge(REPO, first.number)
    spec = runs.manifest()
    assert spec["minReplicas"] == spec["maxReplicas"] == changes[MIN_REPLICAS]
    emergency_min = spec["minReplicas"]

    # 2. a human lifts the emergency in the config
    config = gh.repository(REPO).git.read_file("main", ".tortoise-bot.yaml")
    assert config is not None
    gh.push(REPO, "main", {".tortoise-bot.yaml": _with_emergency(config, False)})

    # 3. the next run steps back by the reduction factor (tortoise.md E2), not to normal at once
    assert runs.serve(now_s).ok
    second = runs.pull_of("frontend")
    assert second is not None and second.number != first.number
    step = math.trunc(emergency_min * 0.95)
    assert _changes(second)[MIN_REPLICAS] == step
    state = parse_state(second.body)
    assert state is not None and state.phases[FRONTEND.key] == "back-to-normal"
    assert "tortoise.back_to_normal.step" in (second.body or "")
    # a run that does not know the phase (``plan``) would jump to the normal value
    normal = repository_outcome(
        _checkout(gh, tmp_path / "blind"), demo_source, demo_settings, now_s=now_s
    )
    rec = next(o for o in normal.outcomes if o.ref == FRONTEND).recommendation
    assert rec is not None and rec.hpa is not None
    assert rec.hpa.min_replicas.proposed < step

    # 4. merged: the step after it starts from there; an unchanged rerun writes nothing
    gh.merge(REPO, second.number)
    assert runs.serve(now_s).ok
    third = runs.pull_of("frontend")
    assert third is not None
    assert _changes(third)[MIN_REPLICAS] in (math.trunc(step * 0.95), rec.hpa.min_replicas.proposed)
    gh.reset_calls()
    assert runs.serve(now_s).ok
    assert gh.writes() == [], [str(c) for c in gh.writes()]
    gh.assert_valid()


def _session(gh, workdir: Path):
    forge = GitHubForge(fast_settings(gh), TokenCredentials(gh.token), workdir=workdir)
    return forge.open(REPO, PullRequestConfig())


def _checkout(gh, workdir: Path) -> Path:
    return _session(gh, workdir).checkout()


def test_previous_reads_the_latest_pull_request_of_a_key_from_the_one_listing(
    github_emulator, tmp_path, demo_source, demo_settings
):
    gh = github_emulator
    runs = Runs(gh, tmp_path, demo_source, demo_settings, emergency=False)
    key = group_key(FRONTEND, "workload")
    session = runs.forge.open(REPO, PullRequestConfig())
    session.checkout()
    assert session.previous(key) is None
    assert runs.serve(demo_source.end_s).ok
    pull = runs.pull_of("frontend")
    assert pull is not None
    merged_at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    gh.merge(REPO, pull.number, at=merged_at)

    gh.reset_calls()
    session = runs.forge.open(REPO, PullRequestConfig())
    session.checkout()
    previous = session.previous(key)
    assert previous is not None
    assert (previous.number, previous.merged, previous.open) == (pull.number, True, False)
    assert previous.merged_at_s == previous.closed_at_s == merged_at.timestamp()
    assert previous.state == parse_state(pull.body)
    assert session.previous("prod/elsewhere/none") is None
    memory = session.workload_memory()
    assert memory[FRONTEND.key].emergency_phase == "normal"
    listings = [c for c in gh.reads() if c.path.endswith("/pulls")]
    assert len(listings) == 1  # previous(), previous() again and workload_memory() share it

    # a full run (memory before planning, publish after it) still lists pull requests once
    gh.reset_calls()
    assert runs.serve(demo_source.end_s).ok
    listings = [c for c in gh.reads() if c.path.endswith("/pulls")]
    assert len(listings) == 1, [str(c) for c in gh.reads()]
    gh.assert_valid()


def _connections_to(port: int) -> int:
    """This process's TCP connections to ``port`` on the loopback (from /proc)."""
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            link = os.readlink(fd)
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if remote_port == port and fields[9] in inodes and fields[3] == "01":  # ESTABLISHED
                count += 1
    return count


def test_a_served_repository_keeps_no_connection_to_github(
    github_emulator, tmp_path, demo_source, demo_settings
):
    gh = github_emulator
    port = urlsplit(gh.api_url).port
    assert port is not None
    runs = Runs(gh, tmp_path, demo_source, demo_settings, emergency=False)
    gc.disable()  # nothing closed by the collector behind the test's back
    try:
        for _ in range(3):
            assert runs.serve(demo_source.end_s).ok
            assert _connections_to(port) == 0
    finally:
        gc.enable()
