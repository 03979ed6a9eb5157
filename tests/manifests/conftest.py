"""Helpers for the manifest engine tests: write a small repository into ``tmp_path``."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from bot.config.repo import RepoConfig
from bot.manifests import apply_changes, discover
from bot.manifests.comments import comment_start
from bot.model import EditResult, FieldChange, FieldId, Inventory, WorkloadRef
from tests.conftest import require_binary


def raw_base(fixtures: Path, tmp_path: Path) -> Path:
    """A fixture tree's ``base/`` copied as raw YAML: its ``kustomization.yaml`` removed."""
    root = tmp_path / "raw"
    shutil.copytree(fixtures / "base", root)
    (root / "kustomization.yaml").unlink()
    return root


def kustomize_tree(fixtures: Path, tmp_path: Path, *parts: str) -> Path:
    """A fixture tree (or only its ``parts``) copied for ``kubectl kustomize``, skipped without
    kubectl."""
    require_binary("kubectl")
    root = tmp_path / "kustomize"
    if not parts:
        shutil.copytree(fixtures, root)
    for part in parts:
        shutil.copytree(fixtures / part, root / part)
    return root


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Write ``files`` (path -> text or bytes) under ``root``; text is written byte for byte."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` and its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def repo(tmp_path: Path) -> Callable[[Mapping[str, str | bytes]], Path]:
    """``repo({"a.yaml": "..."})`` -> the root of a new repository holding those files."""

    def make(files: Mapping[str, str | bytes]) -> Path:
        root = tmp_path / "repo"
        write_tree(root, files)
        return root

    return make


def workload(inventory: Inventory, name: str, environment: str | None = None):
    """The one workload called ``name`` (in ``environment`` when given)."""
    found = [
        w
        for w in inventory.workloads
        if w.ref.name == name and (environment is None or w.ref.environment == environment)
    ]
    assert len(found) == 1, f"{name}@{environment}: {[str(w.ref) for w in inventory.workloads]}"
    return found[0]


def edit(
    root: Path,
    changes: Sequence[tuple[str, str, float | int | None, str | None]],
    *,
    environment: str | None = None,
    write: bool = True,
    config: RepoConfig | None = None,
) -> EditResult:
    """Discover, then apply ``(workload name, field, value, container)`` changes."""
    cfg = config or RepoConfig()
    discovery = discover(root, cfg)
    inventory = discovery.inventory
    field_changes = []
    for name, field, value, container in changes:
        ref: WorkloadRef = workload(inventory, name, environment).ref
        field_changes.append(FieldChange(ref, FieldId(field), value, container=container))
    return apply_changes(root, discovery, field_changes, cfg, write=write)


def changed_lines(diff: str) -> tuple[list[str], list[str]]:
    """(removed, added) lines of a unified diff, without the ``-``/``+`` marks and file headers."""
    removed = [
        line[1:]
        for line in diff.splitlines()
        if line.startswith("-") and not line.startswith("---")
    ]
    added = [
        line[1:]
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    return removed, added


def comments(text: str) -> Counter[str]:
    """Every comment of a YAML text (from its ``#``, stripped), counted."""
    found: Counter[str] = Counter()
    for line in text.splitlines():
        at = comment_start(line)
        if at is not None:
            found[line[at:].strip()] += 1
    return found


def lost_comments(old: str, new: str) -> Counter[str]:
    """The comments of ``old`` that ``new`` no longer has (empty when every one survives)."""
    return comments(old) - comments(new)
