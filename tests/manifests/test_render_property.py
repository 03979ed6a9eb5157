"""The editor's promise, checked over the real-world corpus in ``../shared/fixtures/manifests``:
an edit changes only the renders of the environment it names, and every comment survives.

For every environment of the corpus, one edit changes every editable field of every workload in
it (each container's requests and limits, set or not yet set; replicas; the HPA's bounds; each
HPA target, a pod-level one rewritten into per-container ``ContainerResource`` metrics). Then:

- the edit succeeds (nothing refused, nothing skipped) and changes at least one file;
- every comment of every changed file is still there;
- ``kubectl kustomize`` of every kustomization of the corpus that could read a changed file is
  byte-identical to its render before the edit, except the environment's own, which changes.

Which kustomizations could read a file is decided here without the bot's own model: every
string in a kustomization that names an existing path counts (a directory with a kustomization
is followed, any other directory counts whole), so a render is skipped only when no
kustomization it reaches names the file or a directory holding it.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from bot.config.repo import RepoConfig
from bot.manifests import Discovery, apply_changes, discover
from bot.manifests.kinds import UNREPLICATED_KINDS
from bot.manifests.kustomize import KUSTOMIZATION_FILES
from bot.model import MIB, DeclaredWorkload, FieldChange, FieldId
from tests.conftest import require_binary
from tests.manifests.conftest import lost_comments


def _strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for value in data.values():
            yield from _strings(value)
    elif isinstance(data, list):
        for value in data:
            yield from _strings(value)


def _kustomization(directory: Path) -> Path | None:
    return next((directory / n for n in KUSTOMIZATION_FILES if (directory / n).is_file()), None)


def reach(root: Path, directory: Path, seen: set[Path] | None = None) -> set[Path]:
    """Every path (file or directory) a kustomization in ``directory`` may read."""
    seen = seen if seen is not None else set()
    kfile = _kustomization(directory)
    if kfile is None or directory in seen:
        return set()
    seen.add(directory)
    out = {kfile}
    for docs in YAML(typ="safe").load_all(kfile.read_text()):
        for text in _strings(docs):
            if "\n" in text or "://" in text:
                continue
            for part in (text, text.partition("=")[2]):
                target = (directory / part).resolve() if part else None
                if target is None or not target.exists() or not target.is_relative_to(root):
                    continue
                out.add(target)
                if target.is_dir():
                    out |= reach(root, target, seen)
    return out


def could_read(reached: set[Path], path: Path) -> bool:
    return any(path == r or (r.is_dir() and path.is_relative_to(r)) for r in reached)


def every_field(workload: DeclaredWorkload) -> list[FieldChange]:
    """A new value for every field of one workload the editor accepts."""
    ref, out = workload.ref, []
    for c in workload.containers:
        for group, values in (("requests", c.requests), ("limits", c.limits)):
            cpu, memory = values.cpu_cores, values.memory_bytes
            out.append(
                FieldChange(ref, FieldId(f"{group}.cpu"), (cpu or 0.1) * 1.5 + 0.015, cpu, c.name)
            )
            out.append(
                FieldChange(
                    ref, FieldId(f"{group}.memory"), (memory or MIB) + 64 * MIB, memory, c.name
                )
            )
    if ref.kind not in UNREPLICATED_KINDS:  # a DaemonSet, CronJob or Job has no replicas
        out.append(
            FieldChange(ref, FieldId.REPLICAS, (workload.replicas or 1) + 1, workload.replicas)
        )
    hpa = workload.hpa
    if hpa is None:
        return out
    out.append(
        FieldChange(ref, FieldId.HPA_MIN_REPLICAS, (hpa.min_replicas or 1) + 1, hpa.min_replicas)
    )
    out.append(FieldChange(ref, FieldId.HPA_MAX_REPLICAS, hpa.max_replicas + 2, hpa.max_replicas))
    for target in hpa.targets:
        field = FieldId.hpa_target(target.resource)
        value = target.utilization_percent
        if target.container is not None or not hpa.container_resource:
            out.append(FieldChange(ref, field, value + 5, value, target.container))
            continue
        for c in workload.containers:  # the pod-level metric becomes one per container
            if not c.init:
                out.append(FieldChange(ref, field, value - 7, None, c.name))
    return out


def _render(directory: Path) -> str:
    done = subprocess.run(
        [require_binary("kubectl"), "kustomize", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout if done.returncode == 0 else f"error: {done.stderr}"


def _render_all(root: Path, directories: list[str]) -> dict[str, str]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(
            zip(directories, pool.map(lambda d: _render(root / d), directories), strict=True)
        )


@pytest.fixture(scope="module")
def corpus(shared_manifests, tmp_path_factory) -> tuple[Path, Discovery, dict[str, str]]:
    """A copy of the corpus, its inventory, and the render of every kustomization in it."""
    require_binary("kubectl")
    root = tmp_path_factory.mktemp("corpus") / "manifests"
    shutil.copytree(shared_manifests, root)
    directories = sorted(
        p.parent.relative_to(root).as_posix()
        for name in KUSTOMIZATION_FILES
        for p in root.rglob(name)
        if "kind: Component" not in p.read_text()
    )
    assert len(directories) >= 12
    return root, discover(root, RepoConfig()), _render_all(root, directories)


def test_an_edit_changes_only_the_renders_of_its_environment(corpus):
    root, discovery, before = corpus
    inventory = discovery.inventory
    reached = {d: reach(root, root / d) for d in before}
    checked: dict[str, int] = {}  # changes made, per environment
    for environment in inventory.environments:
        workloads = [w for w in inventory.workloads if w.ref.environment == environment]
        changes = [c for w in workloads for c in every_field(w)]
        result = apply_changes(root, discovery, changes, RepoConfig(), write=False)
        assert not result.failed and not result.errors, (environment, result.errors)
        assert not result.skipped and result.files, environment
        for changed in result.files:
            lost = lost_comments(changed.old.decode(), changed.new.decode())
            assert not lost, (environment, changed.path, lost)
        paths = [root / f.path for f in result.files]
        suspects = [d for d in before if any(could_read(reached[d], p) for p in paths)]
        try:
            for changed in result.files:
                (root / changed.path).write_bytes(changed.new)
            after = _render_all(root, suspects)
        finally:
            for changed in result.files:
                target = root / changed.path
                if changed.old:
                    target.write_bytes(changed.old)
                else:
                    target.unlink()
        own = [environment] if environment in before else []
        assert set(own) <= set(suspects), (environment, suspects)
        moved = sorted(d for d in suspects if after[d] != before[d])
        assert moved == own, (environment, moved)
        checked[environment] = len(changes)
    assert len(checked) == len(inventory.environments) >= 10
    assert sum(checked.values()) >= 250
