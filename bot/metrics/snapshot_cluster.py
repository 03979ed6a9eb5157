"""The optional snapshot members that say what ran in the cluster (``ClusterTables``): the
kube-state-metrics requests, limits and HPA specs and the cAdvisor CFS periods the verification
of merged pull requests reads (``bot.metrics.cluster_state``).

In ``meta.json``, ``"cluster": {"start_s", "end_s", "step_s", "groups": [{"namespace",
"selector": {...}, "tables": {"<table>": [[label values], ...]}}]}``; per group ``g`` and table,
three arrays: ``k<g>/<table>/t.npy`` and ``v.npy`` (every series' samples one after another) and
``n.npy`` (each series' number of samples). A snapshot recorded before these members existed has
no ``cluster``: it replays the history as before, and verifies nothing (the verification says
why).
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from bot.metrics.cluster_state import ClusterTables, GroupKey
from bot.metrics.live import Rows


def npy(array: np.ndarray[Any, Any]) -> bytes:
    """``array`` as ``.npy`` bytes (no pickled objects)."""
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def write_cluster(archive: zipfile.ZipFile, tables: ClusterTables) -> dict[str, Any]:
    """Write the arrays of ``tables`` into ``archive``; return the ``cluster`` object of
    ``meta.json``."""
    groups = []
    for g, ((namespace, selector), by_kind) in enumerate(sorted(tables.groups.items())):
        labels: dict[str, list[list[str]]] = {}
        for kind, rows in sorted(by_kind.items()):
            labels[kind] = [list(key) for key, _, _ in rows]
            empty = np.empty(0, dtype=np.float64)
            t = np.concatenate([r[1] for r in rows]) if rows else empty
            v = np.concatenate([r[2] for r in rows]) if rows else empty
            sizes = np.asarray([r[1].size for r in rows], dtype=np.int64)
            for name, array in (("t", t), ("v", v), ("n", sizes)):
                archive.writestr(f"k{g}/{kind}/{name}.npy", npy(array))
        groups.append({"namespace": namespace, "selector": dict(selector), "tables": labels})
    return {
        "start_s": tables.start_s,
        "end_s": tables.end_s,
        "step_s": tables.step_s,
        "groups": groups,
    }


def read_cluster(
    data: Mapping[str, Any] | None, array: Callable[[str], np.ndarray[Any, Any]]
) -> ClusterTables | None:
    """The ``ClusterTables`` of a ``meta.json`` ``cluster`` object (None when absent), its arrays
    read by ``array(member name)``; raises ``KeyError``/``ValueError``/``TypeError`` when
    malformed (the snapshot reader says "corrupt snapshot")."""
    if data is None:
        return None
    groups: dict[GroupKey, dict[str, Rows]] = {}
    for g, group in enumerate(data["groups"]):
        selector = group["selector"]
        if not isinstance(selector, dict) or not isinstance(group["tables"], dict):
            raise TypeError("cluster: a group's selector and tables must be objects")
        key: GroupKey = (
            str(group["namespace"]),
            tuple(sorted((str(k), str(v)) for k, v in selector.items())),
        )
        tables: dict[str, Rows] = {}
        for kind, labels in group["tables"].items():
            t, v = array(f"k{g}/{kind}/t.npy"), array(f"k{g}/{kind}/v.npy")
            sizes = array(f"k{g}/{kind}/n.npy")
            if len(sizes) != len(labels) or int(sizes.sum()) != t.size or t.size != v.size:
                raise ValueError(f"cluster: table {kind} of group {g} does not add up")
            bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
            tables[str(kind)] = [
                (
                    tuple(str(x) for x in labels[i]),
                    t[bounds[i] : bounds[i + 1]].astype(np.float64),
                    v[bounds[i] : bounds[i + 1]].astype(np.float64),
                )
                for i in range(len(labels))
            ]
        groups[key] = tables
    return ClusterTables(
        float(data["start_s"]), float(data["end_s"]), float(data["step_s"]), groups
    )


__all__ = ["npy", "read_cluster", "write_cluster"]
