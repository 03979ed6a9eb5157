"""``make_proposal``: charts, peaks, replicas and window from what the histories showed."""

from __future__ import annotations

import numpy as np
import pytest

from bot.model import (
    ChangeSet,
    ContainerHistory,
    EditResult,
    FieldChange,
    FieldId,
    FileChange,
    Note,
    Recommendation,
    ReplayComparison,
    WorkloadHistory,
    WorkloadRef,
)
from bot.report import make_proposal, proposal_title, render_pull_request
from bot.report.build import chart_candidates, chart_subject, summarize_history
from tests.report.replays import figures

DAY = 86400.0
MONDAY = 4 * DAY  # 1970-01-05 was a Monday


def history(ref):
    t = np.arange(MONDAY, MONDAY + 7 * DAY, 300.0)
    hour = (t % DAY) // 3600
    cpu = 0.1 + hour / 100.0
    return WorkloadHistory(
        ref,
        start_s=float(t[0]),
        end_s=float(t[-1]),
        containers={
            "app": ContainerHistory(
                "app", cpu_t=t, cpu_pod=np.zeros(t.size, np.int32), cpu_cores=cpu
            )
        },
        replicas_t=t,
        replicas=np.where((t - MONDAY) // DAY == 2, 9.0, 3.0),
        quality=(Note("gap", "one hour missing"),),
    )


def test_make_proposal_from_histories():
    ref = WorkloadRef("Deployment", "shop", "web", "prod")
    tokyo = figures(672.0, 1344.0, time_zone="Asia/Tokyo")
    rec = Recommendation(ref, "changes", replay=ReplayComparison(tokyo, tokyo))
    change = FieldChange(ref, FieldId.REQUESTS_CPU, 0.2, 0.5, "app", "P90")
    cs = ChangeSet("prod/shop/web", (change,), (rec,))
    edit = EditResult(
        files=(FileChange("a.yaml", b"a", b"b"),),
        diff="--- a\n+++ b\n",
        notes=(Note("edit", "kept comments"),),
    )
    summary = summarize_history(
        history(ref), charts=chart_candidates(cs.changes), time_zone="Asia/Tokyo"
    )
    p = make_proposal(cs, edit, summaries={ref: summary})
    assert (
        p.title == "Right-size web in shop (prod)" and p.files == edit.files and p.diff == edit.diff
    )
    # CPU P95 by hour of the week on the replay's clock: Monday 00:00 UTC is 09:00 in Tokyo,
    # hour 24 + 9 of a week that starts on Sunday.
    usage = p.week_usage[ref.key]
    assert (usage.container, usage.resource, usage.time_zone) == ("app", "cpu", "Asia/Tokyo")
    assert usage.values[33] == pytest.approx(0.1) and usage.values[32] == pytest.approx(0.33)
    assert p.time_zone == "Asia/Tokyo"
    assert p.window_s is not None and p.window_s[1] - p.window_s[0] == pytest.approx(7 * DAY - 300)
    assert [n.code for n in p.notes] == ["edit", "gap"]
    _, body = render_pull_request(p)
    assert "xychart-beta" in body and "one hour missing" in body


def test_title_for_a_group():
    refs = [WorkloadRef("Deployment", "shop", n, "prod") for n in ("a", "b")]
    cs = ChangeSet("prod/shop", tuple(FieldChange(r, FieldId.REQUESTS_CPU, 1.0) for r in refs))
    assert proposal_title(cs) == "Right-size 2 workloads in prod/shop"


def test_the_chart_follows_the_change():
    ref = WorkloadRef("Deployment", "shop", "web", "prod")
    memory = FieldChange(ref, FieldId.REQUESTS_MEMORY, 2**30, 2**29, "app")
    limit = FieldChange(ref, FieldId.LIMITS_CPU, 1.0, 2.0, "side")
    assert chart_subject([limit, memory]) == ("app", "memory")
    assert chart_subject([limit]) == ("side", "cpu")
    assert chart_subject([memory, FieldChange(ref, FieldId.HPA_MAX_REPLICAS, 9, 10)]) is None


def test_the_summary_charts_whatever_part_of_the_changes_is_kept():
    """An edit may leave changes out; the chart of the kept ones is the one the history shows."""
    ref = WorkloadRef("Deployment", "shop", "web", "prod")
    full = history(ref)
    full = WorkloadHistory(
        ref,
        full.start_s,
        full.end_s,
        containers={
            "app": ContainerHistory(
                "app",
                cpu_t=full.replicas_t,
                cpu_pod=np.zeros(full.replicas_t.size, np.int32),
                cpu_cores=full.replicas / 10,
                mem_t=full.replicas_t,
                mem_pod=np.zeros(full.replicas_t.size, np.int32),
                mem_bytes=full.replicas * 2**20,
            )
        },
    )
    changes = (
        FieldChange(ref, FieldId.HPA_MAX_REPLICAS, 9, 10),
        FieldChange(ref, FieldId.REQUESTS_CPU, 0.2, 0.5, "app"),
        FieldChange(ref, FieldId.LIMITS_MEMORY, 2**30, 2**29, "app"),
    )
    summary = summarize_history(full, charts=chart_candidates(changes))
    edit = EditResult(files=(FileChange("a.yaml", b"a", b"b"),), diff="")
    charted = []
    for kept in (changes, changes[1:], changes[2:], changes[:1]):
        p = make_proposal(ChangeSet(ref.key, kept), edit, summaries={ref: summary})
        alone = summarize_history(full, charts=chart_candidates(kept))
        assert (
            p.week_usage
            == make_proposal(ChangeSet(ref.key, kept), edit, summaries={ref: alone}).week_usage
        )
        charted.append(p.week_usage[ref.key].resource if p.week_usage else None)
    assert charted == [None, "cpu", "memory", None]
