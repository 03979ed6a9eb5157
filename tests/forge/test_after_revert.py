"""Rule ``after-revert-floor``: after a merged revert, the next proposal for a restored field
does not cut as deep as the pull request that regressed (known numbers, margin 0.2)."""

from __future__ import annotations

import pytest

from bot.model import FieldChange, FieldId, WorkloadRef
from bot.pipeline.after_revert import bounded, floored_changes
from bot.report.proposal import change_id

PAY = WorkloadRef("Deployment", "shop", "pay")


@pytest.mark.parametrize(
    ("field_id", "proposed", "regressed", "expected"),
    [
        (FieldId.REQUESTS_CPU, 0.11, 0.1, 0.12),  # 0.1 × 1.2: the cut that regressed, + 20 %
        (FieldId.REQUESTS_CPU, 0.3, 0.1, 0.3),  # above the bound: unchanged
        (FieldId.REQUESTS_MEMORY, 200e6, 256e6, 256e6 * 1.2),
        (FieldId.HPA_MAX_REPLICAS, 4, 5, 6),  # 5 × 1.2 = 6 replicas
        (FieldId.HPA_MAX_REPLICAS, 4, 4, 5),  # 4.8 rounded up
        (FieldId.HPA_TARGET_CPU, 85, 80, 64),  # less is safer: 80 × 0.8
    ],
)
def test_the_bound_is_the_regressed_value_with_the_margin(field_id, proposed, regressed, expected):
    assert bounded(field_id, proposed, regressed, 0.2) == pytest.approx(expected)


def test_a_restored_field_is_bounded_and_a_bound_reaching_the_current_value_drops_it():
    cpu = FieldChange(PAY, FieldId.REQUESTS_CPU, 0.11, 0.5, "app")
    memory = FieldChange(PAY, FieldId.REQUESTS_MEMORY, 100e6, 256e6, "app")  # not restored
    regressed = {change_id(PAY, "app", FieldId.REQUESTS_CPU): 0.1}
    changes, said = floored_changes([cpu, memory], regressed, 0.2)
    assert [c.proposed for c in changes] == [pytest.approx(0.12), 100e6]
    assert said == ["app requests.cpu: 0.11 → 0.12"]
    close = FieldChange(PAY, FieldId.REQUESTS_CPU, 0.11, 0.115, "app")  # current below 0.12
    changes, said = floored_changes([close], regressed, 0.2)
    assert changes == () and said == ["app requests.cpu: kept at 0.115 (the bound 0.12 reaches it)"]
