"""Apply field changes to the files that define them, verify, and write all-or-nothing.

For each change the editor finds the node that wins for the workload's environment:

- written in a file only this environment reads (raw YAML, the overlay's own patch, a values file
  of this environment, a base no other overlay uses): that scalar's text span is replaced (or,
  for a missing key, lines are added under the nearest mapping of such a file);
- written only in a file other environments share (a Kustomize base, a chart's ``values.yaml``):
  the value goes into the environment's own file instead: a strategic-merge patch in the overlay
  (``PATCH_FILE``, listed in the overlay's ``patches``) or the environment's values file, and a
  note says so.

The planned texts are then proven: the repository is copied to a temporary directory with the
new files, rediscovered (Kustomize overlays rendered by ``kubectl kustomize``), and every workload
of every affected environment must read exactly the old values plus the intended changes. A
workload whose changes fail is dropped (listed in ``EditResult.failed``) and the rest re-planned.
"""

from __future__ import annotations

import copy
import difflib
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.config.repo import RepoConfig
from bot.manifests.discover import RESOURCE_FIELDS, Discovery, Entry, Slot, discover_index
from bot.manifests.errors import EditError, ManifestError, VerificationError
from bot.manifests.files import join
from bot.manifests.kustomize import kustomization_in
from bot.manifests.quantities import (
    bytes_from_quantity,
    cores_from_quantity,
    cpu_style,
    format_cpu,
    format_memory,
    memory_style,
)
from bot.manifests.sources import MERGE_KEYS, Obj, Origin, Path_
from bot.manifests.textedit import (
    NewTree,
    TextEdit,
    append_to_seq,
    apply_edits,
    delete_key,
    indent_style,
    insert_into_map,
    insert_under_key,
    render_block,
    replace_scalar,
)
from bot.manifests.yamldoc import YamlFile, YMap, YNode, YScalar, YSeq, node_at
from bot.model import (
    DeclaredWorkload,
    EditResult,
    FieldChange,
    FileChange,
    Inventory,
    Note,
    SourceError,
    WorkloadRef,
)

PATCH_FILE = "tortoise-bot-patch.yaml"
"""Strategic-merge patch the editor adds to an overlay when the value lives in a shared base."""
MAX_ROUNDS = 4
"""Plan-verify rounds; each round drops the workloads that failed the previous one."""
FIELDS = (
    *RESOURCE_FIELDS,
    "replicas",
    "hpa.minReplicas",
    "hpa.maxReplicas",
    "hpa.target.cpu",
    "hpa.target.memory",
)
"""``FieldChange.field`` names the editor accepts."""


# ------------------------------------------------------------------------------ planning


@dataclass(eq=False, slots=True)
class _Insert:
    file: str
    anchor: YNode
    key: YScalar | None
    tree: NewTree
    document: int
    inline: bool


@dataclass(eq=False, slots=True)
class _Plan:
    """Everything one workload's changes need."""

    ref: WorkloadRef
    edits: list[tuple[str, TextEdit]] = field(default_factory=list)
    inserts: list[_Insert] = field(default_factory=list)
    patches: list[tuple[str, Obj, NewTree]] = field(default_factory=list)
    """(overlay directory, object, tree) for objects the overlay patch file does not hold yet."""
    appends: list[tuple[str, NewTree]] = field(default_factory=list)
    """(values file, tree) for an environment values file with no mapping to insert into."""
    notes: list[Note] = field(default_factory=list)
    expected: dict[tuple[str | None, str], float | int | None] = field(default_factory=dict)


def _slot_for(entry: Entry, change: FieldChange) -> tuple[tuple[str | None, str], Slot]:
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
        key: tuple[str | None, str] = (change.container, name)
    elif name.startswith("hpa.target."):
        key = (change.container, name) if (change.container, name) in entry.slots else (None, name)
    else:
        key = (None, name)
    if name.startswith("hpa.") and entry.workload.hpa is None:
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


def _merge(into: NewTree, tree: NewTree) -> None:
    for key, value in tree.items():
        current = into.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            _merge(current, value)
        elif isinstance(value, list) and isinstance(current, list):
            for item in value:
                same = next(
                    (c for c in current if next(iter(c.items())) == next(iter(item.items()))), None
                )
                if same is None:
                    current.append(item)
                else:
                    _merge(same, item)
        else:
            into[key] = value


class _Planner:
    def __init__(self, disc: Discovery) -> None:
        self.disc = disc

    def exclusive(self, origin: Origin, env: str) -> bool:
        return self.disc.exclusive(origin.file, env)

    def plan(self, ref: WorkloadRef, changes: Sequence[FieldChange]) -> _Plan:
        entry = self.disc.entries.get(ref)
        if entry is None:
            raise EditError("", 0, f"{ref} is not declared in this repository")
        plan = _Plan(ref)
        for change in changes:
            key, slot = _slot_for(entry, change)
            self.change(plan, entry, key, slot, change)
        return plan

    def change(
        self,
        plan: _Plan,
        entry: Entry,
        key: tuple[str | None, str],
        slot: Slot,
        change: FieldChange,
    ) -> None:
        env = entry.environment
        origin = slot.obj.origin(slot.path)
        current = origin.node if origin is not None else None
        location = self._location(entry.workload, key)
        if origin is not None and location is None and change.proposed is not None:
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
                        f"shared {origin.file}",
                    )
                )
            return
        self._own_file(plan, entry, slot, leaf, origin)

    def _location(self, workload: DeclaredWorkload, key: tuple[str | None, str]) -> object | None:
        container, name = key
        if name in RESOURCE_FIELDS:
            found = workload.container(container or "")
            return found.locations.get(name) if found else None
        if name == "replicas":
            return workload.locations.get("replicas")
        if workload.hpa is None:
            return None
        short = name.removeprefix("hpa.")
        if short.startswith("target.") and container:
            short = f"{short}.{container}"
        return workload.hpa.locations.get(short)

    def _insert_exclusive(self, plan: _Plan, entry: Entry, slot: Slot, leaf: str) -> bool:
        """Add the key under the nearest existing node of a file only this environment reads."""
        env = entry.environment.name
        for cut in range(len(slot.path) - 1, -1, -1):
            prefix = slot.path[:cut]
            candidates = [
                o
                for o in reversed(slot.obj.origins.get(prefix, []) if prefix else [slot.obj.root])
                if self.exclusive(o, env) and o.inline is None
            ]
            for origin in candidates:
                rest = slot.path[cut:]
                node = origin.node
                if isinstance(node, YMap) and not isinstance(rest[0], int):
                    tree = _tree(_get(slot.obj.data, prefix), rest, leaf)
                    assert isinstance(tree, dict)
                    plan.inserts.append(
                        _Insert(origin.file, node, None, tree, origin.document, False)
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
                        _Insert(origin.file, node, None, items[0], origin.document, False)
                    )
                    return True
                if (
                    isinstance(node, YScalar)
                    and node.value is None
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
                    plan.inserts.append(
                        _Insert(origin.file, node, key, tree, origin.document, False)
                    )
                    return True
        return False

    def _own_file(
        self, plan: _Plan, entry: Entry, slot: Slot, leaf: str, origin: Origin | None
    ) -> None:
        env = entry.environment
        shared = origin.file if origin is not None else "a shared file"
        if env.kind == "kustomize" and env.directory is not None:
            if slot.obj.root.inline is not None or not slot.obj.name:
                raise EditError(
                    slot.obj.root.file, slot.obj.root.line, f"{plan.ref}: cannot patch this object"
                )
            tree = _tree(slot.obj.data, slot.path, leaf)
            assert isinstance(tree, dict)
            plan.patches.append((env.directory, slot.obj, tree))
            plan.notes.append(
                Note(
                    "overlay-patch",
                    f"{plan.ref}: added a patch in {env.directory} instead of changing the shared "
                    f"base {shared}",
                )
            )
            return
        if env.kind == "helm" and env.values_file is not None:
            tree = _tree(slot.obj.data, slot.path, leaf)
            assert isinstance(tree, dict)
            file = self.disc.files.parse(env.values_file)
            root = file.documents[0].root if file.documents else None
            self._insert_tree(plan, file, root, tree)
            plan.notes.append(
                Note(
                    "values-file",
                    f"{plan.ref}: set in {env.values_file} instead of changing the shared {shared}",
                )
            )
            return
        where = origin or slot.obj.root
        raise EditError(
            where.file,
            where.line,
            f"{plan.ref}: no file of environment {env.name!r} can hold this value",
        )

    def _insert_tree(self, plan: _Plan, file: YamlFile, root: YNode | None, tree: NewTree) -> None:
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
                plan.inserts.append(_Insert(file.path, child, knode, sub, 0, False))
                return
            node, tree = child, sub
        if isinstance(node, YMap):
            if tree.keys() & {k.value for k, _ in node.items}:
                raise EditError(
                    file.path, node.line + 1, "this values file already sets a conflicting key"
                )
            plan.inserts.append(_Insert(file.path, node, None, tree, 0, False))
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


# ------------------------------------------------------------------------- combining


def _patch_doc(obj: Obj, tree: NewTree, newline: str) -> str:
    meta: NewTree = {"name": obj.original_name or obj.name}
    if obj.source_namespace:
        meta["namespace"] = obj.source_namespace
    body: NewTree = {"apiVersion": obj.api_version, "kind": obj.kind, "metadata": meta}
    _merge(body, tree)
    return render_block(body, 0, 2, 2, newline)


def _combine(disc: Discovery, plans: Sequence[_Plan]) -> dict[str, bytes]:
    """New bytes of every file the plans change (new files included)."""
    files = disc.files
    edits: dict[str, list[TextEdit]] = {}
    grouped: dict[tuple[str, int], _Insert] = {}
    for plan in plans:
        for path, edit in plan.edits:
            edits.setdefault(path, []).append(edit)
        for ins in plan.inserts:
            slot_key = (ins.file, id(ins.anchor))
            if slot_key in grouped:
                _merge(grouped[slot_key].tree, ins.tree)
            else:
                grouped[slot_key] = _Insert(
                    ins.file, ins.anchor, ins.key, _copy(ins.tree), ins.document, ins.inline
                )
    for ins in grouped.values():
        file = files.parse(ins.file)
        step, seq = indent_style(file.documents[ins.document].root)
        if ins.key is not None and isinstance(ins.anchor, YScalar):
            new = insert_under_key(
                file, file.text, ins.key, ins.anchor, ins.tree, step=step, seq=seq
            )
        elif isinstance(ins.anchor, YSeq):
            new = append_to_seq(file, file.text, ins.anchor, ins.tree, step=step, seq=seq)
        elif isinstance(ins.anchor, YMap):
            new = insert_into_map(file, file.text, ins.anchor, ins.tree, step=step, seq=seq)
        else:  # pragma: no cover
            raise EditError(ins.file, ins.anchor.line + 1, "cannot add keys here")
        edits.setdefault(ins.file, []).extend(new)
    appends: dict[str, NewTree] = {}
    for plan in plans:
        for path, tree in plan.appends:
            _merge(appends.setdefault(path, {}), _copy(tree))
    for path, tree in appends.items():
        file = files.parse(path)
        at = len(file.text)
        lead = "" if not file.text or file.text.endswith("\n") else file.newline
        edits.setdefault(path, []).append(
            TextEdit(at, at, lead + render_block(tree, 0, 2, 0, file.newline))
        )
    out: dict[str, bytes] = {}
    for path, file_edits in edits.items():
        file = files.parse(path)
        out[path] = file.encode(apply_edits(path, file.text, file_edits))
    _add_patches(disc, plans, out)
    return out


def _copy(tree: NewTree) -> NewTree:
    return copy.deepcopy(tree)


def _add_patches(disc: Discovery, plans: Sequence[_Plan], out: dict[str, bytes]) -> None:
    per_dir: dict[str, dict[int, tuple[Obj, NewTree]]] = {}
    for plan in plans:
        for directory, obj, tree in plan.patches:
            docs = per_dir.setdefault(directory, {})
            if id(obj) in docs:
                _merge(docs[id(obj)][1], _copy(tree))
            else:
                docs[id(obj)] = (obj, _copy(tree))
    files = disc.files
    for directory, docs in per_dir.items():
        path = join(directory, PATCH_FILE)
        kpath = kustomization_in(files, directory)
        if kpath is None:  # pragma: no cover - overlays have one
            raise EditError(directory, 0, "overlay without kustomization")
        if path in out:
            existing = out[path].decode("utf-8")
        elif files.exists(path):
            existing = files.parse(path).text
        else:
            existing = ""
        kfile = files.parse(kpath)
        newline = kfile.newline
        chunks = [existing]
        for obj, tree in docs.values():
            if chunks[-1] and not chunks[-1].endswith("\n"):
                chunks.append(newline)
            if "".join(chunks):
                chunks.append(f"---{newline}")
            chunks.append(_patch_doc(obj, tree, newline))
        out[path] = "".join(chunks).encode("utf-8")
        if not existing:
            out[kpath] = kfile.encode(_reference_patch(kfile, out.get(kpath)))


def _reference_patch(kfile: YamlFile, current: bytes | None) -> str:
    """The kustomization text with ``- path: PATCH_FILE`` added to ``patches``."""
    if current is not None:  # pragma: no cover - the kustomization is never edited twice
        raise EditError(kfile.path, 0, "kustomization changed twice")
    root = kfile.documents[0].root
    assert isinstance(root, YMap)
    step, seq = indent_style(root)
    patches = root.get("patches")
    item: NewTree = {"path": PATCH_FILE}
    if isinstance(patches, YSeq) and patches.items and not patches.flow:
        edits = append_to_seq(kfile, kfile.text, patches, item, step=step, seq=seq)
    elif patches is None:
        edits = insert_into_map(kfile, kfile.text, root, {"patches": [item]}, step=step, seq=seq)
    else:
        raise EditError(kfile.path, patches.line + 1, "cannot add to this `patches` list")
    return apply_edits(kfile.path, kfile.text, edits)


# ---------------------------------------------------------------------- verification


def _fingerprint(workload: DeclaredWorkload) -> dict[tuple[str | None, str], float | int | None]:
    out: dict[tuple[str | None, str], float | int | None] = {(None, "replicas"): workload.replicas}
    for c in workload.containers:
        for fld in RESOURCE_FIELDS:
            group, resource = fld.split(".")
            out[(c.name, fld)] = (c.requests if group == "requests" else c.limits).get(resource)  # type: ignore[arg-type]
    if workload.hpa is not None:
        out[(None, "hpa.minReplicas")] = workload.hpa.min_replicas
        out[(None, "hpa.maxReplicas")] = workload.hpa.max_replicas
        for t in workload.hpa.targets:
            out[(t.container, f"hpa.target.{t.resource}")] = t.utilization_percent
    return out


def _close(a: float | int | None, b: float | int | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a)))


def _materialize(root: Path, new: dict[str, bytes], into: Path) -> None:
    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(
        root,
        into,
        symlinks=True,
        ignore=shutil.ignore_patterns(".git"),
        copy_function=link,
        dirs_exist_ok=True,
    )
    for path, data in new.items():
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists() or target.is_symlink():
            target.unlink()
        target.write_bytes(data)


def _verify(
    root: Path, config: RepoConfig, disc: Discovery, plans: Sequence[_Plan], new: dict[str, bytes]
) -> dict[WorkloadRef, str]:
    """Failures by workload: re-discover a copy with the new files and compare every value."""
    by_ref = {p.ref: p for p in plans}
    touched: dict[WorkloadRef, set[str]] = {}
    for plan in plans:
        files = (
            {p for p, _ in plan.edits}
            | {i.file for i in plan.inserts}
            | {p for p, _ in plan.appends}
        )
        for directory, _, _ in plan.patches:
            files.add(join(directory, PATCH_FILE))
            files.add(kustomization_in(disc.files, directory) or directory)
        touched[plan.ref] = files
    affected = {p.ref.environment for p in plans}
    for path in new:
        affected |= disc.file_users.get(path, set())
    with tempfile.TemporaryDirectory(prefix="tortoise-bot-verify-") as tmp:
        copy_root = Path(tmp) / "repo"
        _materialize(disc.files.root, new, copy_root)
        after = discover_index(copy_root, config, only=affected)
    failures: dict[WorkloadRef, str] = {}

    def blame(path_or_env: str, message: str) -> None:
        hit = [
            ref
            for ref, files in touched.items()
            if path_or_env in files or ref.environment == path_or_env
        ]
        for ref in hit or list(by_ref):
            failures.setdefault(ref, message)

    old_errors = set(disc.inventory.errors)
    for error in after.inventory.errors:
        if error not in old_errors:
            blame(
                error.file,
                f"the edited files do not check: {error.file}:{error.line}: {error.message}",
            )
    for ref, entry in disc.entries.items():
        if ref.environment not in affected:
            continue
        expected = _fingerprint(entry.workload)
        own = by_ref.get(ref)
        if own is not None:
            expected.update(own.expected)
        now = after.entries.get(ref)
        if now is None:
            blame(ref.environment, f"{ref} is no longer declared after the edit")
            continue
        got = _fingerprint(now.workload)
        for key in expected.keys() | got.keys():
            if not _close(expected.get(key), got.get(key)):
                container, name = key
                what = f"{name}{' of ' + container if container else ''}"
                message = f"{ref}: {what} reads {got.get(key)!r} after the edit, expected {expected.get(key)!r}"
                if own is not None:
                    failures.setdefault(ref, message)
                else:
                    for other, files in touched.items():
                        if files & set(now.workload.files):
                            failures.setdefault(other, message)
    return failures


# ------------------------------------------------------------------------------ writing


def write_atomically(root: Path, files: Sequence[FileChange]) -> None:
    """Write every file through a temporary file + fsync + rename; restore all on failure."""
    staged: list[tuple[Path, Path]] = []
    try:
        for change in files:
            target = root / change.path
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(
                prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
            )
            with os.fdopen(fd, "wb") as handle:
                handle.write(change.new)
                handle.flush()
                os.fsync(handle.fileno())
            if target.exists():
                shutil.copymode(target, tmp_name)
            staged.append((Path(tmp_name), target))
    except OSError:
        for staged_tmp, _ in staged:
            staged_tmp.unlink(missing_ok=True)
        raise
    done: list[FileChange] = []
    try:
        for (staged_tmp, target), change in zip(staged, files, strict=True):
            os.replace(staged_tmp, target)
            done.append(change)
    except OSError:
        for change in done:
            target = root / change.path
            if change.old or target.exists():
                target.write_bytes(change.old)
        for staged_tmp, _ in staged:
            staged_tmp.unlink(missing_ok=True)
        raise


def unified_diff(files: Sequence[FileChange]) -> str:
    """The unified diff of the changed files, ``a/`` and ``b/`` paths relative to the root."""
    out: list[str] = []
    for change in files:
        old = change.old.decode("utf-8").removeprefix("\ufeff")
        new = change.new.decode("utf-8").removeprefix("\ufeff")
        lines = difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{change.path}" if change.old else "/dev/null",
            tofile=f"b/{change.path}",
        )
        for line in lines:
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def apply_changes_with(
    root: Path,
    disc: Discovery,
    changes: Sequence[FieldChange],
    config: RepoConfig,
    *,
    write: bool,
) -> EditResult:
    """``apply_changes`` on an existing discovery."""
    grouped: dict[WorkloadRef, list[FieldChange]] = {}
    for change in changes:
        grouped.setdefault(change.ref, []).append(change)
    errors: list[SourceError] = []
    failed: list[WorkloadRef] = []
    planner = _Planner(disc)
    plans: list[_Plan] = []
    for ref, group in grouped.items():
        try:
            plans.append(planner.plan(ref, group))
        except ManifestError as exc:
            errors.append(exc.as_source_error())
            failed.append(ref)
    new: dict[str, bytes] = {}
    for _ in range(MAX_ROUNDS):
        if not plans:
            new = {}
            break
        try:
            new = _combine(disc, plans)
        except ManifestError as exc:
            errors.append(exc.as_source_error())
            failed.extend(p.ref for p in plans)
            plans, new = [], {}
            break
        new = {
            p: b for p, b in new.items() if not (disc.files.exists(p) and disc.files.read(p) == b)
        }
        if not new:
            break
        failures = _verify(root, config, disc, plans, new)
        if not failures:
            break
        for ref, message in failures.items():
            errors.append(VerificationError(_first_file(disc, ref), 0, message).as_source_error())
            failed.append(ref)
        plans = [p for p in plans if p.ref not in failures]
    else:
        failed.extend(p.ref for p in plans)
        plans, new = [], {}
    changed = tuple(
        FileChange(path, disc.files.read(path) if disc.files.exists(path) else b"", data)
        for path, data in sorted(new.items())
    )
    if write and changed:
        write_atomically(disc.files.root, changed)
    notes = tuple(dict.fromkeys(n for p in plans for n in p.notes))
    return EditResult(
        changed, unified_diff(changed), notes, tuple(errors), tuple(dict.fromkeys(failed))
    )


def _first_file(disc: Discovery, ref: WorkloadRef) -> str:
    entry = disc.entries.get(ref)
    return entry.workload.files[0] if entry and entry.workload.files else ""


def apply_inventory_changes(
    root: Path,
    inventory: Inventory,
    changes: Sequence[FieldChange],
    config: RepoConfig,
    disc: Discovery | None,
    *,
    write: bool,
) -> EditResult:
    """Entry point used by ``bot.manifests.apply_changes``."""
    if disc is None or disc.inventory is not inventory:
        disc = discover_index(root, config)
    return apply_changes_with(root, disc, changes, config, write=write)
