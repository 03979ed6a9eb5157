"""The backtest as the pull request and ``explain`` show it: every figure from the model."""

from __future__ import annotations

from bot.config.recommend import RecommendSettings
from bot.recommend.engine import recommend
from bot.report import backtest as view
from tests.recommend.factories import NOW_S
from tests.recommend.test_backtest import _growing, _single


def test_the_backtest_table_shows_that_proposal_beside_the_current_values():
    rec = recommend(_single(_growing(per_day=0.08), 0.3), RecommendSettings(), now_s=NOW_S)
    bt = rec.backtest
    assert bt is not None and bt.proposed is not None and bt.current is not None
    then = bt.proposed.container_cpu("app")
    assert then is not None and then.request_cores is not None
    share = then.over_request_minutes / then.container_minutes * 100
    md = view.markdown(rec)
    assert "history up to 2023-11-08 00\\:00 UTC, replayed on the 7 days since" in md
    assert f"| app\\: CPU request | {then.request_cores:g} | 0.3 |" in md
    assert f"| app\\: CPU minutes over request | {share:.2f} % |" in md
    mine = dict(bt.expected)["app"] * 100  # this proposal's own request on the same days
    assert f"| app\\: this proposal on the same days | {mine:.2f} % |" in md
    brief = view.brief(rec)
    assert brief is not None and f"CPU over request {share:.1f} % of the minutes" in brief
    assert view.short(rec) == f"backtest: CPU over request {share:.1f} % (current values 0.0 %)"
    lines = view.text(rec)
    assert lines[0].startswith("backtest, decided by the same method")
    assert any("app: CPU minutes over request" in line for line in lines)


def test_without_a_backtest_the_details_say_why_and_the_summary_is_silent():
    import numpy as np

    from tests.recommend.factories import DAY_S

    rec = recommend(
        _single(np.full(int(6 * DAY_S / 300), 0.2), 0.3, days=6.0), RecommendSettings(), now_s=NOW_S
    )
    assert view.brief(rec) is None and view.short(rec) is None
    assert view.markdown(rec).startswith("No backtest\\: history of 6.0 days")
    assert view.text(rec) == [
        "no backtest: history of 6.0 days: a backtest needs more than the horizon of 7 days"
    ]
