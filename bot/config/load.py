"""Read YAML configuration files into pydantic models, reporting every problem with its line."""

from __future__ import annotations

import difflib
import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from bot.config.errors import ConfigError, ConfigProblem
from bot.nesting import NestingError, check_yaml

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


def _key_lines(node: Any, path: tuple[Any, ...], out: dict[tuple[Any, ...], int]) -> None:
    """Every key and item under ``node`` of a ruamel tree, by its path, with its 1-based line."""
    if isinstance(node, CommentedMap):
        for key, value in node.items():
            out[(*path, key)] = node.lc.key(key)[0] + 1
            _key_lines(value, (*path, key), out)
    elif isinstance(node, CommentedSeq):
        for index, value in enumerate(node):
            out[(*path, index)] = node.lc.item(index)[0] + 1
            _key_lines(value, (*path, index), out)


class KeyLines:
    """The lines of a YAML text's keys, read once into a plain mapping (cheap to send to a
    worker process): ``line(loc)`` is the 1-based line of the key at ``loc``
    (``("environments", 2)``), of its deepest part that exists; 0 when none does or the text is
    not valid YAML."""

    def __init__(self, text: str) -> None:
        self._lines: dict[tuple[Any, ...], int] = {}
        try:
            check_yaml(text)
            tree = YAML(typ="rt").load(io.StringIO(text))
        except (YAMLError, NestingError):
            return
        _key_lines(tree, (), self._lines)

    def line(self, loc: Sequence[int | str]) -> int:
        for end in range(len(loc), 0, -1):
            line = self._lines.get(tuple(loc[:end]))
            if line is not None:
                return line
        return 0


SEQUENCE_ERRORS = frozenset({"tuple_type", "list_type", "set_type", "frozen_set_type"})
"""Pydantic error types of a value that should have been a YAML sequence."""

MAPPING_ERRORS = frozenset({"dict_type", "model_type", "model_attributes_type"})
"""Pydantic error types of a value that should have been a YAML mapping."""


def _shown(value: Any) -> str:
    """A wrong value as the message quotes it: ``the text 'right-sizing'``, ``the number 3``."""
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _fields_at(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The keys the model accepts at ``loc`` (a mapping's path), [] when not a model there."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue  # an item of a sequence: same element type
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        field = current.model_fields.get(part) or next(
            (f for f in current.model_fields.values() if f.alias == part), None
        )
        if field is None:
            return []
        current = next(
            (
                t
                for t in (field.annotation, *get_args(field.annotation))
                if isinstance(t, type) and issubclass(t, BaseModel)
            ),
            None,
        )
    if not (isinstance(current, type) and issubclass(current, BaseModel)):
        return []
    return [f.alias or name for name, f in current.model_fields.items()]


def _expected(err: dict[str, Any], model: type[BaseModel]) -> str:
    """What is wrong and what is expected instead, in the user's terms."""
    msg = str(err["msg"])
    kind = err["type"]
    if kind == "extra_forbidden":
        loc = err["loc"]
        close = difflib.get_close_matches(str(loc[-1]), _fields_at(model, loc[:-1]), n=1)
        hint = f"did you mean {close[0]!r}? " if close else "check the spelling; "
        url = getattr(model, "schema_url", lambda: None)()
        return f"unknown key ({hint}every key: {url or 'docs/configuration.md'})"
    if kind == "missing":
        return "required key is missing"
    if kind in SEQUENCE_ERRORS:
        got = err.get("input")
        example = f"[{got}]" if isinstance(got, str) and got else "[a, b]"
        return f"expected a list (a YAML sequence such as {example}), got {_shown(got)}"
    if kind in MAPPING_ERRORS:
        return f"expected a mapping (key: value lines), got {_shown(err.get('input'))}"
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
        check_yaml(text)
        data = yaml.load(io.StringIO(text))
    except NestingError as exc:
        raise ConfigError([ConfigProblem(file, exc.line, "", str(exc))]) from exc
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
        raise ConfigError(
            validation_problems(exc, model, file, lambda loc: _line_of(data, loc))
        ) from exc


def validation_problems(
    exc: ValidationError,
    model: type[BaseModel],
    file: str,
    line: Callable[[Sequence[int | str]], int],
    prefix: Sequence[int | str] = (),
) -> list[ConfigProblem]:
    """Every error of ``exc`` (validating ``model``) as a problem in the user's terms, at
    ``line(loc)`` of ``file``; ``prefix`` is where the validated mapping sits in the file
    (``("workloads", 2, "recommend")``)."""
    problems = []
    for err in exc.errors():
        loc = (*prefix, *err["loc"])
        problems.append(
            ConfigProblem(file, line(loc), ".".join(map(str, loc)), _expected(dict(err), model))
        )
    return problems


def load_model(path: Path, model: type[M], *, display_name: str | None = None) -> M:
    """Read and parse the YAML file at ``path`` (see ``parse_model``)."""
    name = display_name or str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([ConfigProblem(name, 0, "", f"cannot read: {exc}")]) from exc
    return parse_model(text, model, file=name)
