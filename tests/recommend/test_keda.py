"""What a KEDA ScaledObject cannot take is held (``bot.recommend.keda``): a floor above a
scale-to-zero ``minReplicaCount``, a trigger added or removed; every changed value names the
ScaledObject; an HPA's recommendation is left as it is."""

from __future__ import annotations

import dataclasses

import pytest

from bot.model import (
    POD_LEVEL,
    REMOVE_METRIC,
    DeclaredHPA,
    Explained,
    HpaRecommendation,
    HpaTarget,
    HpaTargetRecommendation,
    KedaScaler,
    Recommendation,
    WorkloadRef,
)
from bot.recommend import keda
from bot.recommend.rules import Rule

REF = WorkloadRef("Deployment", "shop", "web")


def _scaled(min_count: int, *external: str, targets: tuple[HpaTarget, ...] = ()) -> DeclaredHPA:
    return DeclaredHPA(
        "keda-hpa-web-scaler",
        max(1, min_count),
        20,
        targets or (HpaTarget("cpu", 60),),
        len(external),
        keda=KedaScaler("web-scaler", min_count, external),
    )


def _rec(min_proposed: int, *targets: HpaTargetRecommendation) -> Recommendation:
    hpa = HpaRecommendation(
        Explained(1, min_proposed, Rule.TORTOISE_REPLICAS_MIN, "slot floor"),
        Explained(20, 24, Rule.TORTOISE_REPLICAS_MAX, "peak × 1.2"),
        targets,
    )
    return Recommendation(REF, "changes", hpa=hpa)


def _target(container: str, current: int | None, proposed: int | None, **inputs: str):
    value = Explained(current, proposed, Rule.TORTOISE_TARGET_KEEP, "target", inputs)
    return HpaTargetRecommendation(container, "cpu", value)


def test_scale_to_zero_keeps_the_floor():
    held = keda.hold(_scaled(0), _rec(3))
    assert held.hpa is not None
    assert held.hpa.min_replicas.proposed == held.hpa.min_replicas.current == 1
    assert held.hpa.min_replicas.rule == Rule.KEDA_SCALE_TO_ZERO
    assert "minReplicaCount 0 (scale to zero) is kept" in held.hpa.min_replicas.reason
    assert held.hpa.max_replicas.proposed == 24  # the rest proposed as for an HPA
    assert held.hpa.max_replicas.reason == "KEDA ScaledObject web-scaler: peak × 1.2"


def test_a_floor_above_zero_is_proposed():
    held = keda.hold(_scaled(2), _rec(3))
    assert held.hpa is not None and held.hpa.min_replicas.proposed == 3
    assert held.hpa.min_replicas.reason.startswith("KEDA ScaledObject web-scaler: ")


def test_triggers_are_never_added_or_removed():
    rec = _rec(
        1,
        _target(POD_LEVEL, 60, 70, metric="Resource"),
        _target("proxy", None, 80),  # a new ContainerResource metric
        _target("web", 60, None, metric="ContainerResource"),  # a removal
        _target("app", 60, 75, metric="Resource"),  # splitting the pod-level trigger
    )
    held = keda.hold(_scaled(1), rec)
    assert held.hpa is not None
    by_container = {t.container: t.value for t in held.hpa.targets}
    assert set(by_container) == {POD_LEVEL, "web"}
    assert by_container[POD_LEVEL].proposed == 70
    assert (
        by_container["web"].proposed == 60 and by_container["web"].rule == Rule.KEDA_TRIGGERS_KEPT
    )
    assert by_container["web"].rule != REMOVE_METRIC


def test_hold_is_idempotent_and_leaves_an_hpa_alone():
    once = keda.hold(_scaled(0), _rec(3))
    assert keda.hold(_scaled(0), once) == once
    plain = dataclasses.replace(_scaled(1), keda=None)
    rec = _rec(3, _target("proxy", None, 80))
    assert keda.hold(plain, rec) is rec


@pytest.mark.parametrize(
    ("hpa", "codes"),
    [
        (_scaled(2, "cron", "prometheus"), ["keda"]),
        (_scaled(0), ["keda", "keda-scale-to-zero"]),
        (None, []),
    ],
)
def test_notes(hpa, codes):
    assert [n.code for n in keda.notes(hpa)] == codes


def test_external_triggers_alone_give_the_engine_no_hpa():
    external = DeclaredHPA(
        "keda-hpa-worker", 1, 100, (), 1, keda=KedaScaler("worker", 0, ("kafka",))
    )
    assert external.external_only and keda.engine_hpa(external) is None
    (note,) = keda.notes(external)
    assert note.code == "keda-external" and "(kafka)" in note.message
    assert keda.engine_hpa(_scaled(1)) == _scaled(1)
