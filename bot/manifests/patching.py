"""Strategic-merge and JSON 6902 patches applied to ``Obj`` data *and* its origins.

This is not a second Kustomize: it replays the patches a kustomization lists so that each value
knows which file wrote it last. The values themselves come from ``kubectl kustomize``; a value
whose replayed origin disagrees with the render has no location (it cannot be edited).
Merge rules follow ``k8s.io/apimachinery/pkg/util/strategicpatch/patch.go``: maps merge, lists
with a ``patchMergeKey`` (``sources.MERGE_KEYS``) merge by that key, other lists are replaced,
``null`` deletes a key. Helm values merge the same way without list keys (``merge_lists=False``).
"""

from __future__ import annotations

from typing import Any

from bot.manifests.sources import MERGE_KEYS, Obj, Origin, Path_, origins_of
from bot.manifests.yamldoc import YMap, YNode, YScalar, YSeq, to_data


def _drop(origins: dict[Path_, list[Origin]], prefix: Path_) -> None:
    n = len(prefix)
    for key in [k for k in origins if k[:n] == prefix and len(k) > n]:
        del origins[key]


def _replace(
    obj: Obj,
    target: dict[str, Any] | list[Any],
    key: Any,
    sub: Path_,
    node: YNode,
    *,
    where: Origin,
) -> None:
    if isinstance(target, list):
        if key == len(target):
            target.append(to_data(node))
        else:
            target[key] = to_data(node)
    else:
        target[key] = to_data(node)
    obj.origins.pop(sub, None)
    _drop(obj.origins, sub)
    for path, found in origins_of(
        where.file, where.document, node, where.path, where.inline
    ).items():
        obj.origins.setdefault(sub + path, []).extend(found)


def merge_map(
    obj: Obj,
    target: dict[str, Any],
    base: Path_,
    patch: YMap,
    where: Origin,
    *,
    merge_lists: bool = True,
) -> None:
    """Merge the mapping ``patch`` (written at ``where``) into ``target`` at path ``base``."""
    obj.origins.setdefault(base, []).append(where)
    for key_node, value in patch.items:
        key = key_node.value
        if isinstance(key, str) and key.startswith("$"):
            continue
        sub = (*base, key)
        at = Origin(where.file, where.document, (*where.path, key), value, where.inline)
        current = target.get(key)
        if isinstance(value, YScalar) and value.value is None and merge_lists:
            target.pop(key, None)
            obj.origins.pop(sub, None)
            _drop(obj.origins, sub)
        elif isinstance(value, YMap) and isinstance(current, dict):
            directive = value.get("$patch")
            if isinstance(directive, YScalar) and directive.value == "replace":
                _replace(obj, target, key, sub, value, where=at)
            else:
                merge_map(obj, current, sub, value, at, merge_lists=merge_lists)
        elif (
            merge_lists
            and isinstance(value, YSeq)
            and isinstance(current, list)
            and key in MERGE_KEYS
        ):
            _merge_list(obj, current, sub, value, at, merge_key=MERGE_KEYS[key])
        else:
            _replace(obj, target, key, sub, value, where=at)


def _merge_list(
    obj: Obj, target: list[Any], base: Path_, patch: YSeq, where: Origin, *, merge_key: str
) -> None:
    """Merge a list by ``merge_key`` the way ``kubectl kustomize`` orders it: the patch's items
    first, in the patch's order (merged into the item of the same key, or new), then the
    other items in their old order (a component adding a sidecar puts it first)."""
    obj.origins.setdefault(base, []).append(where)
    order: list[int] = []
    for index, item in enumerate(patch.items):
        at = Origin(where.file, where.document, (*where.path, index), item, where.inline)
        key_node = item.get(merge_key) if isinstance(item, YMap) else None
        match = None
        if isinstance(item, YMap) and isinstance(key_node, YScalar):
            match = next(
                (
                    i
                    for i, elem in enumerate(target)
                    if isinstance(elem, dict) and elem.get(merge_key) == key_node.value
                ),
                None,
            )
        if match is None:
            order.append(len(target))
            _replace(obj, target, len(target), (*base, len(target)), item, where=at)
        else:
            assert isinstance(item, YMap)
            order.append(match)
            merge_map(obj, target[match], (*base, match), item, at)
    order = list(dict.fromkeys(order))
    named = set(order)
    order += [i for i in range(len(target)) if i not in named]
    if order != list(range(len(target))):
        _reorder(obj, target, base, order)


def _reorder(obj: Obj, target: list[Any], base: Path_, order: list[int]) -> None:
    """Put ``target``'s items in ``order`` (old indices), their origins moved with them."""
    target[:] = [target[i] for i in order]
    new_index = {old: new for new, old in enumerate(order)}
    n = len(base)
    moved = {
        (*base, new_index[k[n]], *k[n + 1 :]): obj.origins.pop(k)
        for k in [k for k in obj.origins if k[:n] == base and len(k) > n and k[n] in new_index]
    }
    obj.origins.update(moved)


def _pointer(path: str) -> list[str]:
    if not path.startswith("/"):
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def apply_json6902(obj: Obj, ops: YSeq, where: Origin) -> None:
    """Replay ``add``/``replace``/``remove`` operations (others are left to the render check)."""
    for index, op_node in enumerate(ops.items):
        if not isinstance(op_node, YMap):
            continue
        op, path, value = op_node.get("op"), op_node.get("path"), op_node.get("value")
        if not isinstance(op, YScalar) or not isinstance(path, YScalar):
            continue
        tokens = _pointer(str(path.value))
        if not tokens:
            continue
        parent: Any = obj.data
        base: Path_ = ()
        for token in tokens[:-1]:
            if isinstance(parent, list) and token.isdigit() and int(token) < len(parent):
                parent, base = parent[int(token)], (*base, int(token))
            elif isinstance(parent, dict) and token in parent:
                parent, base = parent[token], (*base, token)
            else:
                parent = None
                break
        last = tokens[-1]
        key: Any = last
        if isinstance(parent, list):
            key = len(parent) if last == "-" else int(last) if last.isdigit() else None
            if key is None or key > len(parent):
                continue
        elif not isinstance(parent, dict):
            continue
        sub = (*base, key)
        if op.value in ("add", "replace") and value is not None:
            at = Origin(
                where.file, where.document, (*where.path, index, "value"), value, where.inline
            )
            if isinstance(parent, list) and op.value == "add" and key < len(parent):
                parent.insert(key, None)
            _replace(obj, parent, key, sub, value, where=at)
        elif op.value == "remove":
            if isinstance(parent, dict):
                parent.pop(key, None)
            elif key < len(parent):
                parent.pop(key)
            obj.origins.pop(sub, None)
            _drop(obj.origins, sub)


def set_value(obj: Obj, path: Path_, node: YScalar, where: Origin) -> None:
    """Set one scalar (e.g. Kustomize's ``replicas:`` or ``namespace:``) written at ``where``."""
    target: Any = obj.data
    for part in path[:-1]:
        if not isinstance(target, dict):
            return
        target = target.setdefault(part, {})
    if isinstance(target, dict):
        target[path[-1]] = node.value
        obj.set_origin(path, where)


IDENTITY: tuple[Path_, ...] = (
    ("apiVersion",),
    ("kind",),
    ("metadata", "name"),
    ("metadata", "namespace"),
)
"""What a strategic-merge patch with a ``target:`` never changes: Kustomize gives the patch each
selected object's own identity (``metadata.name: ignored-by-kustomize`` is common)."""


def identity_of(obj: Obj) -> dict[Path_, tuple[Any, list[Origin] | None]]:
    """Each ``IDENTITY`` value of ``obj`` and its origins, to restore after a patch."""
    out: dict[Path_, tuple[Any, list[Origin] | None]] = {}
    for path in IDENTITY:
        holder = obj.data if len(path) == 1 else obj.data.get(path[0])
        if isinstance(holder, dict):
            found = obj.origins_at(path)
            out[path] = (holder.get(path[-1], _MISSING), list(found) if found else None)
    return out


_MISSING = object()


def restore_identity(obj: Obj, identity: dict[Path_, tuple[Any, list[Origin] | None]]) -> None:
    """Put back what ``identity_of`` kept, after a patch with a ``target:``."""
    for path, (value, origins) in identity.items():
        holder = obj.data if len(path) == 1 else obj.data.get(path[0])
        if not isinstance(holder, dict):
            continue
        if value is _MISSING:
            holder.pop(path[-1], None)
        else:
            holder[path[-1]] = value
        if origins is None:
            obj.origins.pop(path, None)
        else:
            obj.origins[path] = origins
