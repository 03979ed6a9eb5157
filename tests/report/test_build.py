"""``make_proposal``: charts, peaks, replicas and window from histories."""

from __future__ import annotations

import numpy as np
import pytest

from bot.model import (
    ChangeSet,
    ContainerHistory,
    EditResult,
    FieldChange,
    FileChange,
    Note,
    WorkloadHistory,
    WorkloadRef,
)
from bot.report import make_proposal, proposal_title, render_pull_request

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
    cs = ChangeSet("prod/shop/web", (FieldChange(ref, "requests.cpu", 0.2, 0.5, "app", "P90"),))
    edit = EditResult(
        files=(FileChange("a.yaml", b"a", b"b"),),
        diff="--- a\n+++ b\n",
        notes=(Note("edit", "kept comments"),),
    )
    p = make_proposal(cs, edit, histories={ref: history(ref)})
    assert (
        p.title == "Right-size web in shop (prod)" and p.files == edit.files and p.diff == edit.diff
    )
    profile = p.hourly_usage[f"{ref.key}/app/cpu"]
    assert profile[0] == pytest.approx(0.1) and profile[23] == pytest.approx(0.33)
    assert p.replica_peaks[ref.key] == (3.0, 3.0, 9.0, 3.0, 3.0, 3.0, 3.0)
    assert p.replicas[ref.key] == pytest.approx((6 * 3 + 9) / 7)
    assert p.window_s is not None and p.window_s[1] - p.window_s[0] == pytest.approx(7 * DAY - 300)
    assert [n.code for n in p.notes] == ["edit", "gap"]
    _, body = render_pull_request(p)
    assert "xychart-beta" in body and "one hour missing" in body


def test_title_for_a_group():
    refs = [WorkloadRef("Deployment", "shop", n, "prod") for n in ("a", "b")]
    cs = ChangeSet("prod/shop", tuple(FieldChange(r, "requests.cpu", 1.0) for r in refs))
    assert proposal_title(cs) == "Right-size 2 workloads in prod/shop"
