"""The manifest engine: discover what a GitOps repository declares and edit exactly the lines
that define a value (see ``docs/manifests.md``).

Public API::

    discover(root, config) -> Discovery (``.inventory``: what the checkout declares; the rest:
        the index the editor plans with)
    apply_changes(root, discovery, changes, config, *, write) -> EditResult
    bot.manifests.quantities: cores_from_quantity, bytes_from_quantity, format_cpu, format_memory

Modules, in data-flow order: ``files`` (safe, cached reads) -> ``yamldoc`` (parse with exact
spans) -> ``sources`` (objects and the origin of every value) -> ``patching``, ``kustomize``,
``helm`` (the repository styles) -> ``renders`` (every render of the checkout and the files it
reads) -> ``rendercache`` (``kubectl kustomize`` output kept between runs, keyed by those
files) -> ``workloads`` -> ``discovery``; then ``edit_planner`` (where each change goes, with
``edit_slots``, ``patch_trees`` and ``metric_edits``) -> ``comments``, ``textedit`` (span
edits) -> ``edit`` (combine, verify) -> ``writing`` (one unit through ``journal``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bot.config.repo import RepoConfig
from bot.manifests import quantities
from bot.manifests.discovery import Discovery, discover_index
from bot.manifests.edit import apply_discovered_changes
from bot.manifests.edit_planner import PATCH_FILE
from bot.manifests.errors import ManifestError
from bot.manifests.files import Checkpoint
from bot.manifests.journal import recover
from bot.model import EditResult, FieldChange

__all__ = [
    "PATCH_FILE",
    "Discovery",
    "ManifestError",
    "apply_changes",
    "discover",
    "quantities",
]


def discover(root: Path, config: RepoConfig, *, check: Checkpoint | None = None) -> Discovery:
    """The inventory of the checkout at ``root`` (``.inventory``; bad files become
    ``Inventory.errors``) with the index ``apply_changes`` edits it by: pass it on, no file is
    parsed again. ``check`` is called before each file, overlay, object and (in
    ``apply_changes``) workload edit, and may raise to stop there (the repository's deadline).

    A change set that an earlier process left half-written in ``root`` is undone first
    (``bot.manifests.journal``), so the inventory is never read from a half-applied set.
    """
    recover(root)
    return discover_index(root, config, check=check)


def apply_changes(
    root: Path,
    discovery: Discovery,
    changes: Sequence[FieldChange],
    config: RepoConfig,
    *,
    write: bool,
) -> EditResult:
    """Write ``changes`` to the files that define them (see ``bot.manifests.edit``).

    Changes are grouped per workload; a workload whose changes cannot be planned or fail
    verification is listed in ``EditResult.failed`` and nothing is written for it. With
    ``write=False`` nothing on disk changes.
    """
    return apply_discovered_changes(root, discovery, changes, config, write=write)
