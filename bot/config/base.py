"""The pydantic base every configuration model derives from: unknown keys are errors."""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationInfo, field_validator

SCHEMA_URL = "https://raw.githubusercontent.com/tortoise-bot/tortoise-bot/main/config/{file}"
"""Where the JSON Schemas that ``tortoise-bot schema`` writes into ``config/`` are published."""


MAX_DURATION_DAYS = 366
"""The longest duration any setting may hold: a setting named ``*_days`` at most this many
days, one named ``*_s`` at most this many days in seconds (``MAX_DURATION_S``)."""
MAX_DURATION_S = MAX_DURATION_DAYS * 86_400


class ConfigModel(BaseModel):
    """Strict, frozen model: a misspelt key is reported instead of silently ignored; every
    duration (a number in a setting named ``*_s`` or ``*_days``) is finite and at most
    ``MAX_DURATION_DAYS`` (``1e309`` reads as infinity; no wait should be unbounded)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("*", mode="after")
    @classmethod
    def _bounded_duration(cls, value: Any, info: ValidationInfo) -> Any:
        name = info.field_name or ""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return value
        if name.endswith("_s"):
            limit, unit = MAX_DURATION_S, "seconds"
        elif name.endswith("_days"):
            limit, unit = MAX_DURATION_DAYS, "days"
        else:
            return value
        if not math.isfinite(value) or abs(value) > limit:
            raise ValueError(f"a duration must be finite and at most {limit} {unit}")
        return value

    SCHEMA_FILE: ClassVar[str | None] = None
    """The schema file of a whole configuration file's model (``repo.schema.json``)."""

    @classmethod
    def schema_url(cls) -> str | None:
        """The published JSON Schema of this file's model, if it is one."""
        return SCHEMA_URL.format(file=cls.SCHEMA_FILE) if cls.SCHEMA_FILE else None


def _known_zone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown IANA time zone {value!r}") from exc
    return value


TimeZoneName = Annotated[str, AfterValidator(_known_zone)]
"""An IANA time zone name (``Europe/Berlin``), checked against the zone database."""
