"""Reading one field of an object: where it is (``get_path``), what it counts in (``unit_of``)
and its value as cores, bytes or a whole number (``number``)."""

from __future__ import annotations

from typing import Any, Literal

from bot.manifests.quantities import bytes_from_quantity, cores_from_quantity
from bot.manifests.sources import Path_
from bot.model import FieldId

Unit = Literal["cpu", "memory", "count", "percent"]


def unit_of(field: FieldId) -> Unit:
    """How a field's value is read: cores, bytes, a percentage or a count."""
    if field.is_request_or_limit:
        return "cpu" if field.resource == "cpu" else "memory"
    return "percent" if field.is_hpa_target else "count"


def number(unit: Unit, value: Any) -> float | int | None:
    """A value read as cores, bytes or an integer; raises ``QuantityError``/``ValueError``."""
    if value is None or isinstance(value, bool):
        return None
    if unit == "cpu":
        return cores_from_quantity(value)
    if unit == "memory":
        return bytes_from_quantity(value)
    if isinstance(value, int | float):
        return int(value)
    return int(str(value))


def get_path(data: Any, path: Path_) -> Any:
    """The value at ``path`` (keys and list indices), or None."""
    for part in path:
        if isinstance(data, dict) and isinstance(part, str):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data
