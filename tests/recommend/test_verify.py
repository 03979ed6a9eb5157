"""The verdict on a merged proposal from its recorded history before and after the values went
live (``bot.recommend.outcome``, ``bot.recommend.verify``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bot.config.verify import VerifySettings
from bot.model import (
    MIB,
    ContainerHistory,
    FieldId,
    Prediction,
    WorkloadHistory,
    WorkloadRef,
)
from bot.recommend.outcome import Sizing, Throttling, common_hours, window_figures
from bot.recommend.verify import verify, windows

DAY = 86_400.0
LIVE = 1_700_006_400.0 - (1_700_006_400.0 % (7 * DAY))
"""A live moment on a whole week boundary (UTC)."""
REF = WorkloadRef("Deployment", "shop", "web", "prod")
SETTINGS = VerifySettings()
BEFORE = Sizing({"app": 0.5})
"""The CPU request before the merge (cores)."""
AFTER = Sizing({"app": 0.25})
"""The CPU request the merge set."""


def _history(
    cpu_before: float,
    cpu_after: float,
    *,
    mem_before: float = 200 * MIB,
    mem_after: float = 200 * MIB,
    oom_after: tuple[float, ...] = (),
    restarts: tuple[float, ...] = (),
    replicas_after: float = 2.0,
    days_after: float = 7.0,
) -> WorkloadHistory:
    """Two pods of one container ``app``, one sample a minute, a daily wave around the given
    CPU (cores) from 7 days before ``LIVE`` to ``days_after`` after it."""
    t = np.arange(LIVE - 7 * DAY, LIVE + days_after * DAY, 60.0)
    wave = 1.0 + 0.2 * np.sin(2 * np.pi * (t % DAY) / DAY)
    level = np.where(t < LIVE, cpu_before, cpu_after) * wave
    mem = np.where(t < LIVE, mem_before, mem_after)
    pods = np.array([0, 1], dtype=np.int32)
    both_t = np.repeat(t, 2)
    container = ContainerHistory(
        "app",
        cpu_t=both_t,
        cpu_pod=np.tile(pods, t.size),
        cpu_cores=np.repeat(level, 2),
        mem_t=both_t,
        mem_pod=np.tile(pods, t.size),
        mem_bytes=np.repeat(mem, 2),
        oom_t=np.array(oom_after, dtype=float),
        oom_pod=np.zeros(len(oom_after), dtype=np.int32),
        oom_request_bytes=np.full(len(oom_after), 256.0 * MIB),
        restart_t=np.array(sorted((*restarts, *oom_after)), dtype=float),
    )
    return WorkloadHistory(
        REF,
        t[0],
        t[-1],
        ("web-a", "web-b"),
        {"app": container},
        replicas_t=t,
        replicas=np.where(t < LIVE, 2.0, replicas_after),
    )


def _verdict(
    history,
    prediction,
    *,
    before=BEFORE,
    after=AFTER,
    now=LIVE + 7 * DAY,
    throttling=None,
    settings=SETTINGS,
):
    back, ahead = windows(LIVE, now, settings.window_days)
    hours = common_hours(history, back, ahead)
    figures = [
        window_figures(history, sizing, *span, hours=hours, throttling=throttling)
        for sizing, span in ((before, back), (after, ahead))
    ]
    return verify(
        prediction,
        merged_s=LIVE - 3600,
        live_s=LIVE,
        now_s=now,
        before=figures[0],
        after=figures[1],
        settings=settings,
    )


PREDICTED = Prediction(window_days=14.0, cpu_share={"app": 0.01}, oom_kills=0)


def test_a_proposal_that_ran_as_predicted_is_verified():
    verdict = _verdict(_history(0.2, 0.2), PREDICTED)
    assert verdict.status == "verified", verdict.reason
    assert verdict.after is not None and verdict.after.cpu_share == {"app": 0.0}
    assert verdict.observed_days == pytest.approx(7.0)


def test_before_the_window_is_over_nothing_worse_is_still_waiting():
    verdict = _verdict(_history(0.2, 0.2, days_after=2), PREDICTED, now=LIVE + 2 * DAY)
    assert verdict.status == "waiting" and "2.0 of 7 days" in verdict.reason


def test_values_not_live_are_waiting_then_never_live():
    def at(now_s: float):
        return verify(
            PREDICTED,
            merged_s=LIVE,
            live_s=None,
            now_s=now_s,
            before=None,
            after=None,
            settings=SETTINGS,
        )

    soon = at(LIVE + DAY)
    assert soon.status == "waiting" and soon.reason == "waiting for the new values to be live"
    late = at(LIVE + 3.5 * DAY)
    assert late.status == "never-live" and "3.5 days" in late.reason


def test_an_oom_kill_where_none_was_predicted_regresses_the_memory_fields():
    history = _history(0.2, 0.2, oom_after=(LIVE + DAY, LIVE + 2 * DAY))
    verdict = _verdict(history, PREDICTED, now=LIVE + 3 * DAY)
    assert verdict.status == "regressed"
    (finding,) = verdict.findings
    assert finding.kind == "oom" and finding.observed == 2.0 and finding.before == 0.0
    assert finding.fields == (("app", FieldId.REQUESTS_MEMORY), ("app", FieldId.LIMITS_MEMORY))


def test_an_oom_kill_with_the_working_set_out_of_range_is_load_left_range():
    history = _history(0.2, 0.2, mem_after=400 * MIB, oom_after=(LIVE + DAY,))
    verdict = _verdict(history, PREDICTED, now=LIVE + 3 * DAY)
    assert verdict.status == "load-left-range" and "working set" in verdict.reason


def test_cpu_over_request_above_the_prediction_by_the_margin_regresses():
    # request 0.25 after the merge; usage 0.22 ± 20 %: 26 % of the minutes above it
    verdict = _verdict(_history(0.22, 0.22), PREDICTED)
    assert verdict.status == "regressed"
    (finding,) = verdict.findings
    assert finding.kind == "cpu" and finding.predicted == 0.01
    assert finding.observed == pytest.approx(0.2618, abs=0.001) and finding.before == 0.0
    assert finding.fields[0] == ("app", FieldId.REQUESTS_CPU)
    # the backtest's expectation counts as the prediction when larger
    forgiving = replace(PREDICTED, backtest_share={"app": 0.22})
    assert _verdict(_history(0.22, 0.22), forgiving).status == "verified"


def test_cpu_worse_because_the_load_doubled_is_load_left_range():
    verdict = _verdict(_history(0.12, 0.24), PREDICTED)
    assert verdict.status == "load-left-range" and "CPU peaked" in verdict.reason


def test_throttling_is_compared_where_a_cpu_limit_exists():
    t = np.arange(LIVE - 7 * DAY, LIVE + 7 * DAY, 60.0)
    throttled = np.where(t < LIVE, 0.0, 30.0)
    series = {"app": Throttling(t, throttled, np.full(t.size, 100.0))}
    verdict = _verdict(_history(0.2, 0.2), PREDICTED, throttling=series)
    assert verdict.status == "regressed"
    (finding,) = verdict.findings
    assert finding.kind == "throttle" and finding.observed == pytest.approx(0.3)
    assert finding.before == 0.0 and finding.fields == (("app", FieldId.LIMITS_CPU),)


def test_shortfall_at_max_replicas_above_the_prediction_regresses():
    hpa_before = Sizing({"app": 0.5}, max_replicas=4, cpu_targets={"app": 50})
    hpa_after = Sizing({"app": 0.25}, max_replicas=2, cpu_targets={"app": 50})
    predicted = replace(PREDICTED, cpu_share={"app": 1.0}, shortfall_minutes=0.0)
    verdict = _verdict(_history(0.2, 0.2), predicted, before=hpa_before, after=hpa_after)
    assert verdict.status == "regressed"
    (finding,) = verdict.findings
    assert finding.kind == "shortfall" and finding.before == 0.0
    assert finding.observed == pytest.approx(1440.0)  # every minute at 2 replicas, 80 % > 55 %
    assert (None, FieldId.HPA_MAX_REPLICAS) in finding.fields


def test_only_the_hours_both_windows_have_are_compared():
    history = _history(0.2, 0.2, days_after=1)
    back, ahead = windows(LIVE, LIVE + DAY, 7)
    hours = common_hours(history, back, ahead)
    assert hours.sum() == 24
    figures = window_figures(history, Sizing({"app": 0.19}), *back, hours=hours)
    whole = window_figures(history, Sizing({"app": 0.19}), *back)
    assert figures.cpu_share["app"] == pytest.approx(whole.cpu_share["app"], abs=0.02)
    assert figures.replicas_mean == 2.0 and figures.cpu_peak_cores == pytest.approx(0.48)


def _restarts(before_per_day: int, after_per_day: int) -> tuple[float, ...]:
    """Restart times: ``before_per_day`` a day over the week before ``LIVE``, then
    ``after_per_day`` a day over the 3 days after it."""
    before = [
        LIVE - 7 * DAY + d * DAY + 3600 * (i + 1) for d in range(7) for i in range(before_per_day)
    ]
    after = [LIVE + d * DAY + 3600 * (i + 1) for d in range(3) for i in range(after_per_day)]
    return tuple(float(t) for t in (*before, *after))


def test_restarts_well_above_those_before_without_an_oom_kill_regress():
    history = _history(0.2, 0.2, restarts=_restarts(1, 4))
    verdict = _verdict(history, PREDICTED, now=LIVE + 3 * DAY)
    assert verdict.status == "regressed" and "restarts" in verdict.reason
    assert verdict.before is not None and verdict.before.restarts == {"app": 7}
    assert verdict.after is not None and verdict.after.restarts == {"app": 12}
    (finding,) = verdict.findings
    assert finding.kind == "restarts"
    assert finding.before == pytest.approx(1.0) and finding.observed == pytest.approx(4.0)
    assert finding.allowed == pytest.approx(3.0)  # 1 a day before + the margin of 2
    assert ("app", FieldId.LIMITS_MEMORY) in finding.fields


def test_restarts_within_the_margin_are_not_a_regression():
    history = _history(0.2, 0.2, restarts=_restarts(1, 3))
    verdict = _verdict(history, PREDICTED, now=LIVE + 3 * DAY)
    assert verdict.status == "waiting", verdict.reason
    tight = VerifySettings.model_validate({"margins": {"restarts_per_day": 1.0}})
    assert _verdict(history, PREDICTED, now=LIVE + 3 * DAY, settings=tight).status == "regressed"


def test_restarts_an_oom_kill_explains_are_the_oom_finding_only():
    kills = tuple(LIVE + d * DAY + 1800 * (i + 1) for d in range(3) for i in range(4))
    verdict = _verdict(_history(0.2, 0.2, oom_after=kills), PREDICTED, now=LIVE + 3 * DAY)
    assert verdict.status == "regressed"
    assert [f.kind for f in verdict.findings] == ["oom"]
