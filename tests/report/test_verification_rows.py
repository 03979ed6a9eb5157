"""The verification comment's table shows each container's restarts before and after the
merge (``bot.report.verification``)."""

from __future__ import annotations

from bot.model import Prediction
from bot.report.verification import figure_rows
from bot.verification import WindowFigures


def test_restarts_are_a_row_before_and_after_the_merge():
    before = WindowFigures(days=7.0, restarts={"app": 7})
    after = WindowFigures(days=3.0, restarts={"app": 12, "proxy": 1})
    rows = figure_rows(None, before, after)
    texts = [row.texts() for row in rows]
    assert ("app: restarts", "", "7", "12") in texts
    assert ("proxy: restarts", "", "0", "1") in texts
    app = next(row for row in rows if row.figure == "app: restarts")
    assert app.to_json() == {
        "figure": "app: restarts",
        "unit": "count",
        "predicted": None,
        "before": 7,
        "after": 12,
    }


def test_a_row_is_numbers_in_json_and_the_comment_s_text():
    before = WindowFigures(days=7.0, cpu_share={"app": 0.0}, replicas_mean=None)
    after = WindowFigures(days=7.0, cpu_share={"app": 0.0036}, replicas_mean=2.0)
    prediction = Prediction(cpu_share={"app": 0.001}, oom_kills=0, window_days=7.0)
    rows = {row.figure: row for row in figure_rows(prediction, before, after)}
    cpu = rows["app: CPU minutes over request"]
    assert (cpu.unit, cpu.predicted, cpu.before, cpu.after) == ("share", 0.001, 0.0, 0.0036)
    assert cpu.texts() == ("app: CPU minutes over request", "0.1 %", "0.0 %", "0.4 %")
    replicas = rows["mean replicas"]
    assert replicas.texts() == ("mean replicas", "", "–", "2.0")
    assert replicas.to_json()["predicted"] is None and replicas.to_json()["before"] is None
