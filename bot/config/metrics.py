"""Prometheus connection and query settings (bot settings; secrets come from the environment)."""

from __future__ import annotations

from pydantic import Field

from bot.config.base import ConfigModel


class PrometheusConfig(ConfigModel):
    """How to reach Prometheus (or Thanos, Mimir, VictoriaMetrics) and what to ask."""

    url: str | None = Field(None, description="Base URL of the Prometheus HTTP API.")
    window_days: float = Field(14.0, gt=0, le=90, description="History window in days.")
    step_s: int = Field(60, ge=1, description="Range-query step in seconds.")
