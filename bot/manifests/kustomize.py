"""Kustomize: find overlays, replay each build for value origins, render it with kubectl.

Supported in the replay (``Kustomizer.build``): ``resources`` (files and directories),
``components``, ``patches`` (files or inline, strategic-merge or JSON 6902, ``target:``
selectors), legacy ``patchesStrategicMerge`` and ``patchesJson6902``, ``namespace``,
``namePrefix``/``nameSuffix`` and ``replicas``, in Kustomize's builtin order
(``api/internal/target/kusttarget_configplugin.go``). Everything else (generators, images,
labels, ``transformers:``) is left to ``kubectl kustomize``, whose output is the truth for every
value (``render``); only origins that agree with it become editable locations.

Overlays are the kustomization directories no other kustomization includes (Components are
never overlays), each named by its repository-relative path, unless the config lists them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from bot.manifests.errors import KustomizeError, ManifestError
from bot.manifests.files import RepoFiles, join
from bot.manifests.kinds import strategic_merge
from bot.manifests.patching import (
    apply_json6902,
    identity_of,
    merge_map,
    restore_identity,
    set_value,
)
from bot.manifests.selectors import target_pattern
from bot.manifests.sources import (
    Inline,
    Obj,
    Origin,
    PatchKey,
    objects_in,
    objects_in_document,
    parse_inline,
    patch_key,
)
from bot.manifests.yamldoc import YamlFile, YDocument, YMap, YNode, YScalar, YSeq

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
"""File names Kustomize looks for in a directory, in its order."""
CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "PersistentVolume",
        "StorageClass",
        "PriorityClass",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "APIService",
        "IngressClass",
    }
)
"""Kinds the ``namespace:`` transformer leaves alone."""
SCALABLE = frozenset({"Deployment", "StatefulSet", "ReplicaSet", "ReplicationController"})
"""Kinds the ``replicas:`` transformer sets."""
_PATTERN_FIELDS = frozenset({"group", "version", "kind", "name", "namespace"})
"""Patch-target fields Kustomize reads as regular expressions (the others are label selectors)."""


@dataclass(eq=False, slots=True)
class Build:
    """The replayed result of one kustomization: objects and every file read."""

    objects: list[Obj] = field(default_factory=list)
    files: set[str] = field(default_factory=set)
    spread: set[PatchKey] = field(default_factory=set)
    """Patches whose ``target:`` selected more than one object (``Environment.spread``)."""


def kustomization_in(files: RepoFiles, directory: str) -> str | None:
    """The kustomization file of a repository directory, or None."""
    for name in KUSTOMIZATION_FILES:
        path = f"{directory}/{name}" if directory else name
        if files.exists(path):
            return path
    return None


def _strings(node: YNode | None) -> list[YScalar]:
    if not isinstance(node, YSeq):
        return []
    return [
        item for item in node.items if isinstance(item, YScalar) and isinstance(item.value, str)
    ]


def _is_remote(ref: str) -> bool:
    return "://" in ref or ref.startswith(("github.com/", "git@", "gitlab.com/", "bitbucket.org/"))


class Kustomizer:
    """Replays kustomizations read through one ``RepoFiles``."""

    def __init__(self, files: RepoFiles) -> None:
        self.files = files

    def load(self, directory: str) -> tuple[str, YamlFile, YMap]:
        """(path, parsed file, root mapping) of a directory's kustomization."""
        path = kustomization_in(self.files, directory)
        if path is None:
            raise KustomizeError(directory or ".", 0, "no kustomization.yaml in this directory")
        file = self.files.parse(path)
        root = file.documents[0].root if file.documents else None
        if not isinstance(root, YMap):
            raise KustomizeError(path, 1, "a kustomization must be a mapping")
        return path, file, root

    def kind(self, directory: str) -> str:
        """``Kustomization`` or ``Component``."""
        _, _, root = self.load(directory)
        kind = root.get("kind")
        return str(kind.value) if isinstance(kind, YScalar) else "Kustomization"

    def references(self, directory: str) -> tuple[list[str], list[str]]:
        """(directories, files) a kustomization refers to (resources, components, patches)."""
        path, _, root = self.load(directory)
        dirs, files = [], []
        for key in ("resources", "bases", "components"):
            for item in _strings(root.get(key)):
                if _is_remote(item.value):
                    continue
                ref = join(directory, item.value)
                if self.files.is_dir(ref):
                    dirs.append(ref)
                else:
                    files.append(ref)
        for item in _strings(root.get("patchesStrategicMerge")):
            if "\n" not in item.value:
                files.append(join(directory, item.value))
        for key in ("patches", "patchesJson6902"):
            seq = root.get(key)
            if isinstance(seq, YSeq):
                for entry in seq.items:
                    patch = entry.get("path") if isinstance(entry, YMap) else None
                    if isinstance(patch, YScalar) and isinstance(patch.value, str):
                        files.append(join(directory, patch.value))
        return dirs, [path, *files]

    def build(self, directory: str, stack: tuple[str, ...] = ()) -> Build:
        """Replay the kustomization in ``directory``; raises ``ManifestError``."""
        if directory in stack:
            raise KustomizeError(directory, 0, "kustomizations include each other in a cycle")
        path, file, root = self.load(directory)
        out = Build(files={path})
        for key in ("resources", "bases"):
            for item in _strings(root.get(key)):
                self._resource(directory, path, item, out, (*stack, directory))
        for item in _strings(root.get("components")):
            ref = join(directory, item.value)
            if _is_remote(item.value) or not self.files.is_dir(ref):
                raise KustomizeError(path, item.line + 1, f"component {item.value!r} not found")
            self._component(ref, out, (*stack, directory))
        self._transform(directory, path, file, root, out)
        for obj in out.objects:
            obj.files.add(path)
        return out

    def _resource(
        self, directory: str, path: str, item: YScalar, out: Build, stack: tuple[str, ...]
    ) -> None:
        ref = str(item.value)
        if _is_remote(ref):
            raise KustomizeError(path, item.line + 1, f"remote resource {ref!r} is not read")
        target = join(directory, ref)
        if target.startswith("../"):
            raise KustomizeError(path, item.line + 1, f"{ref!r} leads outside the repository")
        if self.files.is_dir(target) and kustomization_in(self.files, target):
            sub = self.build(target, stack)
            out.objects.extend(sub.objects)
            out.files |= sub.files
        elif self.files.exists(target):
            out.files.add(target)
            out.objects.extend(objects_in(self.files.parse(target)))
        else:
            raise KustomizeError(path, item.line + 1, f"resource {ref!r} not found")

    def _component(self, directory: str, out: Build, stack: tuple[str, ...]) -> None:
        path, file, root = self.load(directory)
        out.files.add(path)
        for key in ("resources", "bases"):
            for item in _strings(root.get(key)):
                self._resource(directory, path, item, out, (*stack, directory))
        for item in _strings(root.get("components")):
            self._component(join(directory, item.value), out, (*stack, directory))
        self._transform(directory, path, file, root, out)

    # ------------------------------------------------------------------ transformers

    def _transform(self, directory: str, path: str, file: YamlFile, root: YMap, out: Build) -> None:
        for item in _strings(root.get("patchesStrategicMerge")):
            if "\n" in item.value:
                docs, inline = parse_inline(file, item, "an inline patch")
                self._smp_docs(path, docs, inline, None, out)
            else:
                patch = join(directory, item.value)
                out.files.add(patch)
                self._smp_docs(patch, self.files.parse(patch).documents, None, None, out)
        patches = root.get("patches")
        if isinstance(patches, YSeq):
            for index, entry in enumerate(patches.items):
                self.files.checkpoint(f"applying {path}'s patch {index + 1}")
                if isinstance(entry, YMap):
                    self._patch(
                        directory, path, file, entry_path=("patches", index), entry=entry, out=out
                    )
        self._names(root, path, out)
        legacy = root.get("patchesJson6902")
        if isinstance(legacy, YSeq):
            for index, entry in enumerate(legacy.items):
                if isinstance(entry, YMap):
                    self._patch(
                        directory,
                        path,
                        file,
                        entry_path=("patchesJson6902", index),
                        entry=entry,
                        out=out,
                    )
        replicas = root.get("replicas")
        if isinstance(replicas, YSeq):
            for index, entry in enumerate(replicas.items):
                name, count = (
                    (entry.get("name"), entry.get("count"))
                    if isinstance(entry, YMap)
                    else (None, None)
                )
                if not isinstance(name, YScalar) or not isinstance(count, YScalar):
                    continue
                where = Origin(path, 0, ("replicas", index, "count"), count)
                for obj in out.objects:
                    if obj.kind in SCALABLE and name.value in (obj.name, obj.original_name):
                        set_value(obj, ("spec", "replicas"), count, where)
                        obj.files.add(path)

    def _names(self, root: YMap, path: str, out: Build) -> None:
        namespace = root.get("namespace")
        if isinstance(namespace, YScalar) and isinstance(namespace.value, str):
            where = Origin(path, 0, ("namespace",), namespace)
            for obj in out.objects:
                if obj.kind not in CLUSTER_SCOPED:
                    set_value(obj, ("metadata", "namespace"), namespace, where)
        prefix, suffix = root.get("namePrefix"), root.get("nameSuffix")
        pre = str(prefix.value) if isinstance(prefix, YScalar) and prefix.value else ""
        suf = str(suffix.value) if isinstance(suffix, YScalar) and suffix.value else ""
        if pre or suf:
            for obj in out.objects:
                if obj.kind not in ("Namespace", "CustomResourceDefinition"):
                    obj.data.setdefault("metadata", {})["name"] = pre + obj.name + suf

    def _patch(
        self,
        directory: str,
        path: str,
        file: YamlFile,
        *,
        entry_path: tuple[Any, ...],
        entry: YMap,
        out: Build,
    ) -> None:
        target = entry.get("target")
        ref, inline_text = entry.get("path"), entry.get("patch")
        if isinstance(ref, YScalar) and isinstance(ref.value, str):
            patch_path = join(directory, ref.value)
            out.files.add(patch_path)
            docs: list[YDocument] = self.files.parse(patch_path).documents
            origin_file, inline = patch_path, None
        elif inline_text is not None:
            docs, inline = parse_inline(file, inline_text, "an inline patch")
            origin_file = path
        else:
            raise KustomizeError(path, entry.line + 1, "a patch needs `path` or `patch`")
        selected = self._select(path, target, out.objects) if isinstance(target, YMap) else None
        if docs and isinstance(docs[0].root, YSeq):  # JSON 6902
            if selected is None:
                raise KustomizeError(path, entry.line + 1, "a JSON 6902 patch needs a `target`")
            prefix = (*entry_path, "patch") if inline is not None else ()
            if len(selected) > 1:
                out.spread.add(patch_key(origin_file, 0, inline))
            for obj in selected:
                apply_json6902(
                    obj, docs[0].root, Origin(origin_file, 0, prefix, docs[0].root, inline)
                )
                obj.files.add(origin_file)
            return
        self._smp_docs(origin_file, docs, inline, selected, out)

    def _smp_docs(
        self,
        file: str,
        docs: list[YDocument],
        inline: Inline | None,
        selected: list[Obj] | None,
        out: Build,
    ) -> None:
        index: dict[tuple[str, str], list[Obj]] = {}
        if selected is None:
            for o in out.objects:
                index.setdefault((o.kind, o.name), []).append(o)
                if o.original_name != o.name:
                    index.setdefault((o.kind, o.original_name), []).append(o)
        for doc in docs:
            root = doc.root
            if not isinstance(root, YMap):
                continue
            where = Origin(file, doc.index, (), root, inline)
            if selected is not None:
                targets = selected
                if len(selected) > 1:
                    out.spread.add(patch_key(file, doc.index, inline))
            else:
                patch_objs = objects_in_document(file, doc, inline)
                if not patch_objs:
                    continue
                probe = patch_objs[0]
                targets = [
                    o
                    for o in index.get((probe.kind, probe.name), [])
                    if probe.namespace is None or probe.namespace == o.namespace
                ]
            directive = root.get("$patch")
            if isinstance(directive, YScalar) and directive.value == "delete":
                out.objects = [o for o in out.objects if o not in targets]
                continue
            for obj in targets:
                identity = identity_of(obj) if selected is not None else None
                merge_map(obj, obj.data, (), root, where, merge_lists=strategic_merge(obj.data))
                if identity is not None:  # a `target:` keeps each object's own identity
                    restore_identity(obj, identity)
                obj.files.add(file)

    def _select(self, path: str, target: YMap, objects: list[Obj]) -> list[Obj]:
        """The objects a patch ``target`` selects: group, version, kind, name and namespace are
        anchored RE2 patterns, as in Kustomize (``bot/manifests/selectors.py``)."""
        want = {k.value: v.value for k, v in target.items if isinstance(v, YScalar)}
        patterns = {
            str(k.value): target_pattern(str(v.value), path, v.line + 1, str(k.value))
            for k, v in target.items
            if k.value in _PATTERN_FIELDS and isinstance(v, YScalar) and v.value not in (None, "")
        }
        out = []
        for obj in objects:
            group, _, version = obj.api_version.rpartition("/")
            values = {
                "group": (group,),
                "version": (version,),
                "kind": (obj.kind,),
                "name": (obj.name, obj.original_name),
                "namespace": (obj.namespace or "",),
            }
            if not all(any(p.matches(v) for v in values[field]) for field, p in patterns.items()):
                continue
            if not _labels_match(obj, "labels", want.get("labelSelector")):
                continue
            if not _labels_match(obj, "annotations", want.get("annotationSelector")):
                continue
            out.append(obj)
        return out


def _labels_match(obj: Obj, where: str, selector: Any) -> bool:
    if not selector:
        return True
    meta = obj.data.get("metadata") or {}
    labels = meta.get(where) or {}
    for term in str(selector).split(","):
        key, sep, value = term.partition("=")
        key, value = key.strip().rstrip("!"), value.strip()
        if not sep:
            if key not in labels:
                return False
        elif term.strip().find("!=") >= 0:
            if str(labels.get(key)) == value:
                return False
        elif str(labels.get(key)) != value.lstrip("="):
            return False
    return True


def error_line(
    kustomization: YamlFile, error: ManifestError, files: RepoFiles | None = None
) -> int:
    """The line of the kustomization entry a kubectl error message names, else 0.

    An entry is named by its path, or (for a patch) by the ``Kind.../name.`` id of an object
    the patch file declares (``no resource matches strategic merge patch "Deployment.v1.apps/x"``).
    """
    root = kustomization.documents[0].root if kustomization.documents else None
    if not isinstance(root, YMap):
        return 0
    for key in ("resources", "components", "patchesStrategicMerge", "bases"):
        for item in _strings(root.get(key)):
            if item.value and item.value in error.message:
                return item.line + 1
    directory = str(PurePosixPath(kustomization.path).parent).removeprefix(".")
    for key in ("patches", "patchesJson6902", "patchesStrategicMerge"):
        seq = root.get(key)
        if not isinstance(seq, YSeq):
            continue
        for entry in seq.items:
            ref = entry.get("path") if isinstance(entry, YMap) else entry
            if not isinstance(ref, YScalar) or not isinstance(ref.value, str):
                continue
            if ref.value in error.message:
                return ref.line + 1
            if files is not None and _patch_named(files, join(directory, ref.value), error.message):
                return ref.line + 1
    return 0


def _patch_named(files: RepoFiles, path: str, message: str) -> bool:
    try:
        patch = files.parse(path)
    except ManifestError:
        return False
    for doc in patch.documents:
        for obj in objects_in_document(path, doc):
            if f"{obj.kind}." in message and f"/{obj.name}." in message:
                return True
    return False
