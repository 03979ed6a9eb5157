"""Planning: which file and node each field change goes to, and the text to write there.

See ``edit`` for the rules; this module decides, per workload, the scalar replacements, the keys
to add under an existing mapping, the overlay patch entries and the values-file additions. It
writes nothing and renders nothing.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.manifests.comments import KeyPath, Line, carry, place
from bot.manifests.discovery import Discovery
from bot.manifests.errors import EditError, SharedFileError
from bot.manifests.quantities import (
    bytes_from_quantity,
    cores_from_quantity,
    cpu_style,
    format_cpu,
    format_memory,
    memory_style,
)
from bot.manifests.sources import MERGE_KEYS, Inline, Obj, Origin, Path_
from bot.manifests.textedit import (
    NewTree,
    TextEdit,
    after_line,
    delete_key,
    indent_style,
    item_lines,
    kept_block,
    last_end,
    replace_scalar,
)
from bot.manifests.workloads import (
    RESOURCE_FIELDS,
    CheckKey,
    Entry,
    Slot,
    SlotKey,
    hpa_location_key,
)
from bot.manifests.yamldoc import YamlFile, YMap, YNode, YScalar, YSeq, node_at
from bot.model import (
    DeclaredWorkload,
    FieldChange,
    FieldId,
    Note,
    WorkloadRef,
)

PATCH_FILE = "tortoise-bot-patch.yaml"
"""Strategic-merge patch the editor adds to an overlay when the value lives in a shared base."""
SKIPPED_NOTE = "skipped"
"""Code of the note that says why a change was skipped (its reason is also in
``EditResult.skipped``)."""
_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
"""A string that YAML reads back as the same string without quotes (unless ``_NOT_STRING``)."""
_NOT_STRING = re.compile(
    r"^([-+]?(\d[\d_]*(\.\d*)?([eE][-+]?\d+)?|0[xo][0-9a-fA-F]+)|true|false|yes|no|on|off|y|n"
    r"|null)$",
    re.IGNORECASE,
)
"""Plain texts YAML 1.1 or 1.2 reads as a number, boolean or null: such strings are quoted."""
FIELDS = tuple(FieldId)
"""``FieldChange.field`` values the editor accepts."""


METRIC_KEYS = {"Resource": "resource", "ContainerResource": "containerResource"}
"""HPA metric ``type`` -> the key of its body."""


@dataclass(frozen=True, slots=True)
class Splice:
    """A list item replaced by several (a pod-level ``Resource`` metric by ``ContainerResource``
    metrics); ``items`` are mappings whose planned scalars are ``_Text``."""

    items: tuple[dict[str, Any], ...]


@dataclass(eq=False, slots=True)
class Insert:
    """Keys to add under one existing node of a file."""

    file: str
    anchor: YNode
    key: YScalar | None
    tree: NewTree
    document: int
    inline: Inline | None = None
    """Set when the node lies inside a YAML string (offsets are the string's)."""


@dataclass(eq=False, slots=True)
class EditPlan:
    """Everything one workload's changes need."""

    ref: WorkloadRef
    edits: list[tuple[str, TextEdit]] = field(default_factory=list)
    inserts: list[Insert] = field(default_factory=list)
    patches: list[tuple[str, Obj, Path_, str | Splice]] = field(default_factory=list)
    """(overlay directory, object, path, text or list splice) for what the overlay patch file
    must set."""
    appends: list[tuple[str, NewTree]] = field(default_factory=list)
    """(values file, tree) for an environment values file with no mapping to insert into."""
    notes: list[Note] = field(default_factory=list)
    expected: dict[CheckKey, float | int | None] = field(default_factory=dict)
    skipped: list[tuple[FieldChange, str]] = field(default_factory=list)
    """Changes left out, with the reason (``SharedFileError``)."""


def _slot_for(entry: Entry, change: FieldChange) -> tuple[SlotKey, Slot]:
    ref, name = entry.workload.ref, change.field
    if name not in FIELDS:
        raise EditError("", 0, f"{ref}: unknown field {name!r}")
    if name in RESOURCE_FIELDS:
        if change.container is None or entry.workload.container(change.container) is None:
            names = ", ".join(c.name for c in entry.workload.containers) or "none"
            raise EditError(
                entry.workload.files[0] if entry.workload.files else "",
                0,
                f"{ref} has no container {change.container!r} (containers: {names})",
            )
        key: SlotKey = (change.container, name)
    elif name.is_hpa_target:
        key = (change.container, name) if (change.container, name) in entry.slots else (None, name)
    else:
        key = (None, name)
    if name.is_hpa and entry.workload.hpa is None:
        raise EditError(
            entry.workload.files[0] if entry.workload.files else "",
            0,
            f"{ref} has no HorizontalPodAutoscaler",
        )
    slot = entry.slots.get(key)
    if slot is None:
        raise EditError(
            entry.workload.files[0] if entry.workload.files else "",
            0,
            f"{ref}: {name}{' of ' + str(change.container) if change.container else ''} is not declared "
            "anywhere the editor can change it",
        )
    return key, slot


def _replaces_metric(entry: Entry, change: FieldChange) -> bool:
    """A per-container target change where the HPA only has the pod-level ``Resource`` metric
    in ``spec.metrics`` (a values mapping or ``autoscaling/v1`` keeps its single pod-level field,
    which such a change sets, as before)."""
    pod_level = entry.slots.get((None, change.field))
    return (
        change.field.is_hpa_target
        and change.container is not None
        and (change.container, change.field) not in entry.slots
        and pod_level is not None
        and pod_level.path[:2] == ("spec", "metrics")
    )


def _adds_metric(entry: Entry, change: FieldChange) -> bool:
    """A new per-container target (``current`` None) for a container the HPA has no metric
    for, where no pod-level metric of that resource exists either."""
    return (
        change.field.is_hpa_target
        and change.container is not None
        and change.current is None
        and change.proposed is not None
        and (change.container, change.field) not in entry.slots
        and (None, change.field) not in entry.slots
        and (None, FieldId.HPA_MAX_REPLICAS) in entry.slots
    )


def _removes_metric(change: FieldChange) -> bool:
    """A per-container target proposed as None: its ``ContainerResource`` metric goes."""
    return change.field.is_hpa_target and change.container is not None and change.proposed is None


def container_metric(resource: str, container: str, text: str) -> dict[str, Any]:
    """One ``ContainerResource`` utilisation metric (``text``: the planned percent)."""
    return {
        "type": "ContainerResource",
        "containerResource": {
            "name": resource,
            "container": container,
            "target": {"type": "Utilization", "averageUtilization": _Text(text)},
        },
    }


def replace_item(file: YamlFile, item: YMap, items: Sequence[dict[str, Any]]) -> TextEdit:
    """The edit replacing the block sequence item ``item`` (whole lines, from its dash to its
    last line) by ``items``, written at the same dash column with the item's own indentation
    step; the lines around it stay, and every comment of its lines moves to the same key of the
    first new item (``resource`` keys become ``containerResource``; ``comments.place``)."""
    line_start, end, lines = _item_block(file, item, items)
    carried = carry(file.text, line_start, end, item)
    return TextEdit(line_start, end, _join(file, end, place(lines, carried, _as_container)))


def insert_after_item(file: YamlFile, item: YMap, items: Sequence[dict[str, Any]]) -> TextEdit:
    """The edit adding ``items`` right after the block sequence item ``item``, at its dash
    column and in its indentation step (a file without a final newline keeps none)."""
    _, end, lines = _item_block(file, item, items)
    block = _join(file, end, [text for _, text in lines])
    if end == len(file.text) and not file.text.endswith("\n"):
        block = file.newline + block
    return TextEdit(end, end, block)


def remove_item(file: YamlFile, item: YMap) -> TextEdit:
    """The edit deleting the block sequence item ``item``: its whole lines, from its dash to its
    last line; their comments stay as comment lines (``comments.kept``), the lines around it
    too. At the end of a file without a final newline the line break before the item goes
    instead, so the file still ends without one."""
    start, end, _ = _item_block(file, item, ())
    block = kept_block(file, file.text, start, end)
    if end == len(file.text) and not file.text.endswith("\n") and start > 0 and not block:
        start -= len(file.newline) if file.text.endswith(file.newline, 0, start) else 1
    return TextEdit(start, end, block)


def _as_container(path: KeyPath) -> KeyPath:
    """A key path of a pod-level metric item as the same key of a ``ContainerResource`` one."""
    return (METRIC_KEYS["ContainerResource"], *path[1:]) if path[:1] == ("resource",) else path


def _join(file: YamlFile, end: int, lines: Sequence[str]) -> str:
    """Lines in the file's line ending, with none after the last at the end of a file that
    has no final newline."""
    block = "".join(line + file.newline for line in lines)
    if end == len(file.text) and not file.text.endswith("\n"):
        block = block.removesuffix(file.newline)
    return block


def _item_block(
    file: YamlFile, item: YMap, items: Sequence[dict[str, Any]]
) -> tuple[int, int, list[Line]]:
    """(start of the item's first line, end of its last line, the lines of ``items`` rendered
    like it, each with its key path under ``(index of the new item, ...)``)."""
    text = file.text
    line_start = text.rfind("\n", 0, item.start) + 1
    dash = text.rfind("-", line_start, item.start)
    if dash < 0 or text[line_start:dash].strip():
        raise EditError(file.path, item.line + 1, "cannot replace this list item")
    end = after_line(text, last_end(item))
    step, seq = indent_style(item)
    if not any(isinstance(v, YMap) and not v.flow for _, v in item.items):
        step, seq = indent_style(file.documents[0].root if file.documents else None)
    column = dash - line_start
    lines: list[Line] = []
    for index, entry in enumerate(items):
        rendered = item_lines(_as_tree(entry), column, step, seq)
        lines.extend(((index, *path) if index else path, text) for path, text in rendered)
    return line_start, end, lines


def _text(slot: Slot, value: float | int, like: YNode | None) -> tuple[str, float | int]:
    """The text to write for ``value`` and the value that text reads back as."""
    if value < 0:
        raise EditError("", 0, f"negative value {value}")
    sample = like.text if isinstance(like, YScalar) and like.value is not None else None
    if slot.unit == "cpu":
        text = format_cpu(float(value), cpu_style(sample) if sample else "milli")
        return text, cores_from_quantity(text)
    if slot.unit == "memory":
        text = format_memory(float(value), memory_style(sample) if sample else "binary")
        return text, bytes_from_quantity(text)
    number = round(float(value))
    return str(number), number


def _tree(data: Any, path: Path_, leaf: str) -> NewTree | list[NewTree]:
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
        inner = _tree(item, rest[1:], leaf) if rest[1:] else {}
        assert isinstance(inner, dict)
        return {str(head): [{merge_key: str(item[merge_key]), **inner}]}
    inner = _tree(sub, rest, leaf)
    assert isinstance(inner, dict)
    return {str(head): inner}


@dataclass(frozen=True, slots=True)
class _Text:
    """A scalar already written as YAML text (a planned value) inside copied data."""

    text: str


def _scalar(value: Any) -> str:
    """YAML text of a copied scalar."""
    if isinstance(value, _Text):
        return value.text
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value)
    return text if _PLAIN.match(text) and not _NOT_STRING.match(text) else json.dumps(text)


def _as_tree(value: Any) -> NewTree:
    if not isinstance(value, dict):
        raise EditError("", 0, "a patch can only copy lists of mappings")
    out: NewTree = {}
    for key, sub in value.items():
        if isinstance(sub, dict):
            out[str(key)] = _as_tree(sub)
        elif isinstance(sub, list):
            out[str(key)] = [_as_tree(item) for item in sub]
        else:
            out[str(key)] = _scalar(sub)
    return out


def _splice(data: Any, leaves: list[tuple[Path_, str | Splice]]) -> None:
    """Replace the spliced list items of ``data`` in place, highest index first so the others'
    indices still hold."""
    splices = [(path, leaf) for path, leaf in leaves if isinstance(leaf, Splice)]
    for path, leaf in sorted(splices, key=lambda pl: pl[0], reverse=True):
        items = _get(data, path[:-1])
        index = path[-1]
        if not isinstance(items, list) or not isinstance(index, int) or index >= len(items):
            raise EditError("", 0, f"cannot replace {'.'.join(map(str, path))}")
        items[index : index + 1] = [copy.deepcopy(item) for item in leaf.items]


def patch_tree(data: dict[str, Any], leaves: list[tuple[Path_, str | Splice]]) -> NewTree:
    """A strategic-merge patch body setting every (path, text): lists with a merge key get one
    item per named element; other lists (HPA ``metrics``) are copied whole, with the new values
    and splices (scalars first, then splices, so scalar paths keep their indices)."""
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
        target[path[-1]] = _Text(text)
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
                node[key] = _scalar(sub)
                break
            following = path[index + 1]
            if isinstance(following, int):
                assert isinstance(sub, list)
                if key not in MERGE_KEYS:
                    node[key] = [_as_tree(item) for item in sub]
                    break
                merge_key = MERGE_KEYS[key]
                element = sub[following]
                items = node.setdefault(key, [])
                assert isinstance(items, list)
                name = _scalar(element[merge_key])
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


class EditPlanner:
    """Plans the changes of one workload at a time against one discovery."""

    def __init__(self, disc: Discovery) -> None:
        self.disc = disc

    def exclusive(self, origin: Origin, env: str) -> bool:
        """Whether only ``env`` reads the file of ``origin``."""
        return self.disc.exclusive(origin.file, env)

    def _also(self, file: str, env: str) -> str:
        """`` (also read by ...)`` for a shared file, naming what else reads it."""
        others = self.disc.sharers(file, env)
        return f" (also read by {'; '.join(others)})" if others else ""

    def plan(self, ref: WorkloadRef, changes: Sequence[FieldChange]) -> EditPlan:
        """Every edit ``changes`` need; raises ``ManifestError`` when one cannot be planned.

        A change whose value lives only in a file that renders of other environments read, where
        the environment has no file of its own to hold it (``SharedFileError``), is skipped
        (``EditPlan.skipped``, with a note) and the others go on; the metric changes of an HPA
        (replaced, added, removed items) are one such change.
        """
        entry = self.disc.entries.get(ref)
        if entry is None:
            raise EditError("", 0, f"{ref} is not declared in this repository")
        plan = EditPlan(ref)
        replacing: dict[FieldId, list[FieldChange]] = {}
        adding: list[FieldChange] = []
        removing: list[FieldChange] = []
        for change in changes:
            if _removes_metric(change):
                removing.append(change)
                continue
            if _replaces_metric(entry, change):
                replacing.setdefault(change.field, []).append(change)
                continue
            if _adds_metric(entry, change):
                adding.append(change)
                continue
            key, slot = _slot_for(entry, change)
            self._try(plan, [change], self.change, entry, key, slot, change)
        metric_changes = [*removing, *adding, *(c for g in replacing.values() for c in g)]
        if metric_changes:
            self._try(plan, metric_changes, self._metrics, entry, replacing, adding, removing)
        return plan

    def _try(
        self,
        plan: EditPlan,
        changes: Sequence[FieldChange],
        step: Callable[..., None],
        *args: Any,
    ) -> None:
        """Plan ``step(part, *args)`` on its own and add it to ``plan``; a ``SharedFileError``
        skips ``changes`` with its reason instead."""
        part = EditPlan(plan.ref)
        try:
            step(part, *args)
        except SharedFileError as exc:
            plan.skipped.extend((change, exc.why) for change in changes)
            plan.notes.append(Note(SKIPPED_NOTE, exc.message))
            return
        plan.edits.extend(part.edits)
        plan.inserts.extend(part.inserts)
        plan.patches.extend(part.patches)
        plan.appends.extend(part.appends)
        plan.notes.extend(part.notes)
        plan.expected.update(part.expected)

    def _metrics(
        self,
        plan: EditPlan,
        entry: Entry,
        replacing: dict[FieldId, list[FieldChange]],
        adding: list[FieldChange],
        removing: list[FieldChange],
    ) -> None:
        """The ``spec.metrics`` edits of one HPA: removals, additions, replacements."""
        removed = self.metric_removals(plan, entry, removing, adding=bool(adding))
        added = self.add_metrics(plan, entry, adding, replacing=bool(replacing), removed=removed)
        last = max(replacing, key=lambda n: entry.slots[(None, n)].path[2], default=None)
        for name, group in replacing.items():
            self.replace_metric(plan, entry, name, group, added if name == last else ())
        if removed:
            obj = entry.slots[(None, FieldId.HPA_MAX_REPLICAS)].obj
            for index in sorted(removed):
                self._write_items(plan, entry, obj, ("spec", "metrics", index), (), keep=False)

    def metric_removals(
        self, plan: EditPlan, entry: Entry, changes: Sequence[FieldChange], *, adding: bool
    ) -> set[int]:
        """The ``spec.metrics`` indices of the ``ContainerResource`` metrics ``changes`` remove
        (Tortoise removes the metric of a resource no longer horizontal,
        ``syncHPAMetricsWithTortoiseAutoscalingPolicy``); their expected value after the edit
        is None. A metric the repository does not hold as an item of an HPA's ``spec.metrics``
        (Helm values, ``autoscaling/v1``) cannot be removed: the workload fails with a reason.
        An HPA keeps at least one metric (``adding``: new metrics come in the same edit)."""
        where = entry.workload.files[0] if entry.workload.files else ""
        indices: set[int] = set()
        for change in changes:
            resource = change.field.resource
            slot = entry.slots.get((change.container, change.field))
            if (
                slot is None
                or slot.obj.kind != "HorizontalPodAutoscaler"
                or slot.path[:2] != ("spec", "metrics")
                or not isinstance(slot.path[2], int)
            ):
                raise EditError(
                    where,
                    0,
                    f"{plan.ref}: no ContainerResource metric of {change.container!r} on "
                    f"{resource} to remove here (a values file or autoscaling/v1 cannot hold "
                    "one): remove it by hand",
                )
            plan.expected[(change.container, change.field)] = None
            indices.add(slot.path[2])
        if indices:
            metrics = _get(
                entry.slots[(None, FieldId.HPA_MAX_REPLICAS)].obj.data, ("spec", "metrics")
            )
            if isinstance(metrics, list) and len(indices) >= len(metrics) and not adding:
                raise EditError(where, 0, f"{plan.ref}: removing every HPA metric would leave none")
        return indices

    def _metric_items(
        self, plan: EditPlan, entry: Entry, obj: Obj, changes: Sequence[FieldChange]
    ) -> list[dict[str, Any]]:
        """One ``ContainerResource`` item per change, in container order (the planned values
        go to ``plan.expected``)."""
        where = entry.workload.files[0] if entry.workload.files else ""
        order = {c.name: i for i, c in enumerate(entry.workload.containers)}
        ordered = sorted(changes, key=lambda c: order.get(c.container or "", len(order)))
        items: list[dict[str, Any]] = []
        for change in ordered:
            resource = change.field.resource
            if resource is None or change.container not in order or change.proposed is None:
                raise EditError(
                    where,
                    0,
                    f"{plan.ref}: no container {change.container!r} to scale on {resource}",
                )
            text, readback = _text(Slot(obj, (), "percent"), change.proposed, None)
            plan.expected[(change.container, change.field)] = readback
            items.append(container_metric(resource, str(change.container), text))
        return items

    def replace_metric(
        self,
        plan: EditPlan,
        entry: Entry,
        name: FieldId,
        changes: Sequence[FieldChange],
        added: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Replace the pod-level ``Resource`` metric of ``name`` (``hpa.target.cpu``) by one
        ``ContainerResource`` metric per changed container, in container order, at the same
        place in ``spec.metrics`` (followed by ``added``, new metrics of containers that had
        none): as a text edit of the item where only this environment reads its file, else as
        an overlay patch carrying the whole list (lists without a merge key are replaced whole
        by a strategic merge)."""
        slot = entry.slots[(None, name)]
        items = [*self._metric_items(plan, entry, slot.obj, changes), *added]
        plan.expected[(None, name)] = None
        self._write_items(plan, entry, slot.obj, slot.path[:3], items, keep=False)

    def add_metrics(
        self,
        plan: EditPlan,
        entry: Entry,
        changes: Sequence[FieldChange],
        *,
        replacing: bool,
        removed: set[int] | None = None,
    ) -> list[dict[str, Any]]:
        """New ``ContainerResource`` metrics for containers the HPA has none for (Tortoise adds
        them at 70 %, ``syncHPAMetricsWithTortoiseAutoscalingPolicy``): written after the last
        kept ``ContainerResource`` item of ``spec.metrics``, else at its end. When a pod-level
        metric is being replaced and there is no such item, the items are returned for the
        replacement to write after its own; otherwise they are planned here and ``[]`` is
        returned. ``removed``: indices of items being removed, never used as an anchor; when
        every item is being removed, the new items take the place of the last one (its index
        leaves ``removed``)."""
        removed = removed if removed is not None else set()
        if not changes:
            return []
        obj = entry.slots[(None, FieldId.HPA_MAX_REPLICAS)].obj
        metrics = _get(obj.data, ("spec", "metrics"))
        where = entry.workload.files[0] if entry.workload.files else ""
        if obj.kind != "HorizontalPodAutoscaler" or not isinstance(metrics, list) or not metrics:
            raise EditError(
                where,
                0,
                f"{plan.ref}: ContainerResource not expressible here (the HPA has no "
                "spec.metrics list to add a metric to)",
            )
        items = self._metric_items(plan, entry, obj, changes)
        kinds = {
            i: m.get("type") if isinstance(m, dict) else None
            for i, m in enumerate(metrics)
            if i not in removed
        }
        if "ContainerResource" not in kinds.values() and replacing:
            return items
        if not kinds:
            last = max(removed)
            removed.discard(last)
            self._write_items(plan, entry, obj, ("spec", "metrics", last), items, keep=False)
            return []
        last = max(
            (i for i, kind in kinds.items() if kind == "ContainerResource"),
            default=max(kinds),
        )
        self._write_items(plan, entry, obj, ("spec", "metrics", last), items, keep=True)
        return []

    def _write_items(
        self,
        plan: EditPlan,
        entry: Entry,
        obj: Obj,
        item_path: Path_,
        items: Sequence[dict[str, Any]],
        *,
        keep: bool,
    ) -> None:
        """Write ``items`` in place of (``keep``: after) the metric at ``item_path`` (no items
        and not ``keep``: remove it): a text edit where only this environment reads the item's
        file, else an overlay patch carrying the whole list."""
        where = entry.workload.files[0] if entry.workload.files else ""
        verb = "adding to" if keep else "replacing" if items else "removing from"
        origin = obj.origin(item_path)
        shared = origin.file if origin else obj.root.file
        env = entry.environment
        if (
            origin is not None
            and origin.inline is None
            and isinstance(origin.node, YMap)
            and not origin.node.flow
            and self.exclusive(origin, env.name)
        ):
            file = self.disc.files.parse(origin.file)
            if keep:
                edit = insert_after_item(file, origin.node, items)
            else:
                edit = (
                    replace_item(file, origin.node, items)
                    if items
                    else remove_item(file, origin.node)
                )
            plan.edits.append((origin.file, edit))
            return
        if env.kind == "kustomize" and env.directory is not None and obj.name:
            if obj.root.inline is not None:
                raise EditError(
                    obj.root.file, obj.root.line, f"{plan.ref}: cannot patch this object"
                )
            kept = [copy.deepcopy(_get(obj.data, item_path))] if keep else []
            splice = Splice((*kept, *items))
            patch_tree(obj.data, [(item_path, splice)])
            plan.patches.append((env.directory, obj, item_path, splice))
            plan.notes.append(
                Note(
                    "overlay-patch",
                    f"{plan.ref}: added a patch in {env.directory} {verb} the HPA metrics "
                    f"of the shared {shared}{self._also(shared, env.name)}",
                )
            )
            return
        if origin is not None and not self.exclusive(origin, env.name):
            raise self._shared(plan, entry, "its HPA metrics", origin.file, origin.line)
        what = (
            "ContainerResource not expressible here (no file of environment "
            f"{env.name!r} can hold the {'added' if keep else 'replaced'} metric)"
            if items
            else f"the metric cannot be removed here (no file of environment {env.name!r} "
            "can hold the change): remove it by hand"
        )
        raise EditError(
            origin.file if origin else where, origin.line if origin else 0, f"{plan.ref}: {what}"
        )

    def change(
        self,
        plan: EditPlan,
        entry: Entry,
        key: SlotKey,
        slot: Slot,
        change: FieldChange,
    ) -> None:
        """Plan one field change (see ``edit`` for the rules)."""
        env = entry.environment
        origin = slot.obj.origin(slot.path)
        current = origin.node if origin is not None else None
        location = self._location(entry.workload, key)
        writes_null = isinstance(current, YScalar) and current.value is None
        if (
            origin is not None
            and location is None
            and change.proposed is not None
            and not (writes_null and _get(slot.obj.data, slot.path) is None)
        ):
            raise EditError(
                origin.file,
                origin.line,
                f"{plan.ref}: {change.field} is set by something the editor does not model "
                "(the rendered value differs from this file): change it by hand",
            )
        if change.proposed is None:
            plan.expected[key] = None
            if origin is None:
                return
            text = None
        else:
            text, readback = _text(slot, change.proposed, current)
            plan.expected[key] = readback
        if origin is not None and self.exclusive(origin, env.name):
            if origin.inline is not None:
                if text is None:
                    raise EditError(
                        origin.file, origin.line, "cannot remove a key from an inline YAML string"
                    )
                edit = replace_scalar(self.disc.files.parse(origin.file), origin.node, text)
                edit = TextEdit(
                    origin.inline.to_outer(edit.start), origin.inline.to_outer(edit.end), edit.text
                )
                plan.edits.append((origin.file, edit))
                return
            file = self.disc.files.parse(origin.file)
            if text is None:
                parent = node_at(file.documents[origin.document].root, origin.path[:-1])
                if not isinstance(parent, YMap):
                    raise EditError(origin.file, origin.line, "cannot remove this value")
                plan.edits.append(
                    (origin.file, delete_key(file, file.text, parent, str(origin.path[-1])))
                )
            else:
                plan.edits.append((origin.file, replace_scalar(file, origin.node, text)))
            return
        leaf = text if text is not None else "null"
        if self._insert_exclusive(plan, entry, slot, leaf):
            if origin is not None:
                plan.notes.append(
                    Note(
                        "own-file",
                        f"{plan.ref}: set in {plan.inserts[-1].file} instead of changing the "
                        f"shared {origin.file}{self._also(origin.file, env.name)}",
                    )
                )
            return
        container, name = key
        what = f"{name}{' of ' + container if container else ''}"
        self._own_file(plan, entry, slot, leaf, origin, what=what)

    def _location(self, workload: DeclaredWorkload, key: SlotKey) -> object | None:
        container, name = key
        if name in RESOURCE_FIELDS:
            found = workload.container(container or "")
            return found.locations.get(name) if found else None
        if name == FieldId.REPLICAS:
            return workload.locations.get(FieldId.REPLICAS)
        if workload.hpa is None:
            return None
        return workload.hpa.locations.get(hpa_location_key(name, container))

    def _insert_exclusive(self, plan: EditPlan, entry: Entry, slot: Slot, leaf: str) -> bool:
        """Add the key under the nearest existing node of a file only this environment reads."""
        env = entry.environment.name
        for cut in range(len(slot.path) - 1, -1, -1):
            prefix = slot.path[:cut]
            found = slot.obj.origins_at(prefix) or ([] if prefix else [slot.obj.root])
            candidates = [o for o in reversed(found) if self.exclusive(o, env)]
            for origin in candidates:
                rest = slot.path[cut:]
                node = origin.node
                if isinstance(node, YMap) and not isinstance(rest[0], int):
                    tree = _tree(_get(slot.obj.data, prefix), rest, leaf)
                    assert isinstance(tree, dict)
                    plan.inserts.append(
                        Insert(origin.file, node, None, tree, origin.document, origin.inline)
                    )
                    return True
                if (
                    isinstance(node, YSeq)
                    and isinstance(rest[0], int)
                    and prefix
                    and prefix[-1] in MERGE_KEYS
                ):
                    wrapper = _tree(_get(slot.obj.data, prefix[:-1]), (prefix[-1], *rest), leaf)
                    assert isinstance(wrapper, dict)
                    items = wrapper[str(prefix[-1])]
                    assert isinstance(items, list)
                    plan.inserts.append(
                        Insert(origin.file, node, None, items[0], origin.document, origin.inline)
                    )
                    return True
                if (
                    isinstance(node, YScalar)
                    and node.value is None
                    and origin.inline is None
                    and not isinstance(rest[0], int)
                ):
                    file = self.disc.files.parse(origin.file)
                    parent = node_at(file.documents[origin.document].root, origin.path[:-1])
                    key = (
                        parent.key_node(str(origin.path[-1])) if isinstance(parent, YMap) else None
                    )
                    if key is None:
                        continue
                    tree = _tree({}, rest, leaf)
                    assert isinstance(tree, dict)
                    plan.inserts.append(Insert(origin.file, node, key, tree, origin.document))
                    return True
        return False

    def _own_file(
        self,
        plan: EditPlan,
        entry: Entry,
        slot: Slot,
        leaf: str,
        origin: Origin | None,
        *,
        what: str,
    ) -> None:
        env = entry.environment
        shared = origin.file if origin is not None else slot.obj.root.file
        if env.kind == "kustomize" and env.directory is not None:
            if slot.obj.root.inline is not None or not slot.obj.name:
                raise EditError(
                    slot.obj.root.file, slot.obj.root.line, f"{plan.ref}: cannot patch this object"
                )
            patch_tree(slot.obj.data, [(slot.path, leaf)])  # refuses paths a patch cannot hold
            plan.patches.append((env.directory, slot.obj, slot.path, leaf))
            plan.notes.append(
                Note(
                    "overlay-patch",
                    f"{plan.ref}: added a patch in {env.directory} instead of changing the shared "
                    f"base {shared}{self._also(shared, env.name)}",
                )
            )
            return
        if env.kind == "helm" and env.values_file is not None:
            tree = _tree(slot.obj.data, slot.path, leaf)
            assert isinstance(tree, dict)
            file = self.disc.files.parse(env.values_file)
            root = file.documents[0].root if file.documents else None
            self._insert_tree(plan, file, root, tree)
            if origin is not None:
                plan.notes.append(
                    Note(
                        "values-file",
                        f"{plan.ref}: set in {env.values_file} instead of changing the shared "
                        f"{shared}",
                    )
                )
            return
        where = origin or slot.obj.root
        if not self.disc.exclusive(where.file, env.name):
            raise self._shared(plan, entry, what, where.file, where.line)
        raise EditError(
            where.file,
            where.line,
            f"{plan.ref}: no file of environment {env.name!r} can hold this value",
        )

    def _shared(
        self, plan: EditPlan, entry: Entry, what: str, file: str, line: int
    ) -> SharedFileError:
        """Why ``what`` cannot be written for this environment: ``file`` holds it, other renders
        read that file, and the environment has no overlay or values file of its own."""
        env = entry.environment.name
        others = "; ".join(self.disc.sharers(file, env))
        why = (
            f"it is written in {file}, which other renders read ({others}), and environment "
            f"{env!r} has no overlay of its own to patch"
        )
        return SharedFileError(file, line, f"{plan.ref}: {what} skipped: {why}", why)

    def _insert_tree(
        self, plan: EditPlan, file: YamlFile, root: YNode | None, tree: NewTree
    ) -> None:
        """Insert ``tree`` into a values mapping, descending through keys that already exist."""
        if root is None:
            plan.appends.append((file.path, tree))
            return
        node: YNode = root
        while isinstance(node, YMap) and len(tree) == 1:
            ((key, sub),) = tree.items()
            child = node.get(key)
            if child is None or not isinstance(sub, dict):
                break
            if isinstance(child, YScalar) and child.value is None:
                knode = node.key_node(key)
                assert knode is not None
                plan.inserts.append(Insert(file.path, child, knode, sub, 0))
                return
            node, tree = child, sub
        if isinstance(node, YMap):
            if tree.keys() & {k.value for k, _ in node.items}:
                raise EditError(
                    file.path, node.line + 1, "this values file already sets a conflicting key"
                )
            plan.inserts.append(Insert(file.path, node, None, tree, 0))
            return
        raise EditError(file.path, node.line + 1, "expected a mapping in this values file")


def _get(data: Any, path: Path_) -> Any:
    for part in path:
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
        else:
            return None
    return data
