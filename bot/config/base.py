"""The pydantic base every configuration model derives from: unknown keys are errors."""

from __future__ import annotations

from typing import Annotated, ClassVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BaseModel, ConfigDict

SCHEMA_URL = "https://raw.githubusercontent.com/tortoise-bot/tortoise-bot/main/config/{file}"
"""Where the JSON Schemas that ``tortoise-bot schema`` writes into ``config/`` are published."""


class ConfigModel(BaseModel):
    """Strict, frozen model: a misspelt key is reported instead of silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

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
