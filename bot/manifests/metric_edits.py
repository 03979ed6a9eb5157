"""HPA metric-list edits: replacing, adding and removing items of an HPA's ``spec.metrics``.

A per-container target change (``hpa.target.cpu`` of one container) where the HPA only has the
pod-level ``Resource`` metric replaces that item by one ``ContainerResource`` metric per changed
container (``replaces_metric``); a target for a container without a metric adds one
(``adds_metric``, Tortoise's 70 %); a target proposed as None removes its metric
(``removes_metric``). Items are written as whole lines at the dash column of the item they
replace or follow, in its indentation step, where only this environment reads the file; else
the whole list goes into the overlay's patch (lists without a merge key are replaced whole by a
strategic merge).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from bot.manifests.comments import KeyPath, Line, carry, place
from bot.manifests.edit_slots import EditPlan, Placement, value_text
from bot.manifests.errors import EditError
from bot.manifests.patch_trees import PlannedText, Splice, as_tree, patch_tree, value_at
from bot.manifests.sources import Obj, Path_
from bot.manifests.textedit import (
    TextEdit,
    after_line,
    indent_style,
    item_lines,
    kept_block,
    last_end,
)
from bot.manifests.workloads import Entry, Slot
from bot.manifests.yamldoc import YamlFile, YMap
from bot.model import FieldChange, FieldId, Note

METRIC_KEYS = {"Resource": "resource", "ContainerResource": "containerResource"}
"""HPA metric ``type`` -> the key of its body."""


def replaces_metric(entry: Entry, change: FieldChange) -> bool:
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


def adds_metric(entry: Entry, change: FieldChange) -> bool:
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


def removes_metric(change: FieldChange) -> bool:
    """A per-container target proposed as None: its ``ContainerResource`` metric goes."""
    return change.field.is_hpa_target and change.container is not None and change.proposed is None


def container_metric(resource: str, container: str, text: str) -> dict[str, Any]:
    """One ``ContainerResource`` utilisation metric (``text``: the planned percent)."""
    return {
        "type": "ContainerResource",
        "containerResource": {
            "name": resource,
            "container": container,
            "target": {"type": "Utilization", "averageUtilization": PlannedText(text)},
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
        rendered = item_lines(as_tree(entry), column, step, seq)
        lines.extend(((index, *path) if index else path, text) for path, text in rendered)
    return line_start, end, lines


class MetricPlanner(Placement):
    """Plans the ``spec.metrics`` edits of one HPA (removals, additions, replacements)."""

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
            metrics = value_at(
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
            text, readback = value_text(Slot(obj, (), "percent"), change.proposed, None)
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
        metrics = value_at(obj.data, ("spec", "metrics"))
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
        what: str = "the HPA metrics",
    ) -> None:
        """Write ``items`` in place of (``keep``: after) the metric at ``item_path`` (no items
        and not ``keep``: remove it): a text edit where only this environment reads the item's
        file, else an overlay patch carrying the whole list (``what`` the list, in its note)."""
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
            kept = [copy.deepcopy(value_at(obj.data, item_path))] if keep else []
            splice = Splice((*kept, *items))
            patch_tree(obj.data, [(item_path, splice)])
            plan.patches.append((env.directory, obj, item_path, splice))
            plan.notes.append(
                Note(
                    "overlay-patch",
                    f"{plan.ref}: added a patch in {env.directory} {verb} {what} "
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
