"""The pydantic base every configuration model derives from: unknown keys are errors."""

from __future__ import annotations

from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BaseModel, ConfigDict


class ConfigModel(BaseModel):
    """Strict, frozen model: a misspelt key is reported instead of silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _known_zone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown IANA time zone {value!r}") from exc
    return value


TimeZoneName = Annotated[str, AfterValidator(_known_zone)]
"""An IANA time zone name (``Europe/Berlin``), checked against the zone database."""
