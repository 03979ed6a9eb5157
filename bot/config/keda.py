"""Settings of what the bot proposes for a KEDA ScaledObject beyond Tortoise's rules.

Part of ``RecommendSettings`` (``bot.config.recommend``) as ``keda`` (``docs/recommendations.md``,
``docs/manifests.md`` "KEDA ScaledObjects").
"""

from __future__ import annotations

from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator

from bot.config.base import ConfigModel


class KedaSettings(ConfigModel):
    """Time-of-week floors as KEDA ``cron`` triggers (bot rule ``keda.cron_floors``)."""

    cron_floors: Literal["off", "propose"] = Field(
        "off",
        description="propose: where Tortoise's per-hour-of-week minimum shows busy hours the "
        "static minReplicaCount is kept for, propose minReplicaCount lowered to the quiet "
        "hours' floor plus cron triggers holding the busy hours' floor, when the replay of "
        "the HPA KEDA generates shows fewer replica-hours and no more shortfall minutes; off: "
        "never (upstream Tortoise has one minReplicas).",
    )
    time_zone: str = Field(
        "Etc/UTC",
        description="IANA time zone of the proposed cron triggers (their metadata.timezone) "
        "and of the hours of the week they are found on.",
    )
    cron_max_triggers: int = Field(
        4,
        ge=1,
        le=28,
        description="At most this many cron triggers per ScaledObject: busy hours sharing "
        "start, end and desiredReplicas on several weekdays are one trigger.",
    )
    cron_min_hours: int = Field(
        2,
        ge=1,
        le=24,
        description="Quiet hours between two busy runs of one day shorter than this stay "
        "busy (one trigger, not two).",
    )

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        """A zone KEDA knows too (the IANA database): an unknown one is refused."""
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown IANA time zone {value!r}") from exc
        return value
