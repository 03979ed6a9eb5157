"""The verification comment's table shows each container's restarts before and after the
merge (``bot.report.verification``)."""

from __future__ import annotations

from bot.report.verification import figure_rows
from bot.verification import WindowFigures


def test_restarts_are_a_row_before_and_after_the_merge():
    before = WindowFigures(days=7.0, restarts={"app": 7})
    after = WindowFigures(days=3.0, restarts={"app": 12, "proxy": 1})
    rows = figure_rows(None, before, after)
    assert ("app: restarts", "", "7", "12") in rows
    assert ("proxy: restarts", "", "0", "1") in rows
