"""The pull-request section of accepted KEDA cron floors: the triggers appended, replica-hours
and shortfall before and after, each figure reproducible from the ones beside it; nothing
without triggers."""

from __future__ import annotations

import re
from dataclasses import replace

from bot.model import Explained, FieldChange, FieldId
from bot.report.render import render_pull_request
from tests.report.test_render import proposal

TRIGGERS = (
    (("timezone", "Etc/UTC"), ("start", "0 7 * * 1-5"), ("end", "0 19 * * 1-5"),
     ("desiredReplicas", "8")),
    (("timezone", "Etc/UTC"), ("start", "0 10 * * 6"), ("end", "0 14 * * 6"),
     ("desiredReplicas", "5")),
)  # fmt: skip


def _floored():
    """The test proposal with minReplicaCount 8 → 3 and two cron triggers appended."""
    p = proposal()
    (rec,) = p.change_set.recommendations
    assert rec.hpa is not None
    figures = {
        "static": 8,
        "static_pod_hours": 3263.2,
        "cron_pod_hours": 2929.9,
        "static_shortfall_minutes": 0.0,
        "cron_shortfall_minutes": 0.0,
    }
    minimum = Explained(6, 3, "keda.cron_floors", "3 outside the busy hours", figures)
    rec = replace(rec, hpa=replace(rec.hpa, min_replicas=minimum), keda_triggers=TRIGGERS)
    changes = (
        *p.change_set.changes,
        FieldChange(rec.ref, FieldId.HPA_MIN_REPLICAS, 3, 6, None, "cron floors"),
        FieldChange(rec.ref, FieldId.KEDA_TRIGGERS, 2, 0, None, "cron", triggers=TRIGGERS),
    )
    return replace(p, change_set=replace(p.change_set, changes=changes, recommendations=(rec,)))


def test_the_section_lists_the_triggers_and_the_replayed_figures():
    _, body = render_pull_request(_floored())
    visible = body.split("<details>", 1)[0]
    assert "**KEDA cron floors** (`keda.cron_floors`): minReplicaCount 8 → 3" in visible
    assert "- `0 7 * * 1-5` to `0 19 * * 1-5` (Etc/UTC): 8 replicas" in visible
    assert "- `0 10 * * 6` to `0 14 * * 6` (Etc/UTC): 5 replicas" in visible
    found = re.search(
        r"Replayed replica-hours ([\d.]+) → ([\d.]+) \(saves ([\d.]+)\); "
        r"shortfall (\d+) → (\d+) min\.",
        visible,
    )
    assert found is not None, visible
    before, after, saved = (float(g) for g in found.groups()[:3])
    assert (before, after) == (3263.2, 2929.9)
    assert abs(before - after - saved) < 0.051  # reproducible from the numbers beside it
    assert "| cron triggers | 0 → 2 |" in visible
    assert len(visible) < 3000


def test_no_section_without_triggers():
    _, body = render_pull_request(proposal())
    assert "KEDA cron floors" not in body
