"""Rule ``after_revert.floor``: after a merged revert, the next proposal for a restored field
does not cut as deep as the pull request that regressed (known numbers, margin 0.2)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.config.recommend import RecommendSettings
from bot.model import (
    MIB,
    POD_LEVEL,
    Explained,
    FieldId,
    HpaRecommendation,
    HpaTargetRecommendation,
    Number,
    Recommendation,
)
from bot.recommend.after_revert import bound_of, bounded, with_after_revert
from bot.recommend.changes import field_changes
from bot.recommend.engine import recommend
from bot.recommend.inputs import AfterRevert
from bot.recommend.rules import Rule
from tests.recommend.factories import (
    NOW_S,
    REF,
    container,
    container_history,
    history,
    hpa,
    workload,
)

SETTINGS = RecommendSettings()


@pytest.mark.parametrize(
    ("field_id", "proposed", "regressed", "expected"),
    [
        (FieldId.REQUESTS_CPU, 0.09, 0.1, 0.12),  # 100m × 1.2: the cut that regressed, + 20 %
        (FieldId.REQUESTS_CPU, 0.11, 0.1, 0.12),
        (FieldId.REQUESTS_CPU, 0.3, 0.1, 0.3),  # above the bound: unchanged
        (FieldId.REQUESTS_CPU, 0.05, 0.1234, 0.149),  # 148.08m rounded up to whole millicores
        (FieldId.LIMITS_CPU, 0.1, 0.2, 0.24),
        (FieldId.REQUESTS_MEMORY, 200e6, 256e6, 256e6 * 1.2),
        (FieldId.LIMITS_MEMORY, 100, 1001, 1202),  # 1201.2 bytes rounded up to whole bytes
        (FieldId.HPA_MAX_REPLICAS, 4, 5, 6),  # 5 × 1.2 = 6 replicas
        (FieldId.HPA_MAX_REPLICAS, 4, 4, 5),  # 4.8 rounded up
        (FieldId.HPA_MIN_REPLICAS, 1, 2, 3),  # 2.4 rounded up
        (FieldId.HPA_TARGET_CPU, 85, 80, 64),  # less is safer: 80 × 0.8
        (FieldId.HPA_TARGET_MEMORY, 90, 77, 61),  # 61.6 rounded down
        (FieldId.HPA_TARGET_CPU, 50, 80, 50),  # below the bound: unchanged
    ],
)
def test_the_bound_is_the_regressed_value_with_the_margin(field_id, proposed, regressed, expected):
    assert bounded(field_id, proposed, regressed, 0.2) == pytest.approx(expected)


def test_margin_zero_bounds_at_the_value_that_regressed():
    assert bound_of(FieldId.REQUESTS_CPU, 0.1, 0.0) == pytest.approx(0.1)
    assert bound_of(FieldId.HPA_TARGET_CPU, 80, 0.0) == 80
    assert bound_of(FieldId.HPA_MAX_REPLICAS, 5, 0.0) == 5


def _vertical(cpu_cores: float = 0.07):
    """One vertical container at 500m / 512Mi using ``cpu_cores``: the engine cuts the CPU
    request to 93m at 0.07 cores (VPA target, rule vertical.ideal)."""
    h = history(container_history("app", cpu_cores, 300e6))
    return workload(container("app", 0.5, 512 * MIB), hist=h)


def _changes(inp):
    rec = recommend(inp, SETTINGS, now_s=NOW_S)
    return rec, {(c.field, c.container): c for c in field_changes(rec)}


def test_the_engine_bounds_a_restored_request_and_explains_it():
    _, free = _changes(_vertical())
    cpu = free[(FieldId.REQUESTS_CPU, "app")]
    assert cpu.proposed == pytest.approx(0.093)  # the cut without a revert: below 120m
    after = AfterRevert(6, 3, {("app", FieldId.REQUESTS_CPU): 0.1}, 0.2)
    rec, changes = _changes(replace(_vertical(), after_revert=after))
    cpu = changes[(FieldId.REQUESTS_CPU, "app")]
    assert cpu.proposed == pytest.approx(0.12) and cpu.current == 0.5  # 100m × 1.2
    assert cpu.reason.endswith(f"[{Rule.AFTER_REVERT_FLOOR}]")
    assert "after revert #6" in cpu.reason and "100m × (1 + 0.2) = 120m" in cpu.reason
    request = rec.containers[0].cpu.request
    assert request.rule == "after_revert.floor"
    assert dict(request.inputs) == {
        "regressed": 0.1,
        "margin_fraction": 0.2,
        "bound": pytest.approx(0.12),
        "wanted": pytest.approx(0.093),
        "wanted_rule": "vertical.ideal",
        "reverted": "#3",
        "revert": "#6",
    }
    # the memory request was not restored: the engine's own cut
    assert changes[(FieldId.REQUESTS_MEMORY, "app")] == free[(FieldId.REQUESTS_MEMORY, "app")]
    # the replay scores what is proposed: the bounded request
    assert rec.replay is not None
    proposed = rec.replay.proposed.container_cpu("app")
    assert proposed is not None and proposed.request_cores == pytest.approx(0.12)


def test_a_bound_reaching_the_current_value_drops_the_change():
    after = AfterRevert(6, 3, {("app", FieldId.REQUESTS_CPU): 0.45}, 0.2)  # 540m ≥ 500m
    rec, changes = _changes(replace(_vertical(), after_revert=after))
    assert (FieldId.REQUESTS_CPU, "app") not in changes
    request = rec.containers[0].cpu.request
    assert request.proposed == request.current == 0.5 and request.rule == "after_revert.floor"
    assert request.reason.startswith("kept: after revert #6")


def test_a_workload_the_revert_left_alone_and_a_margin_that_does_not_bind_change_nothing():
    _, free = _changes(_vertical())
    other = AfterRevert(6, 3, {("sidecar", FieldId.REQUESTS_CPU): 0.1}, 0.2)
    assert _changes(replace(_vertical(), after_revert=other))[1] == free
    low = AfterRevert(6, 3, {("app", FieldId.REQUESTS_CPU): 0.05}, 0.2)  # 60m < 93m
    assert _changes(replace(_vertical(), after_revert=low))[1] == free


def test_the_engine_bounds_hpa_targets_and_replica_bounds():
    h = history(container_history("app", 0.3, 300e6, pods=3), replicas=3)
    inp = workload(
        container("app", 0.5, 512 * MIB, cpu_policy="horizontal"),
        hist=h,
        hpa=hpa(2, 10, ("app", "cpu", 60)),
    )
    _, free = _changes(inp)
    assert free[(FieldId.HPA_TARGET_CPU, "app")].proposed == 70  # raised 60 -> 70 without one
    assert free[(FieldId.HPA_MAX_REPLICAS, None)].proposed == 8
    values = {("app", FieldId.HPA_TARGET_CPU): 80, (None, FieldId.HPA_MAX_REPLICAS): 7}
    rec, changes = _changes(replace(inp, after_revert=AfterRevert(6, 3, values, 0.2)))
    target = changes[(FieldId.HPA_TARGET_CPU, "app")]
    assert target.proposed == 64 and "at most 80% × (1 − 0.2) = 64%" in target.reason
    assert changes[(FieldId.HPA_MAX_REPLICAS, None)].proposed == 9  # 7 × 1.2 = 8.4, rounded up
    values[(None, FieldId.HPA_MAX_REPLICAS)] = 9  # 10.8 rounded up reaches the current 10
    rec, changes = _changes(replace(inp, after_revert=AfterRevert(6, 3, values, 0.2)))
    assert (FieldId.HPA_MAX_REPLICAS, None) not in changes
    assert rec.hpa is not None and rec.hpa.max_replicas.proposed == 10


def test_a_pod_level_target_and_the_replica_bounds_are_read_without_a_container():
    hpa_part = HpaRecommendation(
        Explained(2, 2, Rule.TORTOISE_REPLICAS_MIN, "kept"),
        Explained(10, 4, Rule.TORTOISE_REPLICAS_MAX, "max"),
        (
            HpaTargetRecommendation(
                POD_LEVEL, "cpu", Explained(60, 85, Rule.TORTOISE_TARGET_MAX, "")
            ),
        ),
    )
    rec = Recommendation(REF, "changes", hpa=hpa_part)
    values: dict[tuple[str | None, FieldId], Number] = {
        (None, FieldId.HPA_TARGET_CPU): 80,
        (None, FieldId.HPA_MAX_REPLICAS): 4,
        (None, FieldId.HPA_MIN_REPLICAS): 1,  # proposed 2 = current: no change to bound
    }
    out = with_after_revert(AfterRevert(6, 3, values, 0.2), rec)
    assert out.hpa is not None
    assert out.hpa.targets[0].value.proposed == 64  # 80 × 0.8
    assert out.hpa.max_replicas.proposed == 5  # 4.8 rounded up
    assert out.hpa.min_replicas is hpa_part.min_replicas
    assert [c.field for c in field_changes(out)] == [
        FieldId.HPA_MAX_REPLICAS,
        FieldId.HPA_TARGET_CPU,
    ]
    assert with_after_revert(None, rec) is rec
    assert with_after_revert(AfterRevert(6, 3, {}, 0.2), rec) is rec
    low: dict[tuple[str | None, FieldId], Number] = {(None, FieldId.HPA_TARGET_CPU): 120}
    assert with_after_revert(AfterRevert(6, 3, low, 0.2), rec) is rec  # 96 above 85: unchanged


def test_the_backtest_scores_the_engines_own_cut_without_the_bound():
    """The backtest is the engine one horizon ago: a revert merged since does not bound it,
    or it would hide how deep the engine itself cuts."""
    h = history(container_history("app", 0.07, 300e6, days=16), days=16)
    after = AfterRevert(6, 3, {("app", FieldId.REQUESTS_CPU): 0.1}, 0.2)
    inp = workload(container("app", 0.5, 512 * MIB), hist=h, after_revert=after)
    rec = recommend(inp, SETTINGS, now_s=NOW_S)
    assert rec.containers[0].cpu.request.proposed == pytest.approx(0.12)
    assert rec.backtest is not None and rec.backtest.proposed is not None
    earlier = rec.backtest.proposed.container_cpu("app")
    assert earlier is not None and earlier.request_cores == pytest.approx(0.093)


def test_a_bounded_min_replicas_lifts_a_max_replicas_cut_below_it():
    hpa_part = HpaRecommendation(
        Explained(6, 3, Rule.TORTOISE_REPLICAS_MIN, "min"),  # 6 restored by the revert
        Explained(10, 4, Rule.TORTOISE_REPLICAS_MAX, "max"),
        (),
    )
    rec = Recommendation(REF, "changes", hpa=hpa_part)
    values: dict[tuple[str | None, FieldId], Number] = {(None, FieldId.HPA_MIN_REPLICAS): 4}
    out = with_after_revert(AfterRevert(6, 3, values, 0.2), rec)
    assert out.hpa is not None
    assert out.hpa.min_replicas.proposed == 5  # 4 × 1.2 = 4.8, rounded up
    high = out.hpa.max_replicas
    assert (high.current, high.proposed, high.rule) == (10, 5, Rule.AFTER_REVERT_FLOOR)
    assert high.reason == (
        "after revert #6: raised to the bounded minReplicas, which it may not be below"
    )
    assert high.inputs["wanted"] == 4 and high.inputs["bounded"] == 5
    roomy = replace(hpa_part, max_replicas=Explained(10, 8, Rule.TORTOISE_REPLICAS_MAX, "max"))
    kept = with_after_revert(AfterRevert(6, 3, values, 0.2), replace(rec, hpa=roomy))
    assert kept.hpa is not None and kept.hpa.max_replicas is roomy.max_replicas


def test_a_bounded_request_lifts_a_limit_cut_below_it():
    inp = workload(
        container("app", 0.5, 512 * MIB, cpu_limit=1.0),
        hist=history(container_history("app", 0.05, 300e6)),
    )
    free = recommend(inp, SETTINGS, now_s=NOW_S).containers[0].cpu
    assert free.limit.proposed is not None and free.limit.proposed < 0.24  # the engine's cut
    values: dict[tuple[str | None, FieldId], Number] = {("app", FieldId.REQUESTS_CPU): 0.2}
    rec = recommend(
        replace(inp, after_revert=AfterRevert(6, 3, values, 0.2)), SETTINGS, now_s=NOW_S
    )
    cpu = rec.containers[0].cpu
    assert cpu.request.proposed == 0.24  # 200m × 1.2
    assert cpu.limit.proposed == 0.24 and cpu.limit.rule == Rule.AFTER_REVERT_FLOOR
    assert "raised to the bounded cpu request" in cpu.limit.reason
