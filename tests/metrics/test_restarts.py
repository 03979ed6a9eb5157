"""Restart events, crash-loop periods and unexplained counter resets, with hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from bot.metrics.restarts import (
    CRASH_LOOP_PAD_S,
    crash_loops,
    merge_intervals,
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
