"""Recommendation settings: Tortoise's global admin config plus the per-workload knobs.

One declaration of every key, its default, bounds and meaning. The engine (``bot.recommend``)
receives a resolved ``RecommendSettings``; the bot config sets admin defaults, the repository's
``.tortoise-bot.yaml`` and per-workload overrides refine them (``resolve``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from bot.config.base import ConfigModel


class AdminSettings(ConfigModel):
    """Tortoise's global config (``pkg/config/config.go``, ``defaultConfig``), snake_case keys."""

    minimum_min_replicas: int = Field(3, ge=1, description="Floor of recommended minReplicas.")
    maximum_min_replicas: int = Field(10, ge=1, description="Ceiling on applied minReplicas.")
    preferred_max_replicas: int = Field(
        30, ge=1, description="Above this replica count bigger Pods are preferred."
    )
    maximum_max_replicas: int = Field(100, ge=1, description="Hard ceiling on maxReplicas.")


class RecommendSettings(ConfigModel):
    """Everything the engine needs besides the data; see ``docs/recommendations.md``."""

    admin: AdminSettings = AdminSettings()


def _deep_merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def resolve(base: RecommendSettings, *overrides: Mapping[str, Any]) -> RecommendSettings:
    """``base`` with each override (a partial mapping of the same keys) applied in order."""
    data = base.model_dump()
    for override in overrides:
        data = _deep_merge(data, override)
    return RecommendSettings.model_validate(data)
