"""Restart events, crash-loop periods and unexplained counter resets, with hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from bot.metrics.restarts import (
    CRASH_LOOP_PAD_S,
    crash_loops,
    merge_intervals,
    oom_kills,
    restart_events,
    unexplained_resets,
)


def test_restart_events_repeat_each_rise_and_skip_restarts_before_the_window():
    t = np.array([0.0, 60, 120, 180, 240, 300])
    # 2 at the first sample: restarts before the window, no time. Then +1 at 120, +2 at 180,
    # a drop to 1 at 300 (a new pod with the same name): 1 restart.
    counts = np.array([2.0, 2, 3, 5, 5, 1])
    assert restart_events(t, counts).tolist() == [120, 180, 180, 300]


def test_restart_events_ignore_nan():
    t = np.array([0.0, 60, 120])
    assert restart_events(t, np.array([0.0, np.nan, 1])).tolist() == [120]


R = 512.0 * 2**20
"""A memory request."""


def _kills(t, counts, oom_t, requests=None):
    oom_t = np.array(oom_t, dtype=np.float64)
    requests = np.full(len(oom_t), R) if requests is None else np.array(requests, np.float64)
    times, got = oom_kills(np.array(t, np.float64), np.array(counts, np.float64), oom_t, requests)
    return list(zip(times.tolist(), got.tolist(), strict=True))


@pytest.mark.parametrize(
    ("t", "counts", "oom_t", "kills"),
    [
        # kube-state-metrics every 2 steps: no step holds two samples, the rise is still seen
        ([0, 120, 240, 360], [0, 0, 1, 1], [240, 360], [(240, R)]),
        # every 5 steps with jitter: samples where the scrapes fell
        ([0, 300, 660, 900], [0, 0, 1, 1], [660, 900], [(660, R)]),
        # a restart for another reason after an OOM: the reason is no longer OOMKilled
        ([0, 60, 120, 180, 240], [0, 1, 1, 2, 2], [60, 120], [(60, R)]),
        # the step of that restart still holds the earlier scrape's OOMKilled (scrapes faster
        # than the step): the samples after it, before the next rise, decide
        ([0, 60, 120, 180], [0, 1, 2, 2], [60, 120], [(60, R)]),
        # the rise is the last sample: its own step decides
        ([0, 300], [0, 1], [300], [(300, R)]),
        # two restarts between scrapes, the last an OOM kill: one row per restart
        ([0, 300, 600], [0, 2, 2], [300, 600], [(300, R), (300, R)]),
        # OOMKilled from a restart before the window: no rise, no kill
        ([0, 60, 120], [1, 1, 1], [0, 60, 120], []),
        # a new pod with the same name (counter back to 1) killed by OOM
        ([0, 60, 120], [3, 3, 1], [120], [(120, R)]),
        ([0, 60, 120], [0, np.nan, 1], [120], [(120, R)]),
        ([0, 60], [0, 1], [], []),
    ],
)
def test_oom_kills_pair_each_restart_with_the_reason_reported_after_it(t, counts, oom_t, kills):
    assert _kills(t, counts, oom_t) == kills


def test_oom_kill_request_is_the_first_reported_after_the_restart():
    # the request reported with the OOM reason at the rise (0: unknown), not a later one
    assert _kills([0, 120, 240], [0, 1, 1], [120, 240], [0.0, R]) == [(120, 0.0)]
    assert _kills([0, 120, 240], [0, 1, 1], [240, 120], [2 * R, R]) == [(120, R)]


def test_three_restarts_within_ten_minutes_make_a_loop_padded_by_the_back_off():
    # 1000, 1200, 1500: span 500 s <= 600 s. Period [1000 - 300, 1500 + 300).
    assert crash_loops(np.array([1000.0, 1200, 1500])) == [
        (1000 - CRASH_LOOP_PAD_S, 1500 + CRASH_LOOP_PAD_S)
    ]


def test_restarts_spread_out_are_no_loop():
    # every 400 s: any three span 800 s > 600 s
    assert crash_loops(np.arange(0.0, 4000, 400)) == []
    assert crash_loops(np.array([0.0, 100])) == []


def test_a_loop_lasts_while_it_continues_and_a_later_loop_is_apart():
    first = np.arange(10_000.0, 13_000, 120)  # every 2 min for 50 min
    second = np.array([50_000.0, 50_100, 50_200])
    stray = np.array([30_000.0])  # a lone restart between them is no loop
    loops = crash_loops(np.concatenate([second, stray, first]))
    assert loops == [
        (10_000 - 300, float(first[-1]) + 300),
        (50_000 - 300, 50_200 + 300),
    ]


def test_merge_intervals_joins_overlaps_and_touching():
    assert merge_intervals([(5, 7), (0, 2), (2, 3), (6, 9)]) == [(0, 3), (5, 9)]


@pytest.mark.parametrize(
    ("resets", "events", "unexplained"),
    [
        ([], [], 0),
        ([1000.0], [], 1),
        ([1000.0], [1060.0], 0),  # one step away
        ([1000.0], [1120.0], 0),  # two steps: the tolerance
        ([1000.0], [1180.0], 1),  # three steps
        ([1000.0, 5000.0], [900.0, 3000.0, 5030.0], 0),
        ([1000.0, 5000.0], [3000.0], 2),
    ],
)
def test_resets_near_a_restart_are_explained(resets, events, unexplained):
    got = unexplained_resets(np.array(resets), np.array(events), step_s=60.0)
    assert got == unexplained
