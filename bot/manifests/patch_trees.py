"""Patch trees: the nested keys the editor adds to a file, and overlay strategic-merge patches.

A planned value is YAML text (``PlannedText``) by the time it reaches a tree; copied values are
written back as the YAML scalar that reads as the same value (``yaml_scalar``). ``patch_tree``
builds the body of an overlay patch from (path, text or list splice) leaves; ``merge_tree``
merges trees bound for the same place.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from typing import Any

from bot.manifests.errors import EditError
from bot.manifests.kinds import strategic_merge
from bot.manifests.sources import MERGE_KEYS, Path_
from bot.manifests.textedit import NewTree

_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
"""A string that YAML reads back as the same string without quotes (unless ``_NOT_STRING``)."""
_NOT_STRING = re.compile(
    r"^([-+]?(\d[\d_]*(\.\d*)?([eE][-+]?\d+)?|0[xo][0-9a-fA-F]+)|true|false|yes|no|on|off|y|n"
    r"|null)$",
    re.IGNORECASE,
)
"""Plain texts YAML 1.1 or 1.2 reads as a number, boolean or null: such strings are quoted."""


@dataclass(frozen=True, slots=True)
class Splice:
    """A list item replaced by several (a pod-level ``Resource`` metric by ``ContainerResource``
    metrics); ``items`` are mappings whose planned scalars are ``PlannedText``."""

    items: tuple[dict[str, Any], ...]


def tree_for(data: Any, path: Path_, leaf: str) -> NewTree | list[NewTree]:
    """Nested keys for ``path`` (relative to ``data``) ending in ``leaf``; merge-key list items."""
    if not path:
        raise EditError("", 0, "empty path")
    head, rest = path[0], path[1:]
    if isinstance(head, int):
        raise EditError("", 0, "cannot address a list item here")
    sub = data.get(head) if isinstance(data, dict) else None
    if not rest:
        return {str(head): leaf}
    if isinstance(rest[0], int):
        if head not in MERGE_KEYS or not isinstance(sub, list) or rest[0] >= len(sub):
            raise EditError("", 0, f"cannot patch an item of list {head!r}")
        item = sub[rest[0]]
        merge_key = MERGE_KEYS[head]
        inner = tree_for(item, rest[1:], leaf) if rest[1:] else {}
        assert isinstance(inner, dict)
        return {str(head): [{merge_key: str(item[merge_key]), **inner}]}
    inner = tree_for(sub, rest, leaf)
    assert isinstance(inner, dict)
    return {str(head): inner}


@dataclass(frozen=True, slots=True)
class PlannedText:
    """A scalar already written as YAML text (a planned value) inside copied data."""

    text: str


def yaml_scalar(value: Any) -> str:
    """YAML text of a copied scalar."""
    if isinstance(value, PlannedText):
        return value.text
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value)
    return text if _PLAIN.match(text) and not _NOT_STRING.match(text) else json.dumps(text)


def as_tree(value: Any) -> NewTree:
    """A copied mapping as a tree of YAML texts (``yaml_scalar``), lists of mappings included."""
    if not isinstance(value, dict):
        raise EditError("", 0, "a patch can only copy lists of mappings")
    out: NewTree = {}
    for key, sub in value.items():
        if isinstance(sub, dict):
            out[str(key)] = as_tree(sub)
        elif isinstance(sub, list):
            out[str(key)] = [as_tree(item) for item in sub]
        else:
            out[str(key)] = yaml_scalar(sub)
    return out


def _splice(data: Any, leaves: list[tuple[Path_, str | Splice]]) -> None:
    """Replace the spliced list items of ``data`` in place, highest index first so the others'
    indices still hold."""
    splices = [(path, leaf) for path, leaf in leaves if isinstance(leaf, Splice)]
    for path, leaf in sorted(splices, key=lambda pl: pl[0], reverse=True):
        items = value_at(data, path[:-1])
        index = path[-1]
        if not isinstance(items, list) or not isinstance(index, int) or index >= len(items):
            raise EditError("", 0, f"cannot replace {'.'.join(map(str, path))}")
        items[index : index + 1] = [copy.deepcopy(item) for item in leaf.items]


def patch_tree(data: dict[str, Any], leaves: list[tuple[Path_, str | Splice]]) -> NewTree:
    """A strategic-merge patch body setting every (path, text): lists with a merge key get one
    item per named element; other lists (HPA ``metrics``) are copied whole, with the new values
    and splices (scalars first, then splices, so scalar paths keep their indices). A custom
    resource Kustomize merges as a JSON merge patch (an Argo ``Rollout``) gets every list whole."""
    strategic = strategic_merge(data)
    modified = copy.deepcopy(data)
    for path, text in leaves:
        if isinstance(text, Splice):
            continue
        target: Any = modified
        for part in path[:-1]:
            if isinstance(target, dict):
                target = target.setdefault(part, {})
            elif isinstance(target, list) and isinstance(part, int) and part < len(target):
                target = target[part]
            else:
                raise EditError("", 0, f"cannot patch {'.'.join(map(str, path))}")
        if not isinstance(target, dict):
            raise EditError("", 0, f"cannot patch {'.'.join(map(str, path))}")
        target[path[-1]] = PlannedText(text)
    _splice(modified, leaves)
    tree: NewTree = {}
    for path, _ in leaves:
        node: NewTree = tree
        here: Any = modified
        index = 0
        while index < len(path):
            key = str(path[index])
            sub = here.get(path[index]) if isinstance(here, dict) else None
            if index == len(path) - 1:
                node[key] = yaml_scalar(sub)
                break
            following = path[index + 1]
            if isinstance(following, int):
                assert isinstance(sub, list)
                if key not in MERGE_KEYS or not strategic:
                    node[key] = [as_tree(item) for item in sub]
                    break
                merge_key = MERGE_KEYS[key]
                element = sub[following]
                items = node.setdefault(key, [])
                assert isinstance(items, list)
                name = yaml_scalar(element[merge_key])
                found = next((i for i in items if i.get(merge_key) == name), None)
                if found is None:
                    found = {merge_key: name}
                    items.append(found)
                node, here, index = found, element, index + 2
                continue
            child = node.setdefault(key, {})
            assert isinstance(child, dict)
            node, here, index = child, sub, index + 1
    return tree


def merge_tree(into: NewTree, tree: NewTree) -> None:
    """Merge ``tree`` into ``into`` (list items matched by their first key)."""
    for key, value in tree.items():
        current = into.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            merge_tree(current, value)
        elif isinstance(value, list) and isinstance(current, list):
            for item in value:
                same = next(
                    (c for c in current if next(iter(c.items())) == next(iter(item.items()))), None
                )
                if same is None:
                    current.append(item)
                else:
                    merge_tree(same, item)
        else:
            into[key] = value


def value_at(data: Any, path: Path_) -> Any:
    """The value at ``path`` in nested mappings and lists (None where the path leaves them)."""
    for part in path:
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
        else:
            return None
    return data
