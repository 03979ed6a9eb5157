"""Reading one field of an object: where it is (``get_path``), what it counts in (``unit_of``)
and its value as cores, bytes or a whole number (``number``); a container's role in its pod
(``container_role``) and the ``DeclaredContainer`` its fields make (``declared_container``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from bot.manifests.quantities import bytes_from_quantity, cores_from_quantity
from bot.manifests.sources import Path_
from bot.model import DeclaredContainer, FieldId, Location, ResourceValues

Unit = Literal["cpu", "memory", "count", "percent"]


def unit_of(field: FieldId) -> Unit:
    """How a field's value is read: cores, bytes, a percentage or a count."""
    if field.is_request_or_limit:
        return "cpu" if field.resource == "cpu" else "memory"
    return "percent" if field.is_hpa_target else "count"


def number(unit: Unit, value: Any) -> float | int | None:
    """A value read as cores, bytes or an integer; raises ``QuantityError``/``ValueError``."""
    if value is None or isinstance(value, bool):
        return None
    if unit == "cpu":
        return cores_from_quantity(value)
    if unit == "memory":
        return bytes_from_quantity(value)
    if isinstance(value, int | float):
        return int(value)
    return int(str(value))


def get_path(data: Any, path: Path_) -> Any:
    """The value at ``path`` (keys and list indices), or None."""
    for part in path:
        if isinstance(data, dict) and isinstance(part, str):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data


ContainerRole = Literal["container", "sidecar", "init", "init_sized"]
"""``sidecar``: an ``initContainers`` item with ``restartPolicy: Always`` (a native sidecar,
sized like a container); ``init``: any other init container, left alone; ``init_sized``: one
sized all the same (``containers.init: propose``)."""


def container_role(item: Mapping[str, Any], in_init_list: bool, init_mode: str) -> ContainerRole:
    """The role of a pod template's container ``item`` (from ``initContainers`` when
    ``in_init_list``), ``init_mode`` being the repository's ``containers.init``."""
    if not in_init_list:
        return "container"
    if item.get("restartPolicy") == "Always":
        return "sidecar"
    return "init_sized" if init_mode == "propose" else "init"


def declared_container(
    name: str,
    values: Mapping[FieldId, float | int | None],
    locations: Mapping[str, Location],
    role: ContainerRole = "container",
) -> DeclaredContainer:
    """The container its read ``values`` (cores, bytes) and their ``locations`` describe."""

    def pair(cpu: float | int | None, memory: float | int | None) -> ResourceValues:
        return ResourceValues(
            float(cpu) if cpu is not None else None, int(memory) if memory is not None else None
        )

    return DeclaredContainer(
        name,
        pair(values.get(FieldId.request("cpu")), values.get(FieldId.request("memory"))),
        pair(values.get(FieldId.limit("cpu")), values.get(FieldId.limit("memory"))),
        locations,
        init=role == "init",
        sidecar=role == "sidecar",
        init_sized=role == "init_sized",
    )
