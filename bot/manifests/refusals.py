"""Why an edit of one workload was refused, where its object is declared, and what to do: the
reason ``plan``, ``explain`` and the dashboard show for a workload whose edit would not render."""

from __future__ import annotations

from bot.config.repo import REPO_CONFIG_FILES
from bot.manifests.discovery import Discovery
from bot.model import WorkloadRef


def object_at(disc: Discovery, ref: WorkloadRef) -> tuple[str, int]:
    """File and line where the workload's object is declared (its document), for a reason."""
    entry = disc.entries.get(ref)
    if entry is None:
        return "", 0
    slot = next(iter(entry.slots.values()), None)
    if slot is not None:
        return slot.obj.root.file, slot.obj.root.line
    return (entry.workload.files[0] if entry.workload.files else ""), 0


def refused_reason(disc: Discovery, ref: WorkloadRef, why: str) -> str:
    """Why an edit of ``ref`` was refused, and what to do about it (one sentence each)."""
    entry = disc.entries.get(ref)
    env = entry.environment if entry is not None else None
    if env is not None and env.kind == "kustomize" and env.directory is not None:
        where = f"a patch of {env.directory}"
    elif env is not None and env.values_file is not None:
        where = env.values_file
    else:
        where = "the file that sets it"
    why = why.removeprefix(f"{ref}: ")
    return (
        f"{ref}: {why}. To do: make the proposed change by hand in {where}, or set "
        f"`ignore: true` for this workload in {REPO_CONFIG_FILES[0]} to leave it alone"
    )
