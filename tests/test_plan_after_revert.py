"""The demo shop planned after a merged revert: the pipeline passes the values that regressed
(``WorkloadMemory.reverted``, read from the bot's pull requests) to the engine, whose rule
``after_revert.floor`` bounds the proposal and the one edit writes the bounded value."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.commands.explain import describe
from bot.config.bot import load_bot_settings
from bot.forge.previous import RevertedValues, WorkloadMemory
from bot.metrics.snapshot import SnapshotSource
from bot.model import FieldId
from bot.outcome_view import outcome_json
from bot.pipeline.plan import repository_outcome
from bot.pipeline.proposals import build_proposals
from bot.report import render_pull_request

DEMO = Path(__file__).resolve().parent.parent / "bot" / "demo"
REDIS = "default/shop/StatefulSet/redis"
CHECKOUT = "prod/shop/Deployment/checkout"
MEMORY = {
    REDIS: WorkloadMemory(reverted=RevertedValues(6, 3, {("redis", FieldId.REQUESTS_CPU): 0.15})),
    CHECKOUT: WorkloadMemory(reverted=RevertedValues(7, 4, {(None, FieldId.HPA_TARGET_CPU): 85})),
}
"""Redis's CPU request (the engine cuts 250m to 163m) was cut to 150m by #3, which regressed;
checkout's pod-level target (the engine raises 70 to 80) was raised to 85 by #4."""


@pytest.fixture
def demo_repo(tmp_path) -> Path:
    root = tmp_path / "shop"
    shutil.copytree(DEMO / "repo", root)
    return root


@pytest.fixture(scope="module")
def demo_source() -> SnapshotSource:
    return SnapshotSource(DEMO / "snapshot.zip")


def _changes(plan):
    return {(o.ref.key, c.container, c.field): c for o in plan.outcomes for c in o.changes}


def test_a_revert_bounds_the_next_proposal_in_the_plan_and_its_edit(demo_repo, demo_source):
    settings = load_bot_settings(DEMO / "bot.yaml")
    now_s = demo_source.end_s
    plan = repository_outcome(demo_repo, demo_source, settings, now_s=now_s, memory=MEMORY)
    changes = _changes(plan)
    cpu = changes[(REDIS, "redis", FieldId.REQUESTS_CPU)]
    assert cpu.proposed == pytest.approx(0.18) and "[after_revert.floor]" in cpu.reason
    assert "150m × (1 + 0.2) = 180m" in cpu.reason
    assert "requests: {cpu: 180m, memory:" in plan.edit.diff  # the one edit writes it
    # shown as any rule: explain, the JSON, the pull-request body
    (redis,) = [o for o in plan.outcomes if o.ref.key == REDIS]
    explained = describe(redis)
    assert "0.25 → 0.18                [after_revert.floor] after revert #6" in explained
    assert (
        "inputs: regressed 0.15 cores, margin fraction 0.2, bound 0.18 cores, wanted 0.163 "
        "cores, reverted #3, revert #6"
    ) in explained
    request = outcome_json(redis)["containers"][0]["cpu"]["request"]
    assert (request["rule"], request["proposed"]) == ("after_revert.floor", pytest.approx(0.18))
    assert request["inputs"]["wanted_rule"] == "vertical.ideal"
    [proposal] = build_proposals(plan)
    _, body = render_pull_request(proposal)
    assert "at least 150m × \\(1 + 0.2\\) = 180m" in body
    assert "`after_revert.floor` (wanted by `vertical.ideal`)" in body
    # checkout's target: at most 85 × 0.8 = 68, which reaches the current 70: no change
    assert (CHECKOUT, None, FieldId.HPA_TARGET_CPU) not in changes
    (checkout,) = [o for o in plan.outcomes if o.ref.key == CHECKOUT]
    assert checkout.recommendation is not None and checkout.recommendation.hpa is not None
    (target,) = checkout.recommendation.hpa.targets
    assert target.value.rule == "after_revert.floor" and target.value.proposed == 70

    # verification switched off: no memory of reverts, the engine's own proposal
    off = settings.model_copy(
        update={"verify": settings.verify.model_copy(update={"enabled": False})}
    )
    plan = repository_outcome(demo_repo, demo_source, off, now_s=now_s, memory=MEMORY)
    changes = _changes(plan)
    assert changes[(REDIS, "redis", FieldId.REQUESTS_CPU)].proposed == pytest.approx(0.163)
    assert changes[(CHECKOUT, None, FieldId.HPA_TARGET_CPU)].proposed == 80
