"""Generate the JSON Schemas in ``config/`` from the pydantic models (one declaration)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bot.config.bot import BotSettings
from bot.config.repo import RepoConfig

SCHEMAS: dict[str, type[BaseModel]] = {
    str(model.SCHEMA_FILE): model for model in (RepoConfig, BotSettings)
}
"""File name in ``config/`` (each model's ``SCHEMA_FILE``) -> model it is generated from."""


def schema_text(model: type[BaseModel]) -> str:
    """The JSON Schema of ``model`` as stable, pretty-printed text with a final newline."""
    schema: dict[str, Any] = model.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


DOC_TABLES: dict[str, type[BaseModel]] = {"repo": RepoConfig, "bot": BotSettings}
"""Generated tables in ``docs/configuration.md``: marker name -> model."""


def write_schemas(directory: Path) -> list[Path]:
    """Write every schema into ``directory``; return the paths written."""
    written = []
    for name, model in SCHEMAS.items():
        path = directory / name
        path.write_text(schema_text(model), encoding="utf-8")
        written.append(path)
    return written
