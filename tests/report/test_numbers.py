"""Numbers as reports and bot commits print them."""

from __future__ import annotations

import pytest

from bot.model import FieldId
from bot.report.numbers import field_change


@pytest.mark.parametrize(
    ("field", "current", "proposed", "shown"),
    [
        ("requests.cpu", 0.5, 0.4, "0.5 → 0.4"),
        ("requests.memory", 764047360, 805306368, "729 MiB → 768 MiB"),
        ("limits.memory", 2 * 1024**3, None, "2 GiB → —"),
        ("hpa.target.cpu", 60, None, "60% → removed"),
        ("hpa.target.memory", None, 70, "— → 70%"),
        ("hpa.minReplicas", 3, 4, "3 → 4"),
    ],
)
def test_field_change_prints_each_field_in_its_unit(field, current, proposed, shown):
    assert field_change(FieldId(field), current, proposed) == shown
