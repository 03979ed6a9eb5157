"""The whole engine on small synthetic histories: statuses, rules and field changes."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import numpy as np
import pytest

from bot.config.recommend import resolve, upstream_settings
from bot.model import (
    MIB,
    ContainerHistory,
    DeclaredContainer,
    DeclaredHPA,
    DeclaredVPA,
    DeclaredWorkload,
    HpaTarget,
    ResourceValues,
    VpaContainerPolicy,
)
from bot.recommend.changes import field_changes, next_emergency_phase
from bot.recommend.engine import recommend
from bot.recommend.inputs import EmergencyState, build_input
from bot.recommend.tortoise.constants import INITIAL_TARGET_PERCENT
from bot.settings.workload import effective_containers
from tests.recommend.factories import (
    DAY_S,
    NOW_S,
    REF,
    container,
    container_history,
    history,
    hpa,
    workload,
)

DEFAULT = upstream_settings()
"""Upstream Tortoise/VPA rules: these tests pin their formulas (``test_folding.py`` tests the
bot's folding rules)."""


def _run(inp, settings=DEFAULT):
    rec = recommend(inp, settings, now_s=NOW_S)
    changes = field_changes(rec)
    assert (rec.status == "changes") == bool(changes)
    return rec, {(c.field, c.container): c for c in changes}


def test_vertical_cpu_scale_up_with_buffer_and_proportional_limit():
    # 0.5 core -> VPA target 587 m (bucket edge 511 m + 15 %); ideal 587 × 1.1 > 200 m, so
    # the request becomes trunc(587 × 1.21) = 710 m; the limit keeps its ratio 2: 1.42.
    h = history(container_history("app", 0.5, 300e6))
    inp = workload(container("app", 0.2, 512 * MIB, cpu_limit=0.4), hist=h)
    rec, changes = _run(inp)
    cpu = rec.containers[0].cpu
    assert cpu.vpa is not None
    assert cpu.vpa.target == pytest.approx(0.587)
    assert cpu.request.rule == "tortoise.vertical.up"
    assert cpu.request.proposed == pytest.approx(0.71)
    assert changes[("requests.cpu", "app")].proposed == pytest.approx(0.71)
    assert changes[("limits.cpu", "app")].proposed == pytest.approx(1.42)
    assert cpu.usage is not None
    assert cpu.usage.max == 0.5
    assert rec.status == "changes"


def test_small_change_is_filtered_by_min_change_and_kept_in_inputs():
    h = history(container_history("app", 0.5, 300e6))
    inp = workload(container("app", 0.6, 512 * MIB), hist=h)
    rec, changes = _run(inp)
    cpu = rec.containers[0].cpu
    assert cpu.request.rule == "noise.min_change"
    assert cpu.request.proposed == 0.6
    assert cpu.request.inputs["unfiltered"] == pytest.approx(0.71)
    assert ("requests.cpu", "app") not in changes
    # With a percentage threshold, min(200m, 10 % of 600m = 60m) lets the 110m change through.
    pct = resolve(DEFAULT, {"noise": {"scale_up": {"cpu": {"value": 0.2, "percentage": 10}}}})
    rec, changes = _run(inp, pct)
    assert changes[("requests.cpu", "app")].proposed == pytest.approx(0.71)


def test_memory_never_below_the_observed_peak():
    # Daily peaks: 300 MiB for 7 days, 900 MiB on one day; a low P10 target would go below it.
    t = np.arange(8 * 1440, dtype=np.float64)
    mem = np.where((t >= 1440 * 3) & (t < 1440 * 3 + 60), 900 * MIB, 300 * MIB)
    h = history(container_history("app", 0.5, mem))
    low = resolve(
        DEFAULT,
        {
            "vpa": {"memory_target_percentile": 0.1, "margin_fraction": 0},
            "admin": {"max_allowed_scaling_down_ratio": 0},
        },
    )
    inp = workload(container("app", 0.6, 2048 * MIB), hist=h)
    rec, _ = _run(inp, low)
    memory = rec.containers[0].memory
    assert memory.request.rule == "noise.memory_peak_floor"
    assert memory.request.proposed == 900 * MIB


def test_oom_forces_an_increase_past_min_change():
    oom: list[tuple[float, int, float]] = [(NOW_S - DAY_S, 0, 500.0 * MIB)]
    h = history(container_history("app", 0.5, 450 * MIB, oom=oom))
    strict = resolve(DEFAULT, {"noise": {"scale_up": {"memory": {"value": 5e9}}}})
    inp = workload(container("app", 0.6, 500 * MIB), hist=h)
    rec, changes = _run(inp, strict)
    memory = rec.containers[0].memory
    assert memory.request.proposed is not None
    assert memory.request.proposed > 600 * MIB  # at least the OOM bump max(500 + 100, 600) MiB
    assert ("requests.memory", "app") in changes
    # Without the OOM the same threshold blocks the (smaller) move.
    calm = history(container_history("app", 0.5, 450 * MIB))
    rec, changes = _run(workload(container("app", 0.6, 500 * MIB), hist=calm), strict)
    assert ("requests.memory", "app") not in changes


def test_gathering_data_without_samples_proposes_nothing():
    empty = ContainerHistory("app")
    h = history(empty)
    rec, changes = _run(workload(container("app", 0.5, 512 * MIB), hist=h))
    assert rec.status == "gathering-data"
    assert changes == {}
    assert rec.reasons


def _hpa_workload(replicas=10.0, days=8.0, **kwargs):
    h = history(
        container_history("app", 0.8, 300e6, days=days),
        container_history("istio-proxy", 0.05, 60e6, days=days),
        replicas=replicas,
        days=days,
    )
    return workload(
        container("app", 1.0, 512 * MIB, cpu_policy="horizontal"),
        container("istio-proxy", 0.1, 128 * MIB, cpu_policy="horizontal"),
        hist=h,
        hpa=hpa(3, 30, ("app", "cpu", 60), ("istio-proxy", "cpu", 60)),
        **kwargs,
    )


def test_hpa_min_max_from_slots_and_targets():
    rec, changes = _run(_hpa_workload())
    assert rec.hpa is not None
    # Constant 10 replicas: every slot asks (ceil(5), ceil(20)) = (5, 20).
    assert rec.hpa.min_replicas.proposed == 5
    assert rec.hpa.max_replicas.proposed == 20
    assert len(rec.hpa.slots) == 168
    assert changes[("hpa.minReplicas", None)].proposed == 5
    # app: 0.8 core -> bucket edge 0.8005 -> 800 m + 120 m = 920 m of 1 core: upper 92;
    # 100 - (92 - 60) = 68, at most +5 per change -> 65.
    app = next(t for t in rec.hpa.targets if t.container == "app")
    assert app.value.inputs["unlimited"] == 68
    assert app.value.proposed == 65
    # istio-proxy: rec ~ 0.06 of 0.1 core -> upper ~ 60-61 -> ~ 100, clamped 90, +5 cap -> 65.
    proxy = next(t for t in rec.hpa.targets if t.container == "istio-proxy")
    assert proxy.value.proposed == 65
    assert proxy.value.rule == "tortoise.target.max_increase"


def test_target_interval_holds_recent_changes():
    inp = _hpa_workload(target_changed_s={("istio-proxy", "cpu"): NOW_S - 3600})
    rec, changes = _run(inp)
    assert rec.hpa is not None
    proxy = next(t for t in rec.hpa.targets if t.container == "istio-proxy")
    assert (proxy.value.proposed, proxy.value.rule) == (60, "tortoise.target.interval")
    assert ("hpa.target.cpu", "istio-proxy") not in changes


def test_short_replica_history_holds_the_hpa():
    rec, changes = _run(_hpa_workload(days=3))
    assert rec.hpa is not None
    assert rec.hpa.min_replicas.rule == "tortoise.gathering_data"
    assert "72 of 168" in rec.hpa.min_replicas.reason
    assert ("hpa.minReplicas", None) not in changes
    if not changes:
        assert rec.status == "gathering-data"


def test_emergency_min_equals_max_and_freezes_requests():
    rec, changes = _run(_hpa_workload(emergency=EmergencyState(requested=True)))
    assert rec.hpa is not None
    assert rec.hpa.min_replicas.proposed == rec.hpa.max_replicas.proposed == 20
    assert rec.hpa.min_replicas.inputs["phase"] == "emergency"
    assert all(c.cpu.request.rule == "tortoise.emergency.frozen" for c in rec.containers)
    assert not any(f.startswith("requests.") for f, _ in changes)


def test_back_to_normal_steps_down_from_the_current_minimum():
    inp = _hpa_workload(emergency=EmergencyState(previous_phase="emergency"))
    inp = workload(
        *inp.containers,
        hist=inp.history,
        hpa=hpa(20, 20, ("app", "cpu", 60), ("istio-proxy", "cpu", 60)),
        emergency=EmergencyState(previous_phase="emergency"),
    )
    rec, _ = _run(inp)
    assert rec.hpa is not None
    assert rec.hpa.min_replicas.proposed == 19  # trunc(20 × 0.95)
    assert rec.hpa.min_replicas.inputs["phase"] == "back-to-normal"


def test_excluded_periods_do_not_reach_the_slots():
    days = 8.0
    rt = NOW_S - days * DAY_S + 300.0 * np.arange(int(days * DAY_S / 300))
    # Tuesday 09:00 JST occurs twice in 8 days, so excluding one occurrence leaves no gap.
    r = np.where((rt >= NOW_S - DAY_S) & (rt < NOW_S - DAY_S + 3600), 100.0, 10.0)
    inp = _hpa_workload()
    h = inp.history
    spiky = type(h)(h.ref, h.start_s, h.end_s, h.pods, h.containers, rt, r)
    base = workload(*inp.containers, hist=spiky, hpa=inp.hpa)
    rec, _ = _run(base)
    assert rec.hpa is not None
    assert rec.hpa.max_replicas.proposed == 100  # 200 capped at MaximumMaxReplicas
    excluded = workload(
        *inp.containers,
        hist=spiky,
        hpa=inp.hpa,
        excluded_intervals_s=((NOW_S - DAY_S, NOW_S - DAY_S + 3600),),
    )
    rec, _ = _run(excluded)
    assert rec.hpa is not None
    assert rec.hpa.max_replicas.proposed == 20


def test_drop_cpu_limit_is_a_removal():
    h = history(container_history("app", 0.5, 300e6))
    inp = workload(container("app", 0.2, 512 * MIB, cpu_limit=0.4), hist=h)
    drop = resolve(DEFAULT, {"limits": {"policy": "drop_cpu_limit"}})
    _rec, changes = _run(inp, drop)
    change = changes[("limits.cpu", "app")]
    assert (change.current, change.proposed) == (0.4, None)


def test_hvpa_strategy_blends_requests():
    # vpaWeight 0.5 (the seed's fractional form) = 50 %: 2 cores -> 2 + trunc((0.587 - 2)/2).
    h = history(container_history("app", 0.5, 300e6), replicas=4.0)
    settings = resolve(
        DEFAULT,
        {
            "strategy": "hvpa",
            "hvpa": {"weight_based_scaling_intervals": [{"vpa_weight": 0.5}]},
        },
    )
    inp = workload(container("app", 2.0, 512 * MIB, cpu_limit=4.0), hist=h)
    rec, changes = _run(inp, settings)
    cpu = rec.containers[0].cpu
    assert cpu.request.rule == "hvpa.weighted"
    assert cpu.request.inputs["vpa_weight"] == 50
    expected = (2000 + math.trunc((587 - 2000) * 50 / 100)) / 1000
    assert cpu.request.proposed == pytest.approx(expected)
    assert changes[("limits.cpu", "app")].proposed == pytest.approx(2 * expected)


def test_off_policy_and_missing_request_are_untouched():
    h = history(container_history("app", 0.5, 300e6))
    off = container("app", None, 512 * MIB, cpu_policy="off", memory_policy="off")
    rec, changes = _run(workload(off, hist=h))
    assert rec.containers[0].cpu.request.rule == "policy.off"
    assert rec.containers[0].memory.request.rule == "policy.off"
    assert changes == {}
    assert rec.status == "no-change"


def test_a_missing_request_with_a_policy_is_added_and_its_limit_left_alone():
    h = history(container_history("app", 0.5, 300e6))
    inp = workload(container("app", None, 512 * MIB, memory_policy="off"), hist=h)
    rec, changes = _run(inp)
    request = rec.containers[0].cpu.request
    assert request.rule == "policy.add_missing" and request.current is None
    assert request.proposed == pytest.approx(0.5, rel=0.3)
    assert rec.containers[0].cpu.limit.proposed is None
    assert set(changes) == {("requests.cpu", "app")}
    assert rec.status == "changes"


def test_build_input_policies_and_vpa_bounds():
    declared = DeclaredWorkload(
        REF,
        None,
        (
            DeclaredContainer("app", ResourceValues(1.0, 512 * MIB)),
            DeclaredContainer("sidecar", ResourceValues(0.1, None)),
            DeclaredContainer("init", ResourceValues(0.1, MIB), init=True),
        ),
        hpa=hpa(2, 10, (None, "cpu", 70)),
        vpa=DeclaredVPA(
            "frontend",
            container_policies=(VpaContainerPolicy("*", min_allowed=ResourceValues(0.05, None)),),
        ),
    )
    h = history(container_history("app", 0.5, 300e6))
    resolved = effective_containers(declared, {"sidecar": {"cpu": "vertical"}})
    inp = build_input(declared, h, containers=resolved)
    assert [c.name for c in inp.containers] == ["app", "sidecar"]
    app, sidecar = inp.containers
    assert (app.cpu_policy, app.memory_policy) == ("horizontal", "vertical")
    assert (sidecar.cpu_policy, sidecar.memory_policy) == ("vertical", "vertical")  # added
    kept = effective_containers(declared, {"sidecar": {"cpu": "vertical"}}, add_missing=False)
    assert kept["sidecar"].policies["memory"] == "off"
    assert app.min_allocated.cpu_cores == 0.05


def test_missing_container_metric_is_added_at_tortoise_initial_70():
    # Tortoise's metric sync adds a ContainerResource metric at 70 % (tortoise.md B4).
    inp = _hpa_workload()
    only_app = workload(*inp.containers, hist=inp.history, hpa=hpa(3, 30, ("app", "cpu", 60)))
    rec, changes = _run(only_app)
    assert rec.hpa is not None
    proxy = next(t for t in rec.hpa.targets if t.container == "istio-proxy")
    assert (proxy.value.current, proxy.value.proposed) == (None, INITIAL_TARGET_PERCENT)
    assert proxy.value.rule == "tortoise.target.new_metric"
    change = changes[("hpa.target.cpu", "istio-proxy")]
    assert (change.current, change.proposed) == (None, 70)
    assert "new ContainerResource metric at Tortoise's initial 70%" in change.reason


def test_missing_container_metric_is_reported_where_not_expressible():
    inp = _hpa_workload()
    only_app = workload(
        *inp.containers,
        hist=inp.history,
        hpa=hpa(3, 30, ("app", "cpu", 60)),
        container_resource_metrics=False,
    )
    rec, changes = _run(only_app)
    assert rec.hpa is not None
    proxy = next(t for t in rec.hpa.targets if t.container == "istio-proxy")
    assert (proxy.value.current, proxy.value.proposed) == (None, None)
    assert proxy.value.rule == "tortoise.target.missing_metric"
    assert "ContainerResource not expressible here" in proxy.value.reason
    assert ("hpa.target.cpu", "istio-proxy") not in changes


def test_missing_metric_without_any_per_container_metric_is_only_reported():
    # No ContainerResource metric and no pod-level one being replaced: nothing to add it next to.
    inp = _hpa_workload()
    bare = workload(*inp.containers, hist=inp.history, hpa=hpa(3, 30))
    rec, changes = _run(bare)
    assert rec.hpa is not None
    assert {t.value.rule for t in rec.hpa.targets} == {"tortoise.target.missing_metric"}
    assert not [key for key in changes if key[0].startswith("hpa.target.")]


def test_missing_memory_metric_is_added_when_the_pod_level_cpu_metric_is_replaced():
    inp = _hpa_workload()
    app, proxy = inp.containers
    app = replace(app, memory_policy="horizontal")
    both = workload(app, proxy, hist=inp.history, hpa=hpa(3, 30, (None, "cpu", 60)))
    _, changes = _run(both)
    assert changes[("hpa.target.cpu", "app")].current == 60  # the replaced pod-level target
    memory = changes[("hpa.target.memory", "app")]
    assert (memory.current, memory.proposed) == (None, 70)


def _with_policy(inp, name, **policy):
    """``inp`` with container ``name``'s policies replaced (``cpu_policy="vertical"``)."""
    containers = tuple(replace(c, **policy) if c.name == name else c for c in inp.containers)
    return replace(inp, containers=containers)


@pytest.mark.parametrize("policy", ["vertical", "off"])
def test_container_metric_of_a_resource_no_longer_horizontal_is_removed(policy):
    # Tortoise's metric sync removes a ContainerResource metric whose (container, resource) is
    # not Horizontal (tortoise.md A5): istio-proxy cpu set vertical/off -> its metric goes.
    rec, changes = _run(_with_policy(_hpa_workload(), "istio-proxy", cpu_policy=policy))
    assert rec.hpa is not None
    proxy = [t for t in rec.hpa.targets if t.container == "istio-proxy"]
    assert [(t.resource, t.value.current, t.value.proposed) for t in proxy] == [("cpu", 60, None)]
    assert proxy[0].value.rule == "tortoise.target.remove_metric"
    change = changes[("hpa.target.cpu", "istio-proxy")]
    assert (change.current, change.proposed) == (60, None)
    assert f"cpu of istio-proxy is {policy}: ContainerResource metric removed" in change.reason
    assert change.reason.endswith("[tortoise.target.remove_metric]")
    assert rec.status == "changes"
    # The app's metric is still tuned as before.
    assert [t.value.rule for t in rec.hpa.targets if t.container == "app"] != []


def test_removal_is_structural_whatever_the_targets_hold():
    # In emergency targets are frozen; the removal still goes (like an added metric).
    inp = replace(
        _with_policy(_hpa_workload(), "istio-proxy", cpu_policy="vertical"),
        emergency=EmergencyState(requested=True),
    )
    rec, changes = _run(inp)
    assert rec.hpa is not None
    [app] = [t.value for t in rec.hpa.targets if t.container == "app"]
    assert (app.rule, app.proposed) == ("tortoise.target.hold", 60)
    assert changes[("hpa.target.cpu", "istio-proxy")].proposed is None


def test_last_metric_of_an_hpa_is_kept():
    # Both cpu metrics belong to resources that are now vertical: removing both would leave an
    # HPA without metrics (Tortoise disables the HPA there). Both stay, with a reason.
    inp = _with_policy(_hpa_workload(), "istio-proxy", cpu_policy="vertical")
    inp = _with_policy(inp, "app", cpu_policy="vertical")
    rec, changes = _run(inp)
    assert rec.hpa is not None
    kept = [t.value for t in rec.hpa.targets]
    assert [(v.current, v.proposed, v.rule) for v in kept] == [
        (60, 60, "tortoise.target.keep_last_metric")
    ] * 2
    assert "no other metric would remain" in kept[0].reason
    assert not [key for key in changes if key[0].startswith("hpa.target.")]


def test_an_external_metric_keeps_the_hpa_so_the_last_resource_metric_goes():
    # One more metric (External) that the bot never touches: nothing stops the removal.
    inp = _with_policy(_hpa_workload(), "istio-proxy", cpu_policy="vertical")
    inp = _with_policy(inp, "app", cpu_policy="vertical")
    inp = replace(inp, hpa=replace(inp.hpa, other_metrics=1))
    _, changes = _run(inp)
    removed = {k[1] for k, c in changes.items() if k[0] == "hpa.target.cpu" and c.proposed is None}
    assert removed == {"app", "istio-proxy"}


def test_horizontal_metrics_and_pod_level_metrics_are_never_removed():
    # Every metric horizontal: nothing removed. A pod-level Resource metric of a resource no
    # container scales on horizontally is not a ContainerResource metric: left as is.
    _, changes = _run(_hpa_workload())
    assert not [
        c for c in changes.values() if c.field.startswith("hpa.target.") and c.proposed is None
    ]
    inp = _hpa_workload()
    inp = replace(
        inp, hpa=hpa(3, 30, ("app", "cpu", 60), ("istio-proxy", "cpu", 60), (None, "memory", 80))
    )
    rec, changes = _run(inp)
    assert rec.hpa is not None
    assert not [t for t in rec.hpa.targets if t.resource == "memory"]
    assert not [key for key in changes if key[0] == "hpa.target.memory"]


def test_metric_of_a_container_the_manifest_does_not_declare_is_left_alone():
    # An injected sidecar the manifest does not list: the bot does not know its policy.
    inp = _hpa_workload()
    inp = replace(
        inp, hpa=hpa(3, 30, ("app", "cpu", 60), ("istio-proxy", "cpu", 60), ("envoy", "cpu", 70))
    )
    rec, changes = _run(inp)
    assert rec.hpa is not None
    assert "envoy" not in {t.container for t in rec.hpa.targets}
    assert ("hpa.target.cpu", "envoy") not in changes


def test_removal_where_container_resource_is_not_expressible_is_a_skip():
    inp = replace(
        _with_policy(_hpa_workload(), "istio-proxy", cpu_policy="vertical"),
        container_resource_metrics=False,
    )
    rec, changes = _run(inp)
    assert rec.hpa is not None
    [proxy] = [t.value for t in rec.hpa.targets if t.container == "istio-proxy"]
    assert (proxy.current, proxy.proposed) == (60, 60)
    assert "remove it by hand" in proxy.reason
    assert ("hpa.target.cpu", "istio-proxy") not in changes


def test_removal_with_a_new_metric_in_the_same_proposal():
    # app cpu becomes vertical and app memory horizontal: the memory metric is added at 70 %
    # and the cpu metric removed; with istio-proxy cpu still there, the HPA keeps metrics.
    inp = _with_policy(_hpa_workload(), "app", cpu_policy="vertical", memory_policy="horizontal")
    _, changes = _run(inp)
    assert changes[("hpa.target.cpu", "app")].proposed is None
    assert changes[("hpa.target.memory", "app")].proposed == 70


def _pod_level(**kwargs):
    inp = _hpa_workload()
    return workload(*inp.containers, hist=inp.history, hpa=hpa(3, 30, (None, "cpu", 60)), **kwargs)


def test_pod_level_resource_target_is_tuned_from_the_pod_sums_where_not_expressible():
    # app rec 0.92 of 1 core + istio-proxy 0.063 of 0.1 core: 0.983/1.1 = 89.4 % -> upper 90;
    # 100 - (90 - 60) = 70, at most +5 -> 65; one change, on the pod-level metric.
    rec, changes = _run(_pod_level(container_resource_metrics=False))
    assert rec.hpa is not None
    assert [t.container for t in rec.hpa.targets] == ["*"]
    target = rec.hpa.targets[0].value
    assert target.inputs["unlimited"] == 70
    assert target.proposed == 65
    assert changes[("hpa.target.cpu", None)].proposed == 65
    assert "ContainerResource not expressible here" in changes[("hpa.target.cpu", None)].reason
    assert "container-resource-unsupported" in {n.code for n in rec.notes}


def test_pod_level_resource_metric_is_replaced_per_container():
    # Each container starts from the pod-level 60 % it replaces (tortoise.md B4 would start at
    # 70 %): app 0.92/1 = 92 % -> 100 - (92 - 60) = 68; istio-proxy 0.063/0.1 = 63 % ->
    # 100 - (63 - 60) = 97, clamped to the maximum 90; both at most +5 -> 65.
    rec, changes = _run(_pod_level())
    assert rec.hpa is not None
    assert [t.container for t in rec.hpa.targets] == ["app", "istio-proxy"]
    app, proxy = (t.value for t in rec.hpa.targets)
    assert (app.current, app.inputs["replaces"], app.inputs["metric"]) == (60, 60, "Resource")
    assert app.inputs["unlimited"] == 68
    assert proxy.inputs["unlimited"] == 90
    assert (app.proposed, proxy.proposed) == (65, 65)
    assert "replaces the pod-level Resource metric" in app.reason
    assert ("hpa.target.cpu", None) not in changes
    assert changes[("hpa.target.cpu", "app")].proposed == 65
    assert changes[("hpa.target.cpu", "istio-proxy")].current == 60


def test_replacing_the_metric_is_a_change_even_when_the_targets_stay():
    # The pod-level target changed an hour ago: +5 waits 24 h, so both containers keep 60 %,
    # yet the metric still becomes per-container (the number is written, the type changes).
    rec, changes = _run(_pod_level(target_changed_s={("*", "cpu"): NOW_S - 3600}))
    assert rec.hpa is not None
    assert [t.value.proposed for t in rec.hpa.targets] == [60, 60]
    assert {c for f, c in changes if f == "hpa.target.cpu"} == {"app", "istio-proxy"}
    assert rec.status == "changes"


def test_held_targets_keep_the_pod_level_metric():
    # emergency freezes targets: no partial replacement, the pod-level metric stays as it is.
    rec, changes = _run(_pod_level(emergency=EmergencyState(requested=True)))
    assert rec.hpa is not None
    assert [t.container for t in rec.hpa.targets] == ["*"]
    assert not any(f.startswith("hpa.target") for f, _ in changes)


def test_build_input_reads_expressibility_from_discovery():
    h = history(container_history("app", 0.5, 300e6))
    app = DeclaredContainer("app", ResourceValues(1.0, 512 * MIB))
    chart_hpa = DeclaredHPA("app", 2, 10, (HpaTarget("cpu", 70),), container_resource=False)
    chart = DeclaredWorkload(REF, None, (app,), hpa=chart_hpa)
    assert not build_input(
        chart, h, containers=effective_containers(chart)
    ).container_resource_metrics
    raw = DeclaredWorkload(
        REF, None, (app,), hpa=DeclaredHPA("app", 2, 10, (HpaTarget("cpu", 70),))
    )
    resolved = effective_containers(raw)
    assert build_input(raw, h, containers=resolved).container_resource_metrics
    assert not build_input(
        raw, h, containers=resolved, container_resource_metrics=False
    ).container_resource_metrics


def test_container_resource_unsupported_holds_targets_with_a_reason():
    inp = _hpa_workload(container_resource_metrics=False)
    rec, changes = _run(inp)
    assert rec.hpa is not None
    assert {t.value.rule for t in rec.hpa.targets} == {"hpa.container_resource_unsupported"}
    assert not any(f.startswith("hpa.target") for f, _ in changes)
    assert ("hpa.minReplicas", None) in changes


def test_next_emergency_phase_follows_the_proposal():
    rec, _ = _run(_hpa_workload(emergency=EmergencyState(requested=True)))
    assert next_emergency_phase(rec) == "emergency"
    rec, _ = _run(_hpa_workload())
    assert next_emergency_phase(rec) == "normal"


def test_short_history_is_still_gathering_data():
    h = history(container_history("app", 0.5, 300e6, days=0.5), days=0.5)
    rec, changes = _run(workload(container("app", 0.2, 512 * MIB), hist=h))
    assert rec.status == "gathering-data"
    assert "12.0 h of CPU history, 24 h needed" in rec.reasons[0]
    assert changes == {}
    shorter = resolve(DEFAULT, {"min_history_s": 3600})
    rec, _ = _run(workload(container("app", 0.2, 512 * MIB), hist=h), shorter)
    assert rec.status == "changes"


def test_mismatched_series_are_an_error_naming_the_container():
    good = container_history("app", 0.5, 300e6)
    bad = ContainerHistory(
        "app", cpu_t=good.cpu_t, cpu_pod=good.cpu_pod, cpu_cores=good.cpu_cores[:-1]
    )
    rec, changes = _run(workload(container("app", 0.2, 512 * MIB), hist=history(bad)))
    assert rec.status == "error"
    assert "container app: the cpu series differ in length" in rec.reasons
    assert changes == {}


def test_horizontal_policy_without_an_hpa_is_left_alone():
    h = history(container_history("app", 0.5, 300e6))
    rec, changes = _run(workload(container("app", 0.2, 512 * MIB, cpu_policy="horizontal"), hist=h))
    assert rec.containers[0].cpu.request.rule == "policy.horizontal_without_hpa"
    assert ("requests.cpu", "app") not in changes


def test_no_target_recommendation_at_maximum_max_replicas():
    # TestUpdateRecommendation "when HPA hits the maximumMaxReplica": targets are left alone.
    rec, changes = _run(_hpa_workload(replicas=100.0))
    assert rec.hpa is not None
    assert {t.value.rule for t in rec.hpa.targets} == {"tortoise.target.at_max_replicas"}
    assert not any(f.startswith("hpa.target") for f, _ in changes)
    assert rec.hpa.max_replicas.proposed == 100  # ceil(100 × 2) capped at MaximumMaxReplicas


def test_emergency_applies_even_while_slots_are_gathering():
    rec, _ = _run(_hpa_workload(days=3, emergency=EmergencyState(requested=True)))
    assert rec.hpa is not None
    assert rec.hpa.min_replicas.rule == "tortoise.emergency"
    assert rec.hpa.min_replicas.proposed == rec.hpa.max_replicas.proposed == 20


def test_build_input_takes_the_repository_settings_over_defaults_and_the_vpa():
    vpa = DeclaredVPA(
        "app", container_policies=(VpaContainerPolicy("*", min_allowed=ResourceValues(0.05)),)
    )
    app = DeclaredContainer("app", ResourceValues(1.0, 512 * MIB))
    declared = DeclaredWorkload(REF, 2, (app,), vpa=vpa)
    h = history(container_history("app", 0.5, 300e6))
    configured = effective_containers(
        declared, {"app": {"memory": "off"}}, {"app": ResourceValues(0.2, None)}
    )
    [got] = build_input(declared, h, containers=configured).containers
    assert (got.cpu_policy, got.memory_policy) == ("vertical", "off")
    assert got.min_allocated == ResourceValues(0.2, None)
    assert got.max_allocated == ResourceValues()


def test_min_change_judges_the_full_move_then_the_step_limit_applies():
    # 0.5 core requested, 0.1 used: the full move (to about 0.13) is far beyond minChange 200m,
    # while one 20 % step (0.1) is not. The step is proposed, both sizes in the reason.
    h = history(container_history("app", 0.1, 300e6))
    inp = workload(container("app", 0.5, 512 * MIB, cpu_limit=1.0), hist=h)
    rec, changes = _run(inp)
    cpu = rec.containers[0].cpu
    wanted = cpu.request.inputs["wanted"]
    assert isinstance(wanted, float)
    assert 0.5 - wanted >= 0.2
    assert cpu.request.rule == "tortoise.request.step_down"
    assert cpu.request.inputs["wanted_rule"] == "tortoise.vertical.down"
    assert cpu.request.proposed == pytest.approx(0.4)
    pct = round((wanted - 0.5) / 0.5 * 100)
    shown = f"{wanted * 1000:.1f}".rstrip("0").rstrip(".")  # millicores, e.g. 133m
    assert f"wants {shown}m (−{-pct} %), step-limited to 400m (−20 %)" in cpu.request.reason
    assert changes[("requests.cpu", "app")].proposed == pytest.approx(0.4)
    assert changes[("limits.cpu", "app")].proposed == pytest.approx(0.8)
    # Applied, the next run steps again (0.4 -> 0.32); then the rest (0.32 -> ~0.13) is below
    # minChange and the request stays.
    rec, changes = _run(workload(container("app", 0.4, 512 * MIB, cpu_limit=0.8), hist=h))
    assert rec.containers[0].cpu.request.proposed == pytest.approx(0.32)
    rec, changes = _run(workload(container("app", 0.32, 512 * MIB, cpu_limit=0.64), hist=h))
    assert rec.containers[0].cpu.request.rule == "noise.min_change"
    assert rec.containers[0].cpu.request.inputs["unfiltered"] == pytest.approx(wanted)
    assert f"wants {shown}m (−" in rec.containers[0].cpu.request.reason
    assert "below minChange 200m" in rec.containers[0].cpu.request.reason
    assert ("requests.cpu", "app") not in changes


def test_step_limit_never_goes_above_the_ceiling():
    # Current 3 cores above maxAllocated 2: the full move is to the ceiling, not a 20 % step.
    h = history(container_history("app", 0.1, 300e6))
    inp = workload(
        container("app", 3.0, 512 * MIB, max_allocated=ResourceValues(2.0, None)), hist=h
    )
    rec, _ = _run(inp)
    assert rec.containers[0].cpu.request.proposed == pytest.approx(2.0)


def test_memory_reasons_print_mebibytes_not_byte_counts():
    # 700 MB used against 256 MiB requested: a vertical scale-up whose reason names the VPA
    # value; with a 2 GiB limit the limit keeps its ratio 8.
    h = history(container_history("app", 0.2, 700e6))
    inp = workload(container("app", 0.2, 256 * MIB, mem_limit=2048 * MIB), hist=h)
    rec, _ = _run(inp)
    memory = rec.containers[0].memory
    assert memory.request.rule == "tortoise.vertical.up"
    assert re.fullmatch(
        r"VPA \d+(\.\d)?Mi × \(1 \+ 0\.1\)² \(scale-up buffer\)", memory.request.reason
    )
    assert memory.limit.reason == "limit/request ratio 8 kept"
    reasons = [
        v.reason for c in rec.containers for r in (c.cpu, c.memory) for v in (r.request, r.limit)
    ]
    assert not [r for r in reasons if re.search(r"\d[eE][+-]?\d|\d{7,}", r)]
