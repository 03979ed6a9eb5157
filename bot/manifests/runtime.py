"""Runtime memory settings and extended resources of one container, read from its manifest.

A JVM's heap (``-Xmx``, ``-Xms``, ``-XX:MaxRAMPercentage``) in ``JAVA_OPTS``,
``JAVA_TOOL_OPTIONS``, ``JDK_JAVA_OPTIONS`` or the container's ``command`` / ``args``, and Go's
``GOMEMLIMIT`` (env): the memory limit must leave room for them (``bot.recommend.namespace``).
The bot never edits them; it says when they should change with the limit. A value from
``valueFrom`` is unknown to the repository: read as a setting without a value.

Extended resources (``<domain>/<name>`` keys of ``resources``, e.g. ``nvidia.com/gpu``) are
read for their cost; the bot never proposes them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from typing import Any

from bot.manifests.quantities import QuantityError, cores_from_quantity
from bot.model import RuntimeMemory, RuntimeMemoryKind

JAVA_ENV = ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "JAVA_OPTS")
"""Environment variables a JVM (or its start script) reads options from."""
GO_ENV = "GOMEMLIMIT"

_JVM_SIZE = re.compile(r"^(\d+)([kKmMgGtT]?)$")
_JVM_UNIT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_GO_SIZE = re.compile(r"^(\d+(?:\.\d+)?)(B|KiB|MiB|GiB|TiB)?$")
_GO_UNIT = {None: 1, "B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}


def jvm_bytes(text: str) -> int | None:
    """A JVM size (``768m``, ``2G``, ``1048576``) in bytes; None when it is not one."""
    match = _JVM_SIZE.match(text)
    if match is None:
        return None
    return int(match.group(1)) * _JVM_UNIT[match.group(2).lower()]


def go_bytes(text: str) -> int | None:
    """A ``GOMEMLIMIT`` value (``900MiB``, ``1GiB``, ``1073741824``) in bytes; None for ``off``
    or anything Go would refuse."""
    match = _GO_SIZE.match(text.strip())
    if match is None:
        return None
    return int(float(match.group(1)) * _GO_UNIT[match.group(2)])


def jvm_options(text: str, source: str) -> Iterator[RuntimeMemory]:
    """The heap settings in one string of JVM options (or a shell command running ``java``)."""
    try:
        tokens = shlex.split(text)
    except ValueError:
        tokens = text.split()
    for token in tokens:
        for part in token.split():
            if part.startswith("-Xmx") or part.startswith("-Xms"):
                kind: RuntimeMemoryKind = "max_heap" if part.startswith("-Xmx") else "initial_heap"
                size = jvm_bytes(part[4:])
                if size is not None:
                    yield RuntimeMemory(kind, source, part, float(size))
            elif part.startswith("-XX:MaxRAMPercentage="):
                try:
                    percent = float(part.split("=", 1)[1])
                except ValueError:
                    continue
                yield RuntimeMemory("max_ram_percentage", source, part, percent)


def runtime_memory(container: Mapping[str, Any]) -> tuple[RuntimeMemory, ...]:
    """Every runtime memory setting of one pod template container item (see module doc)."""
    found: list[RuntimeMemory] = []
    env = container.get("env")
    for item in env if isinstance(env, list) else ():
        if not isinstance(item, dict):
            continue
        name = item.get("name")
        if name not in (*JAVA_ENV, GO_ENV):
            continue
        source = f"env {name}"
        value = item.get("value")
        if "valueFrom" in item and value is None:
            kind: RuntimeMemoryKind = "gomemlimit" if name == GO_ENV else "max_heap"
            found.append(RuntimeMemory(kind, source, "valueFrom", None))
        elif name == GO_ENV and value is not None:
            size = go_bytes(str(value))
            if size is not None:
                found.append(RuntimeMemory("gomemlimit", source, f"{name}={value}", float(size)))
        elif value is not None:
            found.extend(jvm_options(str(value), source))
    for key in ("command", "args"):
        items = container.get(key)
        for item in items if isinstance(items, list) else ():
            if isinstance(item, str) and ("-X" in item):
                found.extend(jvm_options(item, key))
    return tuple(found)


def extended_resources(container: Mapping[str, Any]) -> dict[str, float]:
    """The extended resources (``<domain>/<name>``) a container item requests: its request,
    else its limit (Kubernetes sets one from the other); a value that does not parse is left
    out."""
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return {}
    out: dict[str, float] = {}
    for group in ("limits", "requests"):  # a request wins over its limit
        values = resources.get(group)
        if not isinstance(values, dict):
            continue
        for name, raw in values.items():
            if not isinstance(name, str) or "/" not in name or isinstance(raw, bool):
                continue
            try:
                out[name] = cores_from_quantity(raw)
            except (QuantityError, ValueError):
                continue
    return out
