"""Apply field changes to the files that define them, verify, and write all-or-nothing.

For each change the editor finds the node that wins for the workload's environment:

- written in a file no other render reads (raw YAML, the overlay's own patch, a values file of
  this environment; ``renders``): that scalar's text span is replaced (or, for a missing key,
  lines are added under the nearest mapping of such a file);
- written only in a file other renders read (a Kustomize base, which is a render of its own, a
  chart's ``values.yaml``): the value goes into the environment's own file instead: a
  strategic-merge patch in the overlay (``PATCH_FILE``, listed in the overlay's ``patches``) or
  the environment's values file, and a note says so; an environment with no such file (a plain
  directory) skips that field with the reason.

The planned texts are then proven: the repository is copied to a temporary directory with the
new files, rediscovered (Kustomize overlays rendered by ``kubectl kustomize``), and every workload
of every affected environment must read exactly the old values plus the intended changes; every
render that reads an edited file and deploys none of the named environments must render
byte-identically (``renders.changed_renders``). A workload whose changes fail is dropped (listed
in ``EditResult.failed``) and the rest re-planned.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bot.config.repo import RepoConfig
from bot.manifests.discovery import Discovery, discover_index, gc_paused
from bot.manifests.edit_planner import PATCH_FILE, EditPlanner
from bot.manifests.edit_slots import EditPlan, Insert
from bot.manifests.errors import EditError, ManifestError, VerificationError
from bot.manifests.files import RepoFiles, join
from bot.manifests.journal import JournalError
from bot.manifests.kustomize import kustomization_in
from bot.manifests.patch_trees import Splice, merge_tree, patch_tree
from bot.manifests.refusals import object_at, refused_reason
from bot.manifests.renders import changed_renders
from bot.manifests.sources import Inline, Obj, Path_
from bot.manifests.textedit import (
    NewTree,
    TextEdit,
    append_to_seq,
    apply_edits,
    indent_style,
    insert_into_map,
    insert_under_key,
    render_block,
)
from bot.manifests.trigger_edits import cron_triggers
from bot.manifests.workloads import OTHER_METRICS, CheckKey
from bot.manifests.writing import unified_diff, write_atomically
from bot.manifests.yamldoc import YamlFile, YMap, YScalar, YSeq
from bot.model import (
    RESOURCES,
    DeclaredWorkload,
    EditResult,
    FieldChange,
    FieldId,
    FileChange,
    SkippedChange,
    SourceError,
    WorkloadRef,
)

# ------------------------------------------------------------------------- combining

MAX_ROUNDS = 4
"""Plan-verify rounds; each round drops the workloads that failed the previous one."""


def _patch_doc(obj: Obj, tree: NewTree, newline: str) -> str:
    meta: NewTree = {"name": obj.original_name or obj.name}
    if obj.source_namespace:
        meta["namespace"] = obj.source_namespace
    body: NewTree = {"apiVersion": obj.api_version, "kind": obj.kind, "metadata": meta}
    merge_tree(body, tree)
    return render_block(body, 0, 2, 2, newline)


def _combine(disc: Discovery, plans: Sequence[EditPlan]) -> dict[str, bytes]:
    """New bytes of every file the plans change (new files included)."""
    files = disc.files
    edits: dict[str, list[TextEdit]] = {}
    grouped: dict[tuple[str, int], Insert] = {}
    for plan in plans:
        for path, edit in plan.edits:
            edits.setdefault(path, []).append(edit)
        for ins in plan.inserts:
            slot_key = (ins.file, id(ins.anchor))
            if slot_key in grouped:
                merge_tree(grouped[slot_key].tree, ins.tree)
            else:
                grouped[slot_key] = Insert(
                    ins.file, ins.anchor, ins.key, _copy(ins.tree), ins.document, ins.inline
                )
    # inserts at the same offset: the most indented first, so a nested key stays under its parent
    for ins in sorted(grouped.values(), key=_depth, reverse=True):
        file = files.parse(ins.file)
        if ins.inline is not None:
            edits.setdefault(ins.file, []).extend(_inline_insert(ins.inline, ins))
            continue
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
            merge_tree(appends.setdefault(path, {}), _copy(tree))
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
    for path in out:
        _refuse_broken(files, path)
    return out


def _refuse_broken(files: RepoFiles, path: str) -> None:
    """A file with a document that does not parse is read, never edited (``EditError``)."""
    if not files.exists(path):
        return
    problems = files.parse(path).problems
    if problems:
        raise EditError(
            path,
            problems[0].line,
            f"a document of this file does not parse ({problems[0].message}); "
            "the file is read, never edited, until it is fixed",
        )


def _depth(ins: Insert) -> int:
    """Indentation of the keys an insert adds under its anchor."""
    if ins.key is not None:
        return ins.key.column + 1
    if isinstance(ins.anchor, YMap) and ins.anchor.items:
        return ins.anchor.items[0][0].column
    return ins.anchor.column


def _inline_insert(inline: Inline, ins: Insert) -> list[TextEdit]:
    """Keys added inside a YAML string: planned on the string, then moved into the file with
    the block's indentation and the file's line endings."""
    inner = YamlFile(ins.file, b"", inline.inner_text, False, "\n", [])
    step, seq = indent_style(ins.anchor)
    if isinstance(ins.anchor, YSeq):
        planned = append_to_seq(inner, inner.text, ins.anchor, ins.tree, step=step, seq=seq)
    elif isinstance(ins.anchor, YMap):
        planned = insert_into_map(inner, inner.text, ins.anchor, ins.tree, step=step, seq=seq)
    else:  # pragma: no cover - the planner only anchors inline inserts on collections
        raise EditError(ins.file, inline.first_line + ins.anchor.line + 1, "cannot add keys here")
    outer = inline.outer.text
    pad = " " * inline.indent
    out = []
    for edit in planned:
        start, end = inline.to_outer(edit.start), inline.to_outer(edit.end)
        text = edit.text.replace("\n", inline.outer.newline + pad)
        if start == 0 or outer[start - 1] == "\n":  # at the line after the block
            text = pad + text.removesuffix(pad)
        out.append(TextEdit(start, end, text))
    return out


def _copy(tree: NewTree) -> NewTree:
    return copy.deepcopy(tree)


def _add_patches(disc: Discovery, plans: Sequence[EditPlan], out: dict[str, bytes]) -> None:
    leaves: dict[str, dict[int, tuple[Obj, list[tuple[Path_, str | Splice]]]]] = {}
    for plan in plans:
        for directory, obj, value_path, leaf in plan.patches:
            entry = leaves.setdefault(directory, {}).setdefault(id(obj), (obj, []))
            entry[1].append((value_path, leaf))
    per_dir = {
        directory: {key: (obj, patch_tree(obj.data, found)) for key, (obj, found) in docs.items()}
        for directory, docs in leaves.items()
    }
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


def _fingerprint(workload: DeclaredWorkload) -> dict[CheckKey, float | int | None]:
    out: dict[CheckKey, float | int | None] = {(None, FieldId.REPLICAS): workload.replicas}
    for c in workload.containers:
        for values, of in ((c.requests, FieldId.request), (c.limits, FieldId.limit)):
            for resource in RESOURCES:
                out[(c.name, of(resource))] = values.get(resource)
    if workload.hpa is not None:
        out[(None, FieldId.HPA_MIN_REPLICAS)] = workload.hpa.min_replicas
        out[(None, FieldId.HPA_MAX_REPLICAS)] = workload.hpa.max_replicas
        out[(None, OTHER_METRICS)] = workload.hpa.other_metrics
        if workload.hpa.keda is not None:  # its cron triggers (change keda.triggers)
            out[(None, FieldId.KEDA_TRIGGERS)] = cron_triggers(workload.hpa.keda)
        for t in workload.hpa.targets:
            out[(t.container, FieldId.hpa_target(t.resource))] = t.utilization_percent
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
    root: Path,
    config: RepoConfig,
    disc: Discovery,
    plans: Sequence[EditPlan],
    new: dict[str, bytes],
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
        for directory, *_ in plan.patches:
            files.add(join(directory, PATCH_FILE))
            files.add(kustomization_in(disc.files, directory) or directory)
        touched[plan.ref] = files
    affected = {p.ref.environment for p in plans}
    for path in new:
        affected |= disc.file_users.get(path, set())
    named = {id(e): e for e in (disc.entries[p.ref].environment for p in plans)}
    deployed = [(e.kind, e.directory) for e in named.values()]
    with tempfile.TemporaryDirectory(prefix="tortoise-bot-verify-") as tmp:
        copy_root = Path(tmp) / "repo"
        _materialize(disc.files.root, new, copy_root)
        copied = RepoFiles(copy_root, config.paths, check=disc.files.check)
        copied.adopt(disc.files, set(new))
        after = discover_index(copy_root, config, files=copied, only=affected)
        others = {r.directory: r for r in disc.renders.others(new, deployed)}
        others.update({r.directory: r for r in after.renders.others(new, deployed)})
        changed = changed_renders(disc.files.root, copy_root, others.values(), set(new))
    failures: dict[WorkloadRef, str] = {}

    def blame(path_or_env: str, message: str, files: frozenset[str] = frozenset()) -> None:
        hit = [
            ref
            for ref, edited in touched.items()
            if path_or_env in edited or ref.environment == path_or_env or edited & files
        ]
        for ref in hit or list(by_ref):
            failures.setdefault(ref, message)

    names = ", ".join(sorted(repr(e.name) for e in named.values()))
    for render, why in changed:
        blame(
            "",
            f"the edit would change the render of {render.name} ({render.why}), which does not "
            f"deploy environment {names}: {why}",
            render.files,
        )

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


@gc_paused()
def apply_discovered_changes(
    root: Path,
    disc: Discovery,
    changes: Sequence[FieldChange],
    config: RepoConfig,
    *,
    write: bool,
) -> EditResult:
    """``bot.manifests.apply_changes`` on an existing discovery (the garbage collector paused,
    ``gc_paused``)."""
    grouped: dict[WorkloadRef, list[FieldChange]] = {}
    for change in changes:
        grouped.setdefault(change.ref, []).append(change)
    errors: list[SourceError] = []
    failed: list[WorkloadRef] = []
    planner = EditPlanner(disc)
    plans: list[EditPlan] = []
    for ref, group in grouped.items():
        disc.files.checkpoint(f"editing {ref}")
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
        except ManifestError:
            # find the workloads whose edits cannot be combined alone, drop them, try again
            kept = []
            for plan in plans:
                try:
                    _combine(disc, [plan])
                    kept.append(plan)
                except ManifestError as exc:
                    errors.append(exc.as_source_error())
                    failed.append(plan.ref)
            if len(kept) == len(plans):  # each fine alone, not together: keep none
                errors.append(
                    EditError("", 0, "these changes cannot be written together").as_source_error()
                )
                failed.extend(p.ref for p in plans)
                kept = []
            plans = kept
            continue
        new = {
            p: b for p, b in new.items() if not (disc.files.exists(p) and disc.files.read(p) == b)
        }
        if not new:
            break
        disc.files.checkpoint("verifying the edits")
        failures = _verify(root, config, disc, plans, new)
        if not failures:
            break
        for ref, message in failures.items():
            file, line = object_at(disc, ref)
            errors.append(
                VerificationError(file, line, refused_reason(disc, ref, message)).as_source_error()
            )
            failed.append(ref)
        plans = [p for p in plans if p.ref not in failures]
    else:
        failed.extend(p.ref for p in plans)
        plans, new = [], {}
    changed = tuple(
        FileChange(path, disc.files.parse(path).raw if disc.files.exists(path) else b"", data)
        for path, data in sorted(new.items())
    )
    stale = [
        c.path
        for c in changed
        if (disc.files.root / c.path).exists() != disc.files.exists(c.path)
        or (disc.files.exists(c.path) and (disc.files.root / c.path).read_bytes() != c.old)
    ]
    if stale:  # the checkout moved on since discovery: plan again from a fresh inventory
        errors.extend(
            EditError(
                path, 0, "file changed on disk since discovery; nothing written"
            ).as_source_error()
            for path in stale
        )
        failed.extend(p.ref for p in plans)
        return EditResult((), "", (), tuple(errors), tuple(dict.fromkeys(failed)))
    if write and changed:
        try:
            write_atomically(disc.files.root, changed)
        except JournalError as exc:  # changed on disk meanwhile, or another writer: none written
            errors.append(exc.as_source_error())
            failed.extend(p.ref for p in plans)
            return EditResult((), "", (), tuple(errors), tuple(dict.fromkeys(failed)))
    notes = tuple(dict.fromkeys(n for p in plans for n in p.notes))
    skipped = tuple(SkippedChange(c, reason) for p in plans for c, reason in p.skipped)
    return EditResult(
        changed,
        unified_diff(changed),
        notes,
        tuple(errors),
        tuple(dict.fromkeys(failed)),
        skipped,
    )
