"""Usage history: the ``HistorySource`` seam, Prometheus, snapshots, data-quality notes.

``PrometheusSource(config).fetch(requests, start_s=..., end_s=...)`` returns a ``FetchResult``;
``docs/metrics.md`` describes the queries, the pod-to-workload mapping and the notes. The names
below are imported on first use (``bot.lazy``): reading a snapshot never loads the Prometheus
client and its HTTP stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.lazy import lazy_exports

if TYPE_CHECKING:
    from bot.metrics.errors import (
        MetricsError,
        PrometheusUnavailableError,
        QueryError,
        SnapshotError,
    )
    from bot.metrics.prometheus import PrometheusSource
    from bot.metrics.snapshot import (
        SnapshotSource,
        read_snapshot,
        record_snapshot,
        write_snapshot,
    )
    from bot.metrics.source import FetchResult, FetchStats, HistoryRequest, HistorySource

__all__ = [
    "FetchResult",
    "FetchStats",
    "HistoryRequest",
    "HistorySource",
    "MetricsError",
    "PrometheusSource",
    "PrometheusUnavailableError",
    "QueryError",
    "SnapshotError",
    "SnapshotSource",
    "read_snapshot",
    "record_snapshot",
    "write_snapshot",
]

__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(
            ("MetricsError", "PrometheusUnavailableError", "QueryError", "SnapshotError"),
            "bot.metrics.errors",
        ),
        "PrometheusSource": "bot.metrics.prometheus",
        **dict.fromkeys(
            ("SnapshotSource", "read_snapshot", "record_snapshot", "write_snapshot"),
            "bot.metrics.snapshot",
        ),
        **dict.fromkeys(
            ("FetchResult", "FetchStats", "HistoryRequest", "HistorySource"),
            "bot.metrics.source",
        ),
    },
)
