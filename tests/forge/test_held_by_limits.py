"""New pull requests held back by ``pull_requests.max_new_per_run`` are named in the run's
line and in ``$GITHUB_STEP_SUMMARY``, as those below the money threshold are."""

from __future__ import annotations

import pytest

from bot.commands.run import summary_markdown
from bot.pipeline.serve import RunSummary
from tests.forge.demo_runs import REPO, demo_settings, demo_shop, demo_source

__all__ = ["demo_settings", "demo_shop", "demo_source"]


@pytest.mark.slow
def test_pull_requests_over_max_new_per_run_are_named(github_emulator, demo_shop):
    serve = demo_shop(b"  min_monthly_change: 0\n  max_new_per_run: 1\n")
    report = serve()
    assert report.ok, report.message
    assert len(report.opened) == 1
    opened = {p.pull.head.removeprefix("tortoise-bot/") for p in github_emulator.pulls(REPO)}
    assert len(report.waiting) == 3 and not set(report.waiting) & opened
    line = f"3 held back by max_new_per_run (1): {', '.join(report.waiting)}"
    assert line in report.message
    row = next(x for x in summary_markdown(RunSummary((report,))).splitlines() if REPO in x)
    for key in report.waiting:
        assert key in row
    # the next run opens one more, and names the two still waiting
    again = serve()
    assert len(again.opened) == 1 and len(again.waiting) == 2
    assert "2 held back by max_new_per_run (1)" in again.message
