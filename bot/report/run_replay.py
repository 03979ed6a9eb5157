"""The replay table of a CronJob or Job: read per run, with no replica rows.

A run is one pod life and the runs are the workload's only minutes (``bot.recommend.runs``):
the table gives the CPU minutes over the request in the runs (of the runs' container-minutes)
and the OOM kills predicted in them. No replica, requested-with-replicas, capacity-shortfall or
monthly-cost rows: the replicas are the pods of a run (one), a mean over the window would
spread a run's request over the hours between runs, and what a run requests is in the
container table above.
"""

from __future__ import annotations

from bot.model import ReplayComparison
from bot.report import numbers
from bot.report.replay import Row


def run_rows(replay: ReplayComparison) -> list[Row]:
    """The replay rows of a CronJob or Job (see the module doc)."""
    cur, new = replay.current, replay.proposed
    return [
        Row(
            "CPU minutes over request, in the runs",
            *(
                f"{f.over_request_minutes:,.0f} of {f.container_minutes:,.0f} "
                f"({numbers.share(f.over_request_minutes, f.container_minutes)})"
                for f in (cur, new)
            ),
        ),
        Row("predicted OOM kills in the runs", str(cur.oom_kills), str(new.oom_kills)),
    ]
