"""Offline snapshots: what a source fetched, in one compressed file, replayed bit for bit.

File format (version ``SNAPSHOT_VERSION``): a ZIP archive, LZMA-compressed (or DEFLATE, see
``write_snapshot``), holding

- ``meta.json``: ``{"format": "tortoise-bot-snapshot", "version": 1, "start_s", "end_s",
  "warnings": [...], "histories": [{"ref": {...}, "start_s", "end_s", "pods": [...],
  "quality": [{"code", "message", "container"}], "containers": [names],
  "crash_loops_s": [[start, end], ...]}], "errors": [{"ref", "type", "message", "query", "url",
  "status"}], "origin": {"name", "remote", "selection": {"namespace", ...}}}``;
  ``crash_loops_s`` and ``origin`` were added later within version 1 and read as none when
  absent;
- one ``.npy`` array per history field: ``h<i>/replicas_t.npy``, ``h<i>/replicas.npy`` and
  ``h<i>/c<j>/<field>.npy`` for every ``ContainerHistory`` array (``cpu_t``, ``cpu_pod``, ...),
  read with ``allow_pickle=False``;
- optionally, what ran in the cluster for the verification of merged pull requests: ``cluster``
  in ``meta.json`` and its ``k<g>/...`` arrays (``bot.metrics.snapshot_cluster``), recorded by
  ``tortoise-bot snapshot`` from Prometheus; an older snapshot without them replays as before
  and verifies nothing (``SnapshotSource.cluster_state_missing`` says why).

Arrays keep their dtype and every bit of their values, so a plan run from the snapshot equals
the plan run from the source it was recorded from.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bot.metrics.cluster_state import ClusterTables, ClusterTablesSource, Throttled
from bot.metrics.errors import MetricsError, PrometheusUnavailableError, QueryError, SnapshotError
from bot.metrics.live import LiveResult, MergedValues
from bot.metrics.snapshot_cluster import npy, read_cluster, write_cluster
from bot.metrics.source import FetchResult, FetchStats, HistoryRequest, HistorySource
from bot.model import ContainerHistory, Note, WorkloadHistory, WorkloadRef
from bot.nesting import check_json

SNAPSHOT_FORMAT = "tortoise-bot-snapshot"
"""The ``format`` value of ``meta.json``."""

SNAPSHOT_VERSION = 1
"""The version this code writes and reads."""

MAX_META_BYTES = 64 * 1024 * 1024
"""A ``meta.json`` larger than this is refused (64 MiB)."""

ARRAY_FIELDS = tuple(f.name for f in fields(ContainerHistory) if f.name != "name")
OPTIONAL_FIELDS = frozenset({"restart_t"})
"""Arrays a snapshot recorded before they existed lacks: read as empty."""
"""The array fields of ``ContainerHistory``, stored one file each."""

_ERROR_TYPES: Mapping[str, type[MetricsError]] = {
    "MetricsError": MetricsError,
    "QueryError": QueryError,
    "PrometheusUnavailableError": PrometheusUnavailableError,
    "SnapshotError": SnapshotError,
}


@dataclass(frozen=True, slots=True)
class SnapshotOrigin:
    """What a snapshot was recorded for: the repository's directory name, its git remote
    (credentials removed; None without one) and the selection (``--namespace``,
    ``--workload``, ``--environment`` globs by option; empty: every workload). Commands that
    replay a snapshot refuse one recorded for another repository."""

    name: str
    remote: str | None = None
    selection: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "remote": self.remote, "selection": dict(self.selection)}

    @classmethod
    def of_json(cls, data: Any) -> SnapshotOrigin | None:
        """The origin of ``meta.json`` (None when absent); raises ``TypeError`` when malformed."""
        if data is None:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise TypeError("origin: expected an object with a name")
        remote, selection = data.get("remote"), data.get("selection") or {}
        if (remote is not None and not isinstance(remote, str)) or not isinstance(selection, dict):
            raise TypeError("origin: remote must be text, selection an object")
        return cls(data["name"], remote, {str(k): str(v) for k, v in selection.items()})

    def describe(self) -> str:
        """``shop (https://github.com/octo/shop)``: the repository, for messages."""
        return f"{self.name} ({self.remote})" if self.remote else self.name


def _utc(unix_s: float) -> str:
    """``2026-01-01 00:00 UTC``."""
    return datetime.fromtimestamp(unix_s, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _ref_json(ref: WorkloadRef) -> dict[str, str]:
    return {
        "kind": ref.kind,
        "namespace": ref.namespace,
        "name": ref.name,
        "environment": ref.environment,
    }


def _ref(data: Mapping[str, Any]) -> WorkloadRef:
    return WorkloadRef(
        str(data["kind"]), str(data["namespace"]), str(data["name"]), str(data["environment"])
    )


def write_snapshot(
    path: Path,
    result: FetchResult,
    *,
    start_s: float,
    end_s: float,
    compression: int = zipfile.ZIP_LZMA,
    origin: SnapshotOrigin | None = None,
    cluster: ClusterTables | None = None,
) -> None:
    """Write ``result`` to ``path`` atomically (temporary file in the same folder, then rename).

    ``origin``: the repository and selection it was recorded for (kept in ``meta.json``);
    ``cluster``: what ran in the cluster (``bot.metrics.snapshot_cluster``), when recorded.

    ``compression`` is the ZIP method of every member (``read_snapshot`` reads any):
    ``ZIP_LZMA`` is smallest, ``ZIP_DEFLATED`` several times faster to write.
    """
    meta: dict[str, Any] = {
        "format": SNAPSHOT_FORMAT,
        "version": SNAPSHOT_VERSION,
        "start_s": start_s,
        "end_s": end_s,
        "warnings": list(result.warnings),
        "histories": [],
        "errors": [
            {
                "ref": _ref_json(ref),
                "type": type(error).__name__,
                "message": error.message,
                "query": error.query,
                "url": error.url,
                "status": error.status,
            }
            for ref, error in sorted(result.errors.items())
        ],
    }
    if origin is not None:
        meta["origin"] = origin.to_json()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", compression=compression) as archive:
            for i, (ref, history) in enumerate(sorted(result.histories.items())):
                names = list(history.containers)
                meta["histories"].append(
                    {
                        "ref": _ref_json(ref),
                        "start_s": history.start_s,
                        "end_s": history.end_s,
                        "pods": list(history.pods),
                        "quality": [
                            {"code": n.code, "message": n.message, "container": n.container}
                            for n in history.quality
                        ],
                        "containers": names,
                        "crash_loops_s": [list(p) for p in history.crash_loops_s],
                    }
                )
                archive.writestr(f"h{i}/replicas_t.npy", npy(history.replicas_t))
                archive.writestr(f"h{i}/replicas.npy", npy(history.replicas))
                for j, name in enumerate(names):
                    container = history.containers[name]
                    for field in ARRAY_FIELDS:
                        archive.writestr(f"h{i}/c{j}/{field}.npy", npy(getattr(container, field)))
            if cluster is not None:
                meta["cluster"] = write_cluster(archive, cluster)
            archive.writestr("meta.json", json.dumps(meta, ensure_ascii=False))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The content of a snapshot file."""

    start_s: float
    end_s: float
    histories: Mapping[WorkloadRef, WorkloadHistory]
    errors: Mapping[WorkloadRef, MetricsError]
    warnings: tuple[str, ...]
    origin: SnapshotOrigin | None = None
    """The repository and selection it was recorded for; None in older snapshots."""
    cluster: ClusterTables | None = None
    """What ran in the cluster (requests, limits, HPA specs, CFS periods); None in older
    snapshots."""


def read_snapshot(path: Path) -> Snapshot:
    """Read a snapshot file; raises ``SnapshotError`` naming the file if it cannot be used."""
    where = str(path)
    try:
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo("meta.json")
            if info.file_size > MAX_META_BYTES:
                raise SnapshotError("meta.json is too large", url=where)
            raw_meta = archive.read("meta.json")
            check_json(raw_meta)
            meta = json.loads(raw_meta)
            if not isinstance(meta, dict) or meta.get("format") != SNAPSHOT_FORMAT:
                raise SnapshotError("not a tortoise-bot snapshot", url=where)
            if meta.get("version") != SNAPSHOT_VERSION:
                raise SnapshotError(
                    f"snapshot version {meta.get('version')} (this build reads "
                    f"{SNAPSHOT_VERSION}): record it again",
                    url=where,
                )

            names = set(archive.namelist())

            def array(name: str) -> np.ndarray[Any, Any]:
                if name not in names and name.rsplit("/", 1)[-1][:-4] in OPTIONAL_FIELDS:
                    return np.zeros(0, dtype=np.float64)
                with archive.open(name) as handle:
                    loaded = np.load(io.BytesIO(handle.read()), allow_pickle=False)
                return np.asarray(loaded)

            histories: dict[WorkloadRef, WorkloadHistory] = {}
            for i, item in enumerate(meta["histories"]):
                ref = _ref(item["ref"])
                containers = {
                    name: ContainerHistory(
                        name=name,
                        **{f: array(f"h{i}/c{j}/{f}.npy") for f in ARRAY_FIELDS},
                    )
                    for j, name in enumerate(item["containers"])
                }
                histories[ref] = WorkloadHistory(
                    ref=ref,
                    start_s=float(item["start_s"]),
                    end_s=float(item["end_s"]),
                    pods=tuple(str(p) for p in item["pods"]),
                    containers=containers,
                    replicas_t=array(f"h{i}/replicas_t.npy"),
                    replicas=array(f"h{i}/replicas.npy"),
                    quality=tuple(
                        Note(str(n["code"]), str(n["message"]), n["container"])
                        for n in item["quality"]
                    ),
                    crash_loops_s=tuple(
                        (float(a), float(b)) for a, b in item.get("crash_loops_s", ())
                    ),
                )
            errors: dict[WorkloadRef, MetricsError] = {}
            for item in meta["errors"]:
                kind = _ERROR_TYPES.get(str(item["type"]), MetricsError)
                errors[_ref(item["ref"])] = kind(
                    str(item["message"]),
                    query=item["query"],
                    url=item["url"],
                    status=item["status"],
                )
            return Snapshot(
                start_s=float(meta["start_s"]),
                end_s=float(meta["end_s"]),
                histories=histories,
                errors=errors,
                warnings=tuple(str(w) for w in meta["warnings"]),
                origin=SnapshotOrigin.of_json(meta.get("origin")),
                cluster=read_cluster(meta.get("cluster"), array),
            )
    except SnapshotError:
        raise
    except FileNotFoundError as exc:
        raise SnapshotError("file not found", url=where) from exc
    except (OSError, zipfile.BadZipFile, KeyError, ValueError, TypeError, EOFError) as exc:
        raise SnapshotError(f"corrupt snapshot: {exc}", url=where) from exc


def record_snapshot(
    source: HistorySource,
    requests: Sequence[HistoryRequest],
    *,
    start_s: float,
    end_s: float,
    path: Path,
    origin: SnapshotOrigin | None = None,
    cluster: ClusterTablesSource | None = None,
) -> FetchResult:
    """Fetch ``requests`` from ``source`` and write the result to ``path``; return the result.
    With ``cluster`` (Prometheus), also what ran in the cluster over the same window
    (``ClusterTables``: what a verification replayed from the snapshot reads).

    An outage raises (and writes nothing): a snapshot never records "no answer" as "no data".
    """
    result = source.fetch(requests, start_s=start_s, end_s=end_s)
    tables = (
        cluster.cluster_tables(requests, start_s=start_s, end_s=end_s)
        if cluster is not None
        else None
    )
    write_snapshot(path, result, start_s=start_s, end_s=end_s, origin=origin, cluster=tables)
    return result


def _window(history: WorkloadHistory, start_s: float, end_s: float) -> WorkloadHistory:
    """``history`` restricted to samples in ``[start_s, end_s]``."""

    def keep(t: np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.bool_]]:
        return np.asarray((t >= start_s) & (t <= end_s))

    containers = {}
    for name, c in history.containers.items():
        cpu, mem, oom = keep(c.cpu_t), keep(c.mem_t), keep(c.oom_t)
        containers[name] = ContainerHistory(
            name=name,
            cpu_t=c.cpu_t[cpu],
            cpu_pod=c.cpu_pod[cpu],
            cpu_cores=c.cpu_cores[cpu],
            mem_t=c.mem_t[mem],
            mem_pod=c.mem_pod[mem],
            mem_bytes=c.mem_bytes[mem],
            oom_t=c.oom_t[oom],
            oom_pod=c.oom_pod[oom],
            oom_request_bytes=c.oom_request_bytes[oom],
            restart_t=c.restart_t[keep(c.restart_t)],
        )
    rep = keep(history.replicas_t)
    return WorkloadHistory(
        ref=history.ref,
        start_s=max(start_s, history.start_s),
        end_s=min(end_s, history.end_s),
        pods=history.pods,
        containers=containers,
        replicas_t=history.replicas_t[rep],
        replicas=history.replicas[rep],
        quality=history.quality,
        crash_loops_s=tuple((a, b) for a, b in history.crash_loops_s if b > start_s and a <= end_s),
    )


class SnapshotSource:
    """A ``HistorySource`` replaying a snapshot file (read once, at construction); a
    ``ClusterStateSource`` too when it recorded what ran in the cluster."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.snapshot = read_snapshot(self.path)

    @property
    def start_s(self) -> float:
        """Start of the recorded window (unix seconds)."""
        return self.snapshot.start_s

    @property
    def end_s(self) -> float:
        """End of the recorded window: the ``now`` a replayed plan should use."""
        return self.snapshot.end_s

    def cluster_state_missing(self) -> str | None:
        """Why the snapshot cannot say what ran (recorded before it kept those series)."""
        if self.snapshot.cluster is not None:
            return None
        return (
            f"{self.path.name} was recorded without the kube-state-metrics and cAdvisor series "
            "the verification reads (resource requests and limits, HPA specs, CFS periods): "
            "record it again with `tortoise-bot snapshot`"
        )

    def _cluster(self) -> ClusterTables:
        if self.snapshot.cluster is None:
            raise SnapshotError(self.cluster_state_missing() or "", url=str(self.path))
        return self.snapshot.cluster

    def live_moments(self, merged: Sequence[MergedValues], *, now_s: float) -> LiveResult:
        """``find_live`` on the recorded series; raises ``SnapshotError`` without them."""
        return self._cluster().live(merged, now_s=now_s)

    def throttling(
        self, requests: Sequence[HistoryRequest], *, start_s: float, end_s: float
    ) -> Throttled:
        """``fetch_throttling`` on the recorded series; raises ``SnapshotError`` without them."""
        return self._cluster().throttling(requests, start_s=start_s, end_s=end_s)

    def fetch(
        self,
        requests: Sequence[HistoryRequest],
        *,
        start_s: float,
        end_s: float,
        budget_s: float | None = None,
    ) -> FetchResult:
        """The recorded answer for each request; the same window gives the recorded arrays.

        A workload or container that was not recorded is an error for that workload; a window
        reaching outside the recorded one is cut to it, with a ``snapshot-window`` note.
        """
        snap = self.snapshot
        same_window = start_s == snap.start_s and end_s == snap.end_s
        histories: dict[WorkloadRef, WorkloadHistory] = {}
        errors: dict[WorkloadRef, MetricsError] = {}
        for request in requests:
            ref = request.ref
            if ref in snap.errors:
                errors[ref] = snap.errors[ref]
                continue
            recorded = snap.histories.get(ref)
            if recorded is None:
                errors[ref] = SnapshotError(f"{ref} is not in the snapshot", url=str(self.path))
                continue
            missing = [c for c in request.containers if c not in recorded.containers]
            if missing:
                errors[ref] = SnapshotError(
                    f"{ref}: containers {', '.join(missing)} are not in the snapshot",
                    url=str(self.path),
                )
                continue
            history = recorded if same_window else _window(recorded, start_s, end_s)
            if start_s < snap.start_s or end_s > snap.end_s:
                note = Note(
                    "snapshot-window",
                    f"the snapshot covers {_utc(snap.start_s)} to {_utc(snap.end_s)} only, "
                    f"not {_utc(start_s)} to {_utc(end_s)}",
                )
                history = replace(history, quality=(*history.quality, note))
            histories[ref] = history
        return FetchResult(
            histories=histories,
            errors=errors,
            warnings=snap.warnings,
            stats=FetchStats(),
        )
