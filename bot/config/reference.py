"""Generate the configuration reference tables (``docs/configuration.md``) from the models.

Declared once: key, type, default and description come from the pydantic fields, as the JSON
Schemas in ``config/`` do.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

BEGIN = "<!-- BEGIN GENERATED: {name} -->"
END = "<!-- END GENERATED: {name} -->"


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:  # a checked type: its base type
        return _type_name(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return " \\| ".join(json.dumps(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type_name(a) for a in typing.get_args(annotation))
    if origin in (tuple, list):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        key, value = typing.get_args(annotation) or (str, Any)
        return f"map {_type_name(key)} → {_type_name(value)}"
    if annotation is type(None):
        return "null"
    if annotation is Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation))


def _default(info: FieldInfo) -> str:
    if info.default is PydanticUndefined:
        return "required" if info.default_factory is None else "`{}`"
    value = info.default
    if isinstance(value, BaseModel):
        return "(section)"
    return f"`{json.dumps(value, default=str)}`"


def rows(model: type[BaseModel], prefix: str = "") -> list[tuple[str, str, str, str]]:
    """``(key, type, default, description)`` for every field, sections flattened with dots."""
    out: list[tuple[str, str, str, str]] = []
    for name, info in model.model_fields.items():
        key = f"{prefix}{info.alias or name}"
        nested = _model_in(info.annotation)
        description = (info.description or "").replace("\n", " ").replace("|", "\\|")
        if nested is not None and typing.get_origin(info.annotation) not in (tuple, list, dict):
            out.extend(rows(nested, key + "."))
            continue
        if nested is not None:
            description += f" Entries: see `{key}[]` below."
        out.append((key, _type_name(info.annotation), _default(info), description))
        if nested is not None:
            out.extend(rows(nested, key + "[]."))
    return out


def table(model: type[BaseModel]) -> str:
    """The markdown table of ``model``'s keys."""
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    lines += [f"| `{k}` | {t} | {d} | {m} |" for k, t, d, m in rows(model)]
    return "\n".join(lines) + "\n"


def refresh(text: str, tables: dict[str, type[BaseModel]]) -> str:
    """``text`` with each generated block replaced by the current table."""
    for name, model in tables.items():
        begin, end = BEGIN.format(name=name), END.format(name=name)
        head, sep, rest = text.partition(begin)
        if not sep:
            raise ValueError(f"marker {begin} missing")
        _, sep2, tail = rest.partition(end)
        if not sep2:
            raise ValueError(f"marker {end} missing")
        text = f"{head}{begin}\n{table(model)}{end}{tail}"
    return text
