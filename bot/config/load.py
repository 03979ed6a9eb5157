"""Read YAML configuration files into pydantic models, reporting every problem with its line."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from bot.config.errors import ConfigError, ConfigProblem

M = TypeVar("M", bound=BaseModel)

MAX_CONFIG_BYTES = 1024 * 1024
"""A configuration file larger than this is refused (1 MiB)."""


def _line_of(root: Any, loc: Sequence[int | str]) -> int:
    """1-based line of the deepest node of ``loc`` that exists in the ruamel tree, 0 if none."""
    node, line = root, 0
    for part in loc:
        if isinstance(node, CommentedMap) and part in node:
            line = node.lc.key(part)[0] + 1
            node = node[part]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and part < len(node):
            line = node.lc.item(part)[0] + 1
            node = node[part]
        else:
            break
    return line


def line_in(text: str, loc: Sequence[int | str]) -> int:
    """1-based line of the key at ``loc`` (``("environments", 2)``) in YAML ``text``: of its
    deepest part that exists, 0 when none does or the text is not valid YAML."""
    yaml = YAML(typ="rt")
    try:
        data = yaml.load(io.StringIO(text))
    except YAMLError:
        return 0
    return _line_of(data, loc)


def _expected(err: dict[str, Any]) -> str:
    msg = str(err["msg"])
    if err["type"] == "extra_forbidden":
        return "unknown key (check the spelling; see the JSON Schema in config/)"
    if err["type"] == "missing":
        return "required key is missing"
    return msg


def parse_model(text: str, model: type[M], *, file: str) -> M:
    """Parse YAML ``text`` into ``model``; raise ``ConfigError`` listing every problem."""
    if len(text.encode()) > MAX_CONFIG_BYTES:
        raise ConfigError(
            [ConfigProblem(file, 0, "", f"file larger than {MAX_CONFIG_BYTES} bytes")]
        )
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    try:
        data = yaml.load(io.StringIO(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        raise ConfigError([ConfigProblem(file, line, "", f"invalid YAML: {exc.problem}")]) from exc
    except YAMLError as exc:
        raise ConfigError([ConfigProblem(file, 0, "", f"invalid YAML: {exc}")]) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError([ConfigProblem(file, 1, "", "expected a mapping at the top level")])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = [
            ConfigProblem(
                file,
                _line_of(data, err["loc"]),
                ".".join(str(p) for p in err["loc"]),
                _expected(dict(err)),
            )
            for err in exc.errors()
        ]
        raise ConfigError(problems) from exc


def load_model(path: Path, model: type[M], *, display_name: str | None = None) -> M:
    """Read and parse the YAML file at ``path`` (see ``parse_model``)."""
    name = display_name or str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([ConfigProblem(name, 0, "", f"cannot read: {exc}")]) from exc
    return parse_model(text, model, file=name)
