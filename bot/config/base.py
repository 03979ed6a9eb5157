"""The pydantic base every configuration model derives from: unknown keys are errors."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ConfigModel(BaseModel):
    """Strict, frozen model: a misspelt key is reported instead of silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
