"""How much a DaemonSet's pods differ: one request serves every node, the busiest governs.

A DaemonSet runs one pod per node, and nodes differ (an ingress node's log shipper works harder
than a batch node's). Its request is sized on every pod's samples together (the VPA's one
histogram per container name), so the busiest node class governs and the quieter pods hold the
difference unused. ``pod_spread`` says how large that difference is: per container and resource,
the 90th percentile of each pod's usage, busiest against quietest, as a note when they differ by
``SPREAD_NOTE_RATIO`` or more (``docs/recommendations.md``, DaemonSets).
"""

from __future__ import annotations

from typing import Final

import numpy as np

from bot.model import MIB, RESOURCES, FloatArray, IntArray, Note, Resource
from bot.recommend.inputs import WorkloadInput
from bot.recommend.window import Window

PER_NODE_KINDS: Final = frozenset({"DaemonSet"})
"""Workload kinds with one pod per node, whose pods' spread is reported."""
SPREAD_NOTE_RATIO: Final = 1.5
"""Busiest pod's p90 / quietest pod's p90 from which the spread is noted."""
SPREAD_PERCENTILE: Final = 90.0
"""The per-pod percentile compared."""
MIN_POD_SAMPLES: Final = 60
"""A pod with fewer samples in the window (a node that just joined) is left out."""
FLOOR: Final[dict[Resource, float]] = {"cpu": 0.001, "memory": float(MIB)}
"""The smallest p90 a ratio divides by (1 millicore, 1 MiB): an idle pod gives a finite ratio."""


def _per_pod_p90(
    t: FloatArray, pod: IntArray, values: FloatArray, window: Window
) -> dict[int, float]:
    keep = window.keep(t)
    pod, values = pod[keep], values[keep]
    out: dict[int, float] = {}
    for index in np.unique(pod).tolist():
        mine = values[pod == index]
        if mine.size >= MIN_POD_SAMPLES:
            out[int(index)] = float(np.percentile(mine, SPREAD_PERCENTILE))
    return out


def _shown(resource: Resource, value: float) -> str:
    return f"{value * 1000:.0f}m" if resource == "cpu" else f"{value / MIB:.0f}Mi"


def pod_spread(inp: WorkloadInput, window: Window) -> tuple[Note, ...]:
    """``pod-spread`` notes of a per-node workload (``PER_NODE_KINDS``), none for other kinds."""
    if inp.ref.kind not in PER_NODE_KINDS:
        return ()
    notes = []
    for container in inp.containers:
        history = inp.history.containers.get(container.name)
        if history is None:
            continue
        for resource in RESOURCES:
            if container.policy(resource) == "off":
                continue
            series = (
                (history.cpu_t, history.cpu_pod, history.cpu_cores)
                if resource == "cpu"
                else (history.mem_t, history.mem_pod, history.mem_bytes)
            )
            p90 = _per_pod_p90(*series, window)
            if len(p90) < 2:
                continue
            busy = max(p90, key=lambda i: (p90[i], i))
            quiet = min(p90, key=lambda i: (p90[i], i))
            ratio = max(p90[busy], FLOOR[resource]) / max(p90[quiet], FLOOR[resource])
            if ratio < SPREAD_NOTE_RATIO:
                continue
            pods = inp.history.pods
            notes.append(
                Note(
                    "pod-spread",
                    f"{container.name}: pods differ {ratio:.1f}× in p90 {resource} "
                    f"({_shown(resource, p90[busy])} on {pods[busy]}, "
                    f"{_shown(resource, p90[quiet])} on {pods[quiet]} of {len(p90)} pods): "
                    "a per-node-class size may waste; one size for all pods here",
                    container.name,
                )
            )
    return tuple(notes)
