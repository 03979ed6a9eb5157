"""A workload in words: inputs in units whatever their key, what changes, the driving slots."""

from __future__ import annotations

import pytest

from bot.model import MIB, Explained, FieldChange, FieldId, HpaRecommendation, WorkloadRef
from bot.report.summary import driving_slots, inputs_text, oom_story, what_changes

REF = WorkloadRef("Deployment", "shop", "web", "prod")


@pytest.mark.parametrize(
    ("field", "inputs", "shown"),
    [
        (
            "requests.memory",
            {"rec": 587804717.0, "vpa_target": 512 * MIB, "wanted_rule": "x", "floor": 64 * MIB},
            "rec 560.6 MiB, VPA target 512 MiB, floor 64 MiB",
        ),
        (
            "requests.cpu",
            {"runs_peak": 0.8171, "peak_percentile": 95.0, "run_count": 12, "wanted": 0.9},
            "runs' p95 peak 0.817 cores, runs 12, wanted 0.9 cores",
        ),
        (
            "requests.cpu",
            {"rec": 0.143, "vpa_weight": 0.5, "margin_ratio": 1.15},
            "rec 0.143 cores, VPA weight 0.5, margin ratio 1.15",
        ),
        (
            "hpa.target.cpu",
            {"metric": "Resource", "replaces": 60, "rec": 0.763, "request": 1.0, "unlimited": 83},
            "pod-level target replaced 60%, rec 0.763 cores, request 1 core, before the per-change limit 83%",
        ),
        (
            "hpa.minReplicas",
            {"phase": "normal", "slot_min": 5, "minimum_floor": 3, "driving_hours": "Tue 02-03"},
            "busiest slot's minimum 5, minimum floor 3, driving hours Tue 02-03",
        ),
        (
            "hpa.maxReplicas",
            {"phase": "emergency", "reduction_factor": 0.95},
            "phase emergency, reduction factor 0.95",
        ),
        ("limits.memory", {"usage_percent": 77.0, "none": None}, "usage percent 77%, none none"),
    ],
)
def test_every_input_is_shown_in_its_unit_whatever_its_key(field, inputs, shown):
    assert inputs_text(FieldId(field), inputs) == shown


def _hpa(slots):
    return HpaRecommendation(Explained(2, 3, "r", ""), Explained(8, 9, "r", ""), slots=slots)


def test_the_slots_that_drive_a_replica_bound():
    hpa = _hpa(
        {
            "Mon 09-10": (3, 8),
            "Tue 09-10": (3, 9),
            "Wed 09-10": (2, 9),
            "Thu 09-10": (3, 9),
            "Fri": (3, 9),
        }
    )
    assert (
        driving_slots(hpa, FieldId.HPA_MAX_REPLICAS) == "Tue 09-10, Wed 09-10, Thu 09-10 and 1 more"
    )
    assert (
        driving_slots(_hpa({"a": (3, 6), "b": (3, 7)}), FieldId.HPA_MIN_REPLICAS)
        == "all 2 slots alike"
    )
    assert driving_slots(_hpa({}), FieldId.HPA_MIN_REPLICAS) is None
    assert driving_slots(hpa, FieldId.REQUESTS_CPU) is None


def test_what_changes_in_one_line():
    hpa = HpaRecommendation(Explained(3, 5, "r", ""), Explained(20, 18, "r", ""))
    changes = [
        FieldChange(REF, FieldId.REQUESTS_MEMORY, 820 * MIB, 1024 * MIB, "app"),
        FieldChange(REF, FieldId.LIMITS_MEMORY, 1640 * MIB, 2048 * MIB, "app"),
        FieldChange(REF, FieldId.REQUESTS_CPU, 0.4, 0.5, "proxy"),
        FieldChange(REF, FieldId.LIMITS_CPU, None, 1.0, "proxy"),
        FieldChange(REF, FieldId.HPA_MIN_REPLICAS, 5, 3),
        FieldChange(REF, FieldId.HPA_TARGET_CPU, 65, 60, "app"),
        FieldChange(REF, FieldId.HPA_TARGET_CPU, 65, 60, "proxy"),
    ]
    assert what_changes(changes, hpa) == (
        "replicas 3–20 → 5–18, app memory request and limit −20 %, proxy CPU request −20 %, "
        "proxy CPU limit removed, CPU targets 60% → 65%"
    )
    kept = [FieldChange(REF, FieldId.HPA_TARGET_CPU, 70, 70, "app")]
    assert what_changes(kept, None) == "app CPU target 70% as a per-container metric"


def test_the_oom_story():
    assert oom_story(
        "redis",
        "redis",
        kills=2,
        limit=512 * MIB,
        request=512 * MIB,
        predicted=0,
        proposed_limit=882 * MIB,
    ) == (
        "redis was OOM-killed twice at its 512 MiB memory limit; at the proposed 882 MiB limit "
        "the replay predicts none."
    )
    assert oom_story("web", "app", kills=3, limit=None, request=256 * MIB) == (
        "web (app) was OOM-killed 3 times without a memory limit (request 256 MiB)."
    )
    assert oom_story(
        "web", "app", kills=1, limit=MIB * 512, request=None, predicted=1, proposed_limit=MIB * 512
    ) == ("web (app) was OOM-killed once at its 512 MiB memory limit.")
