"""The backtest (the engine one horizon ago, scored on the days since) and the absolute budget
on CPU minutes over request (``replay.budget``, ``replay.backtest_raise``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.config.recommend import RecommendSettings, resolve
from bot.model import MIB
from bot.recommend.engine import _without_backtest, recommend
from bot.recommend.quantiles import weighted_upper_quantile
from bot.recommend.replay.compare import current_values, proposed_values
from bot.recommend.replay.figures import replay
from bot.recommend.replay.series import ReplaySeries
from tests.recommend.factories import (
    DAY_S,
    NOW_S,
    container,
    container_history,
    history,
    hpa,
    series,
    workload,
)

DEFAULT = RecommendSettings()
NO_BACKTEST = resolve(DEFAULT, {"replay": {"backtest": "off"}})
STEP_S = 300.0


def _single(cpu: np.ndarray, request: float, days: float = 14.0):
    hist = history(container_history("app", cpu, 200 * MIB, days=days, step_s=STEP_S), days=days)
    return workload(container("app", request, 256 * MIB, mem_limit=256 * MIB), hist=hist)


def _growing(days: float = 14.0, per_day: float = 0.05) -> np.ndarray:
    t = series(days, STEP_S)
    age_days = (t - t[0]) / DAY_S
    daily = 0.5 + 0.5 * np.sin(2 * np.pi * age_days)  # a daily cycle, 0 … 1
    return 0.1 * (1 + per_day * age_days) * (0.6 + 0.8 * daily)


def test_the_backtest_is_the_engine_a_horizon_ago_scored_on_the_days_since():
    cpu = _growing()
    inp = _single(cpu, 0.3)
    rec = recommend(inp, DEFAULT, now_s=NOW_S)
    bt = rec.backtest
    assert bt is not None and bt.unavailable is None
    cut = NOW_S - 7 * DAY_S
    assert bt.trained_until_s == cut
    then = recommend(inp, NO_BACKTEST, now_s=cut)
    then_request = then.containers[0].cpu.request.proposed
    assert bt.proposed is not None and bt.current is not None
    past = bt.proposed.container_cpu("app")
    assert past is not None and past.request_cores == then_request
    scored = cpu[series(14.0, STEP_S) > cut]
    expected = np.count_nonzero(scored > then_request) / scored.size
    assert past.over_request_minutes / past.container_minutes == pytest.approx(expected)
    assert bt.current.container_cpu("app").request_cores == 0.3  # type: ignore[union-attr]
    # the prediction for this proposal: its own request (else the current one) on those days
    now = rec.containers[0].cpu.request
    mine = now.proposed if now.proposed is not None else now.current
    assert mine is not None and mine != then_request
    assert dict(bt.expected)["app"] == np.count_nonzero(scored > mine) / scored.size


def test_a_growing_service_is_raised_by_what_the_backtest_missed():
    # (the forecast's own trend off: the raise is what is tested)
    base = resolve(DEFAULT, {"forecast": {"trend": "off", "seasonality": "off"}})
    cpu = _growing(per_day=0.08)
    inp = _single(cpu, 0.3)
    wanted = recommend(inp, resolve(base, {"replay": {"max_over_request": 1.0}}), now_s=NOW_S)
    rec = recommend(inp, base, now_s=NOW_S)
    request = rec.containers[0].cpu.request
    bt = rec.backtest
    assert bt is not None and bt.proposed is not None
    past = bt.proposed.container_cpu("app")
    assert past is not None and past.request_cores is not None
    share = past.over_request_minutes / past.container_minutes
    assert share > 0.01  # last week's value was exceeded more than the budget allows
    scored = cpu[series(14.0, STEP_S) > NOW_S - 7 * DAY_S]
    k = float(np.quantile(scored / past.request_cores, 0.99, method="higher"))
    assert request.rule == "replay.backtest_raise"
    assert request.inputs["raise_factor"] == pytest.approx(k, rel=1e-6)
    before = wanted.containers[0].cpu.request.proposed
    assert before is not None and request.proposed is not None
    assert request.proposed == pytest.approx(before * k, abs=0.001)
    assert "backtest" in request.reason and "1.00 %" in request.reason
    # what the backtest predicts for this proposal: the proposal itself on the days it scored.
    # Last week's request × k is at the budget there by construction (k is fitted on those
    # days); the proposal applies k to a base already sized on them, so it sits above it.
    at_budget = np.count_nonzero(scored > past.request_cores * k) / scored.size
    assert request.proposed > past.request_cores * k and 0.005 < at_budget <= 0.01
    expected = dict(bt.expected)["app"]
    assert expected == np.count_nonzero(scored > request.proposed) / scored.size < at_budget


def test_a_proposal_over_the_budget_in_the_replay_is_raised_even_above_the_current_value():
    t = series(14.0, STEP_S)
    cpu = np.full(t.size, 0.2)
    cpu[(np.arange(t.size) % 20) == 0] = 0.5  # 5 % of the minutes at 0.5 core
    inp = _single(cpu, 0.3)
    rec = recommend(inp, NO_BACKTEST, now_s=NOW_S)
    request = rec.containers[0].cpu.request
    assert request.rule == "replay.budget"
    assert request.proposed == 0.5 > 0.3
    assert request.inputs["over_request_share"] == pytest.approx(0.05, abs=0.002)
    assert rec.status == "changes"
    assert rec.replay is not None
    after = rec.replay.proposed.container_cpu("app")
    assert after is not None and after.over_request_minutes == 0.0


def test_the_backtest_s_run_gives_the_engine_s_values_without_its_figures():
    """The run one horizon ago leaves out the replay figures (``report`` False), nothing
    else: its values, rules and reasons are the engine's own at that moment."""
    t = series(14.0, STEP_S)
    cpu = np.full(t.size, 0.2)
    cpu[(np.arange(t.size) % 20) == 0] = 0.5
    for inp in (_single(cpu, 0.3), _single(_growing(), 0.3)):
        for now_s in (NOW_S, NOW_S - 7 * DAY_S):
            full = recommend(inp, NO_BACKTEST, now_s=now_s)
            lean = _without_backtest(inp, NO_BACKTEST, now_s)
            assert full.status == lean.status
            assert lean.containers == full.containers
            assert (lean.hpa, lean.reasons, lean.notes) == (full.hpa, full.reasons, full.notes)
            assert lean.replay is None
            assert (full.replay is not None) == (full.status == "changes")
    raised = recommend(_single(cpu, 0.3), NO_BACKTEST, now_s=NOW_S)
    assert raised.containers[0].cpu.request.rule == "replay.budget"  # the budget's path ran


def test_within_the_budget_nothing_is_raised_and_without_it_the_old_engine_returns():
    t = series(14.0, STEP_S)
    inp = _single(0.2 + 0.01 * np.sin(t / 3600.0), 0.5)
    rec = recommend(inp, DEFAULT, now_s=NOW_S)
    assert rec.containers[0].cpu.request.rule not in ("replay.budget", "replay.backtest_raise")
    off = resolve(DEFAULT, {"replay": {"max_over_request": 1.0, "backtest": "off"}})
    spiky = np.full(t.size, 0.2)
    spiky[::20] = 0.5
    plain = recommend(_single(spiky, 0.3), off, now_s=NOW_S)
    assert plain.containers[0].cpu.request.rule not in ("replay.budget", "replay.backtest_raise")
    assert plain.backtest is None


def test_too_short_a_history_has_no_backtest_and_says_why():
    inp = _single(np.full(int(6 * DAY_S / STEP_S), 0.2), 0.3, days=6.0)
    bt = recommend(inp, DEFAULT, now_s=NOW_S).backtest
    assert bt is not None and bt.proposed is None
    assert bt.unavailable == "history of 6.0 days: a backtest needs more than the horizon of 7 days"
    short = _single(np.full(int(7.5 * DAY_S / STEP_S), 0.2), 0.3, days=7.5)
    bt = recommend(short, DEFAULT, now_s=NOW_S).backtest
    assert bt is not None and bt.unavailable is not None
    assert "gathering-data" in bt.unavailable and "24 h needed" in bt.unavailable


def test_the_upper_quantile_leaves_at_most_the_share_above_it():
    values = np.array([5.0, 1.0, 3.0, 2.0, 4.0])
    assert weighted_upper_quantile(values, None, 0.2) == 4.0
    assert weighted_upper_quantile(values, None, 0.0) == 5.0
    assert weighted_upper_quantile(values, np.array([1.0, 1, 1, 1, 6]), 0.5) == 4.0
    assert weighted_upper_quantile(values, np.array([1.0, 1, 6, 1, 1]), 0.5) == 3.0


@settings(max_examples=25, deadline=None)
@given(
    base=st.floats(0.05, 1.0),
    spike=st.floats(1.5, 6.0),
    every=st.integers(5, 200),
    request=st.floats(0.05, 2.0),
)
def test_the_final_request_is_over_budget_only_when_a_named_rule_says_why(
    base, spike, every, request
):
    t = series(10.0, STEP_S)
    cpu = np.full(t.size, base)
    cpu[::every] = base * spike
    rec = recommend(_single(cpu, request, days=10.0), NO_BACKTEST, now_s=NOW_S)
    r = rec.containers[0].cpu.request
    final = r.proposed if r.proposed is not None else r.current
    assert final is not None
    last = cpu[t >= NOW_S - 7 * DAY_S]  # the budget's cycle: the last horizon of 7 days
    share = np.count_nonzero(last > final + 1e-12) / last.size
    assert share <= 0.01 or r.rule in ("tortoise.request.max", "node.max_allocatable"), (
        r.rule,
        r.reason,
        share,
    )


def test_a_raise_still_below_the_current_request_is_a_cut_and_passes_min_change_as_one():
    t = series(14.0, STEP_S)
    cpu = np.full(t.size, 0.2)
    cpu[(np.arange(t.size) % 50) == 0] = 0.5  # 2 % of the minutes at 0.5 core
    # (the gate off: with it, the gate holds this cut back first, judged against the current)
    no_gate = resolve(NO_BACKTEST, {"replay": {"gate": "off"}})
    rec = recommend(_single(cpu, 0.52), no_gate, now_s=NOW_S)
    request = rec.containers[0].cpu.request
    assert request.rule == "replay.budget"
    assert request.proposed == request.current == 0.52  # 0.5 would be a cut below minChange
    assert "below minChange" in request.reason
    wanted = request.inputs["wanted"]
    assert isinstance(wanted, float) and wanted < 0.3  # what the VPA alone asked for


def test_the_gate_and_the_budget_judge_the_last_cycle_not_a_load_that_ended():
    t = series(14.0, STEP_S)
    cpu = np.where(t < NOW_S - 7 * DAY_S, 0.6, 0.3)  # the load halved a week ago
    recent = t >= NOW_S - 7 * DAY_S
    cpu[recent & (np.arange(t.size) % 25 == 0)] = 0.45  # 4 % of the last week at 0.45
    # the gate holds the cut back to the last week's 99th percentile (its search, to 1/32 of
    # the move), not to the old load's 0.6
    rec = recommend(_single(cpu, 0.7), NO_BACKTEST, now_s=NOW_S)
    request = rec.containers[0].cpu.request
    assert request.rule == "replay.gate"
    assert request.proposed is not None and 0.45 <= request.proposed < 0.47
    assert "of the last 7 days" in request.reason
    # without the gate, the budget raises the VPA's cut to exactly that percentile
    no_gate = resolve(NO_BACKTEST, {"replay": {"gate": "off"}})
    request = recommend(_single(cpu, 0.7), no_gate, now_s=NOW_S).containers[0].cpu.request
    assert request.rule == "replay.budget"
    assert request.proposed == 0.45
    assert "replay of the last 7 days" in request.reason


@settings(max_examples=50, deadline=None)
@given(
    values=st.lists(st.floats(0, 10), min_size=1, max_size=60),
    share=st.floats(0, 1),
)
def test_the_unweighted_quantile_is_the_weighted_one_with_equal_weights(values, share):
    v = np.array(values)
    plain = weighted_upper_quantile(v, None, share)
    assert plain == weighted_upper_quantile(v, np.ones(v.size), share)
    assert np.count_nonzero(v > plain) <= share * v.size + 1e-9


def test_an_hpa_s_prediction_replays_the_proposed_target_not_the_recorded_pods():
    """With an HPA, the prediction for the proposal replays its targets and bounds on the
    scored days: fewer pods at a higher target carry more load each, which the recorded pods
    (run at the current target) do not show."""
    days, pods = 14.0, 10
    t = series(days)
    rng = np.random.default_rng(7)
    per_pod = 0.6 * (1 + 0.25 * rng.standard_normal(t.size * pods))
    hist = history(
        container_history("app", per_pod, 300 * MIB, days=days, pods=pods),
        replicas=float(pods),
        days=days,
    )
    inp = workload(
        container("app", 1.0, 512 * MIB, cpu_policy="horizontal"),
        hist=hist,
        hpa=hpa(2, 20, ("app", "cpu", 60)),
    )
    rec = recommend(inp, DEFAULT, now_s=NOW_S)
    assert rec.hpa is not None
    [target] = rec.hpa.targets
    assert target.value.proposed is not None and target.value.proposed > 60
    bt = rec.backtest
    assert bt is not None and bt.proposed is not None
    cut = NOW_S - 7 * DAY_S
    scored = ReplaySeries.build(
        inp.history, ("app",), now_s=NOW_S, excluded=((float("-inf"), cut + 1e-6),)
    )
    assert scored is not None
    now = current_values(inp)
    mine = replay(scored, proposed_values(now, rec), recorded=now)
    share = mine.container_cpu("app").over_request_share  # type: ignore[union-attr]
    assert dict(bt.expected)["app"] == pytest.approx(share)
    recorded = np.count_nonzero(scored.containers["app"].cpu_cores > 1.0)
    assert share > 2 * recorded / scored.containers["app"].cpu_cores.size
