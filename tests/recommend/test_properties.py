"""Properties of the whole engine (hypothesis): monotone in usage, within the allowed range,
limits never below requests, and a proposal once applied proposes nothing more."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.config.recommend import RecommendSettings, upstream_settings
from bot.model import MIB, ContainerHistory, ResourceValues
from bot.recommend.changes import field_changes
from bot.recommend.engine import recommend
from bot.recommend.inputs import WorkloadInput
from tests.recommend.factories import NOW_S, container, container_history, history, workload

STEP_S = 1800.0
"""Coarse samples keep each example fast; the rules do not depend on the sampling step."""
PROPS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

cpu_levels = st.floats(min_value=0.005, max_value=6.0)
mem_levels = st.floats(min_value=20e6, max_value=6e9)
shape_seeds = st.integers(min_value=0, max_value=2**16)
requests_cpu = st.floats(min_value=0.01, max_value=8.0)
requests_mem = st.integers(min_value=16 * MIB, max_value=8 * 1024 * MIB)
limit_ratios = st.sampled_from([None, 1.0, 1.5, 2.0, 4.0])


def _usage(level: float, seed: int, days: float = 4.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(days * 86400 / STEP_S)
    return level * rng.uniform(0.3, 1.0, n)


def _inp(cpu, mem, req_cpu, req_mem, ratio, *, min_alloc=None, max_alloc=None) -> WorkloadInput:
    h = history(container_history("app", cpu, mem, days=4.0, step_s=STEP_S), days=4.0)
    return workload(
        container(
            "app",
            req_cpu,
            req_mem,
            cpu_limit=req_cpu * ratio if ratio else None,
            mem_limit=int(req_mem * ratio) if ratio else None,
            min_allocated=min_alloc,
            max_allocated=max_alloc,
        ),
        hist=h,
    )


@PROPS
@given(cpu_levels, mem_levels, shape_seeds, st.floats(min_value=1.0, max_value=5.0))
def test_more_usage_never_lowers_the_vpa_estimate(cpu, mem, seed, factor):
    base = _inp(_usage(cpu, seed), _usage(mem, seed + 1), 1.0, 512 * MIB, None)
    more = _inp(_usage(cpu, seed) * factor, _usage(mem, seed + 1) * factor, 1.0, 512 * MIB, None)
    a = recommend(base, RecommendSettings(), now_s=NOW_S)
    b = recommend(more, RecommendSettings(), now_s=NOW_S)
    for ca, cb in zip(a.containers, b.containers, strict=True):
        for res in ("cpu", "memory"):
            va, vb = ca.resource(res).vpa, cb.resource(res).vpa
            assert va is not None
            assert vb is not None
            assert vb.target >= va.target
            assert vb.upper_bound >= va.upper_bound
            assert vb.lower_bound >= va.lower_bound


@PROPS
@given(cpu_levels, mem_levels, shape_seeds, requests_cpu, requests_mem, limit_ratios)
def test_proposals_stay_within_allowed_and_limits_above_requests(
    cpu, mem, seed, req_cpu, req_mem, ratio
):
    low = ResourceValues(0.05, 64 * MIB)
    high = ResourceValues(2.0, 2048 * MIB)
    inp = _inp(
        _usage(cpu, seed),
        _usage(mem, seed + 1),
        req_cpu,
        req_mem,
        ratio,
        min_alloc=low,
        max_alloc=high,
    )
    rec = recommend(inp, RecommendSettings(), now_s=NOW_S)
    for c in rec.containers:
        for res in ("cpu", "memory"):
            rr = c.resource(res)
            assert rr.vpa is not None
            lo, hi = low.get(res), high.get(res)
            assert lo is not None
            assert hi is not None
            assert lo <= rr.vpa.target <= hi
            if rr.request.proposed != rr.request.current:
                assert rr.request.proposed is not None
                assert lo <= rr.request.proposed <= hi
            if rr.limit.proposed is not None and rr.request.proposed is not None:
                assert rr.limit.proposed >= rr.request.proposed


def _apply(inp: WorkloadInput, rec) -> WorkloadInput:
    containers = []
    for c, r in zip(inp.containers, rec.containers, strict=True):
        containers.append(
            replace(
                c,
                requests=ResourceValues(r.cpu.request.proposed, r.memory.request.proposed),
                limits=ResourceValues(r.cpu.limit.proposed, r.memory.limit.proposed),
            )
        )
    return replace(inp, containers=tuple(containers))


@PROPS
@given(cpu_levels, mem_levels, shape_seeds, requests_cpu, requests_mem, limit_ratios)
def test_applying_a_proposal_then_recomputing_proposes_nothing(
    cpu, mem, seed, req_cpu, req_mem, ratio
):
    # The defaults are a fixed point: `plan --write` then `plan` proposes nothing more.
    inp = _inp(_usage(cpu, seed), _usage(mem, seed + 1), req_cpu, req_mem, ratio)
    first = recommend(inp, RecommendSettings(), now_s=NOW_S)
    applied = _apply(inp, first)
    second = recommend(applied, RecommendSettings(), now_s=NOW_S)
    assert field_changes(second) == ()
    assert second.status == "no-change"


@PROPS
@given(
    cpu_levels,
    mem_levels,
    shape_seeds,
    st.floats(min_value=1.0, max_value=5.0),
    requests_cpu,
    requests_mem,
)
def test_more_usage_never_lowers_the_proposed_request(cpu, mem, seed, factor, req_cpu, req_mem):
    base = _inp(_usage(cpu, seed), _usage(mem, seed + 1), req_cpu, req_mem, None)
    more = _inp(_usage(cpu, seed) * factor, _usage(mem, seed + 1) * factor, req_cpu, req_mem, None)
    a = recommend(base, RecommendSettings(), now_s=NOW_S)
    b = recommend(more, RecommendSettings(), now_s=NOW_S)
    for ca, cb in zip(a.containers, b.containers, strict=True):
        for res in ("cpu", "memory"):
            pa, pb = ca.resource(res).request.proposed, cb.resource(res).request.proposed
            assert pa is not None
            assert pb is not None
            assert pb >= pa


@PROPS
@given(cpu_levels, mem_levels, shape_seeds, requests_cpu, requests_mem, limit_ratios)
def test_step_limited_proposals_settle_and_never_cut_more_than_a_step(
    cpu, mem, seed, req_cpu, req_mem, ratio
):
    # With the upstream step limit, applying each proposal in turn reaches a request that
    # proposes nothing; no proposal goes down by more than MaxAllowedScalingDownRatio allows.
    settings = upstream_settings()
    keep = settings.admin.max_allowed_scaling_down_ratio
    inp = _inp(_usage(cpu, seed), _usage(mem, seed + 1), req_cpu, req_mem, ratio)
    for _ in range(40):
        rec = recommend(inp, settings, now_s=NOW_S)
        if not field_changes(rec):
            assert rec.status == "no-change"
            return
        for c in rec.containers:
            for res in ("cpu", "memory"):
                req = c.resource(res).request
                assert req.current is not None
                assert req.proposed is not None
                assert req.proposed >= math.trunc(round(req.current * 1000) * keep) / 1000
        inp = _apply(inp, rec)
    raise AssertionError("proposals did not settle within 40 applications")


DAY = 86400.0


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start_days=st.floats(min_value=0.5, max_value=16.0),
    ended_days=st.floats(min_value=0.0, max_value=12.0),
    gap=st.one_of(st.none(), st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 0.9))),
    with_hpa=st.booleans(),
    kind=st.sampled_from(["Deployment", "StatefulSet", "CronJob"]),
    seed=shape_seeds,
)
def test_histories_with_gaps_late_starts_and_early_ends_never_raise(
    start_days, ended_days, gap, with_hpa, kind, seed
):
    """Samples from ``start_days`` to ``ended_days`` before now, with a hole (its start and
    length as shares of that span): the engine answers, whatever the shape."""
    from tests.recommend.factories import REF, hpa

    rng = np.random.default_rng(seed)
    t = np.arange(NOW_S - start_days * DAY, NOW_S - ended_days * DAY, STEP_S, dtype=np.float64)
    if gap is not None and t.size:
        begin = t[0] + gap[0] * (t[-1] - t[0])
        t = t[(t < begin) | (t >= begin + gap[1] * (t[-1] - t[0]))]
    pods = (np.arange(t.size) // 7 % 3).astype(np.int32) if kind == "CronJob" else None
    pod = pods if pods is not None else np.zeros(t.size, dtype=np.int32)
    ch = ContainerHistory(
        "app",
        cpu_t=t,
        cpu_pod=pod,
        cpu_cores=rng.uniform(0.01, 2.0, t.size),
        mem_t=t.copy(),
        mem_pod=pod.copy(),
        mem_bytes=rng.uniform(50e6, 2e9, t.size),
        oom_t=t[:1].copy(),
        oom_pod=pod[:1].copy(),
        oom_request_bytes=np.full(min(t.size, 1), 512.0 * MIB),
    )
    h = history(days=max(start_days, 0.5))
    h = replace(
        h,
        containers={"app": ch},
        replicas_t=t.copy() if with_hpa else np.zeros(0),
        replicas=rng.integers(1, 6, t.size).astype(np.float64) if with_hpa else np.zeros(0),
    )
    inp = workload(
        container("app", 0.5, 512 * MIB),
        hist=h,
        hpa=hpa(2, 8, (None, "cpu", 70)) if with_hpa and kind != "CronJob" else None,
    )
    inp = replace(inp, ref=replace(REF, kind=kind))
    rec = recommend(inp, RecommendSettings(), now_s=NOW_S)
    assert rec.status in {"changes", "no-change", "gathering-data"}, rec.reasons
