"""Metrics errors: every one carries the query, the URL and the HTTP status where known.

Hierarchy::

    MetricsError                     anything that stops history from being read
    ├── PrometheusUnavailableError        outage: connection refused, timeouts, 5xx/429 after retries,
    │                                401/403; an error for the whole repository, never "no data"
    ├── QueryError                   Prometheus refused or failed one query (4xx ``bad_data``,
    │                                ``execution`` errors, unreadable JSON); an error for the
    │                                workloads that query was for
    │   └── RemoteReadUnsupportedError  the server does not answer remote read (the same
    │                                samples are then read through the query API)
    └── SnapshotError                a snapshot file is missing, corrupt or of another version
"""

from __future__ import annotations

from bot.redaction import strip_url_credentials


class MetricsError(Exception):
    """History could not be read. ``query``, ``url`` and ``status`` say where, when known
    (``url`` without the credentials it may carry: ``bot.redaction.strip_url_credentials``)."""

    def __init__(
        self,
        message: str,
        *,
        query: str | None = None,
        url: str | None = None,
        status: int | None = None,
    ) -> None:
        self.message = message
        self.query = query
        self.url = strip_url_credentials(url) if url else url
        self.status = status
        parts = [message]
        if status is not None:
            parts.append(f"HTTP {status}")
        if url:
            parts.append(f"url={url}")
        if query:
            parts.append(f"query={query[:300]}")
        super().__init__("; ".join(parts))

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled whole (a worker process gets the same error, ``bot.worker_pool``)."""
        return (_rebuild, (type(self), self.message, self.query, self.url, self.status))


def _rebuild(
    kind: type[MetricsError], message: str, query: str | None, url: str | None, status: int | None
) -> MetricsError:
    return kind(message, query=query, url=url, status=status)


class PrometheusUnavailableError(MetricsError):
    """The server could not be reached or kept failing: the whole fetch is an error."""


class QueryError(MetricsError):
    """The server answered one query with an error."""


class RemoteReadUnsupportedError(QueryError):
    """``/api/v1/read`` did not answer with a ``ReadResponse`` (not offered, over a limit)."""


class SnapshotError(MetricsError):
    """A snapshot file cannot be read or written; ``url`` holds its path.

    Reads ``PATH: message`` (``/tmp/h.zip: file not found``).
    """

    def __str__(self) -> str:
        return f"{self.url}: {self.message}" if self.url else self.message
