"""Usage history: the ``HistorySource`` seam, Prometheus, snapshots, data-quality notes.

``PrometheusSource(config).fetch(requests, start_s=..., end_s=...)`` returns a ``FetchResult``;
``docs/metrics.md`` describes the queries, the pod-to-workload mapping and the notes.
"""

from bot.metrics.errors import MetricsError, PrometheusUnavailableError, QueryError, SnapshotError
from bot.metrics.prometheus import PrometheusSource
from bot.metrics.snapshot import SnapshotSource, read_snapshot, record_snapshot, write_snapshot
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
