"""Planning: which file and node each field change goes to, and the text to write there.

See ``edit`` for the rules; this module decides, per workload, the scalar replacements, the keys
to add under an existing mapping, the overlay patch entries and the values-file additions. It
writes nothing and renders nothing. Its parts: ``edit_slots`` (which slot a change sets, the
text of a value, the plan), ``patch_trees`` (keys to add, overlay patch bodies) and
``metric_edits`` (the items of an HPA's ``spec.metrics``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from bot.manifests.edit_slots import (
    EditPlan,
    Insert,
    declared_location,
    slot_for,
    value_text,
)
from bot.manifests.errors import EditError, SharedFileError
from bot.manifests.metric_edits import (
    MetricPlanner,
    adds_metric,
    removes_metric,
    replaces_metric,
)
from bot.manifests.patch_trees import patch_tree, tree_for, value_at
from bot.manifests.sources import MERGE_KEYS, Origin
from bot.manifests.textedit import NewTree, TextEdit, delete_key, replace_scalar
from bot.manifests.trigger_edits import plan_cron_triggers
from bot.manifests.workloads import Entry, Slot, SlotKey
from bot.manifests.yamldoc import YamlFile, YMap, YNode, YScalar, YSeq, node_at
from bot.model import FieldChange, FieldId, Note, WorkloadRef

PATCH_FILE = "tortoise-bot-patch.yaml"
"""Strategic-merge patch the editor adds to an overlay when the value lives in a shared base."""
SKIPPED_NOTE = "skipped"
"""Code of the note that says why a change was skipped (its reason is also in
``EditResult.skipped``)."""


class EditPlanner(MetricPlanner):
    """Plans the changes of one workload at a time against one discovery."""

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
            if change.field is FieldId.KEDA_TRIGGERS:
                self._try(plan, [change], plan_cron_triggers, self, entry, change)
                continue
            if removes_metric(change):
                removing.append(change)
                continue
            if replaces_metric(entry, change):
                replacing.setdefault(change.field, []).append(change)
                continue
            if adds_metric(entry, change):
                adding.append(change)
                continue
            key, slot = slot_for(entry, change)
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
        location = declared_location(entry.workload, key)
        writes_null = isinstance(current, YScalar) and current.value is None
        if (
            origin is not None
            and location is None
            and change.proposed is not None
            and not (writes_null and value_at(slot.obj.data, slot.path) is None)
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
            text, readback = value_text(slot, change.proposed, current)
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
        if slot.string and text is not None:
            leaf = f'"{text}"'  # a new value in a patch: a string, as KEDA reads it
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

    def _insert_exclusive(self, plan: EditPlan, entry: Entry, slot: Slot, leaf: str) -> bool:
        """Add the key under the nearest existing node of a file only this environment reads."""
        env = entry.environment.name
        for cut in range(len(slot.path) - 1, -1, -1):
            prefix = slot.path[:cut]
            found = slot.obj.origins_at(prefix) or (
                [slot.obj.root] if not prefix and slot.obj.modelled else []
            )
            candidates = [o for o in reversed(found) if self.exclusive(o, env)]
            for origin in candidates:
                rest = slot.path[cut:]
                node = origin.node
                if isinstance(node, YMap) and not isinstance(rest[0], int):
                    try:
                        tree = tree_for(value_at(slot.obj.data, prefix), rest, leaf)
                    except EditError:  # an item of a list with no merge key: a whole-list patch
                        continue
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
                    wrapper = tree_for(
                        value_at(slot.obj.data, prefix[:-1]), (prefix[-1], *rest), leaf
                    )
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
                    tree = tree_for({}, rest, leaf)
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
            tree = tree_for(slot.obj.data, slot.path, leaf)
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
