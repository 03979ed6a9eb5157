"""Slot location: which declared slot a field change addresses, the text a value is written as,
and the plan that collects a workload's edits.

A slot (``workloads.Slot``) is the object and path that hold one field of one workload;
``slot_for`` finds it for a change, ``declared_location`` tells whether discovery traced its
value to a file, ``value_text`` gives the text to write there (cores and bytes in the style of
the value it replaces; replicas and percents as whole numbers). ``Placement`` answers which
files only one environment reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.manifests.discovery import Discovery
from bot.manifests.errors import EditError, SharedFileError
from bot.manifests.patch_trees import Splice
from bot.manifests.quantities import (
    bytes_from_quantity,
    cores_from_quantity,
    cpu_style,
    format_cpu,
    format_memory,
    memory_style,
)
from bot.manifests.sources import Inline, Obj, Origin, Path_, patch_key
from bot.manifests.textedit import NewTree, TextEdit
from bot.manifests.workloads import (
    RESOURCE_FIELDS,
    CheckKey,
    Entry,
    Slot,
    SlotKey,
    hpa_location_key,
)
from bot.manifests.yamldoc import YNode, YScalar
from bot.model import DeclaredWorkload, FieldChange, FieldId, Note, WorkloadRef

FIELDS = tuple(FieldId)
"""``FieldChange.field`` values the editor accepts."""


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


def slot_for(entry: Entry, change: FieldChange) -> tuple[SlotKey, Slot]:
    """The slot ``change`` sets: a container's own for requests and limits, the container's
    metric for a per-container HPA target when the HPA has one (else the pod-level target), the
    workload's for the rest; raises ``EditError`` when the field is unknown or not declared."""
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


def value_text(slot: Slot, value: float | int, like: YNode | None) -> tuple[str, float | int]:
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


def declared_location(workload: DeclaredWorkload, key: SlotKey) -> object | None:
    """Where discovery read the value of ``key`` in ``workload`` (None: nothing the editor
    models sets it, so the rendered value cannot be traced to a file)."""
    container, name = key
    if name in RESOURCE_FIELDS:
        found = workload.container(container or "")
        return found.locations.get(name) if found else None
    if name == FieldId.REPLICAS:
        return workload.locations.get(FieldId.REPLICAS)
    if workload.hpa is None:
        return None
    return workload.hpa.locations.get(hpa_location_key(name, container))


class Placement:
    """Which files a workload's environment may write: what every planning step asks of the
    discovery."""

    def __init__(self, disc: Discovery) -> None:
        self.disc = disc

    def exclusive(self, origin: Origin, env: str) -> bool:
        """Whether ``origin`` is the object's own in ``env``: only ``env`` reads its file, and
        it is not a patch that a ``target:`` applies to several objects (a component's
        ``target: {kind: Deployment}`` patch writes every Deployment of the overlay)."""
        environment = self.disc.environments.get(env)
        key = patch_key(origin.file, origin.document, origin.inline)
        if environment is not None and key in environment.spread:
            return False
        return self.disc.exclusive(origin.file, env)

    def _also(self, file: str, env: str) -> str:
        """`` (also read by ...)`` for a shared file, naming what else reads it."""
        others = self.disc.sharers(file, env)
        return f" (also read by {'; '.join(others)})" if others else ""

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
