"""HTTP access to the Prometheus API: prometheus-api-client for the connection, own POST bodies.

``PrometheusConnect`` (prometheus-api-client 0.7.2) holds the URL, headers, auth, TLS settings
and the session. Its ``custom_query_range`` does not fit the core fetch (measured, see
``docs/metrics.md``): it puts the query in the URL even with ``method="POST"``, rounds start and
end to whole seconds, does not chunk past 11,000 points, and its urllib3 ``Retry`` never retries
a POST on a status code. So range and instant queries are sent here as POST form bodies through
that connection's session, with:

- a total deadline on every request, ``timeout_s`` (connect, send and the whole answer, to any
  host a redirect leads to: ``bot/metrics/deadline.py``), and the server-side ``timeout``
  parameter;
- redirects followed as ``follow_redirects`` says, answers bounded by ``max_response_bytes``
  (``bot/metrics/exchange.py``);
- up to ``retries`` retries on connection errors, timeouts, 5xx and 429, waiting
  ``min(max_backoff_s, backoff_s * 2**attempt)`` or the server's ``Retry-After``
  (seconds or HTTP date, capped at ``max_backoff_s``): queries are read-only, so safe to repeat;
- inside ``PrometheusClient.bounded(deadline)`` (a fetch's budget, ``fetch_timeout_s``), no
  request and no wait between retries lasts past ``deadline``: each request's limit is the
  smaller of ``timeout_s`` and the time left;
- ``Accept-Encoding: gzip`` or ``identity`` (``config.gzip``);
- ``{"status": "error"}`` bodies turned into ``QueryError`` and ``warnings`` collected.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import orjson
import requests
import urllib3
from prometheus_api_client import PrometheusConnect
from urllib3.util.retry import Retry

from bot.config.metrics import PrometheusConfig
from bot.metrics.deadline import DeadlineAdapter, total_deadline
from bot.metrics.decode import decode_matrix, warnings_of
from bot.metrics.errors import (
    MetricsError,
    PrometheusUnavailableError,
    QueryError,
    RemoteReadUnsupportedError,
)
from bot.metrics.exchange import DeadlineReached, Policy, exchange
from bot.metrics.promql import LabelMatch, duration
from bot.metrics.remote_read import HEADERS as REMOTE_READ_HEADERS
from bot.metrics.remote_read import RemoteReadError, decode_read_response, encode_read_request
from bot.metrics.xor_chunks import STREAMED_MEDIA_TYPE, decode_chunked_response
from bot.model import FloatArray
from bot.redaction import add_basic, add_bearer, add_secret, add_url, excerpt

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
"""HTTP statuses retried with backoff (Too Many Requests and server errors)."""

REMOTE_READ_PATH = "/api/v1/read"
"""Prometheus' remote read endpoint, under the same base URL as the query API (Mimir:
``<base>/prometheus``)."""

AUTH_STATUSES = frozenset({401, 403})
"""HTTP statuses that mean the credentials are wrong: an outage of the whole fetch."""


@dataclass
class ClientStats:
    """What the client did so far: HTTP requests, retries and response bytes (decoded)."""

    requests: int = 0
    retries: int = 0
    bytes_received: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, *, requests_: int = 0, retries: int = 0, bytes_: int = 0) -> None:
        with self._lock:
            self.requests += requests_
            self.retries += retries
            self.bytes_received += bytes_


@dataclass(frozen=True, slots=True)
class ApiResponse:
    """The ``data`` of a successful answer and the ``warnings`` that came with it.

    ``series`` is set instead of ``data["result"]`` when the matrix fast path decoded it.
    """

    data: Mapping[str, Any]
    warnings: tuple[str, ...]
    series: list[tuple[dict[str, Any], FloatArray, FloatArray]] | None = None


def _retry_after_s(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class _NoAnswer(Exception):  # noqa: N818  (an outcome of one attempt, retried)
    """One attempt got no complete answer (timeout, connection refused or broken)."""


def _cut_off(limit_s: float) -> str:
    return (
        f"timed out: no complete answer within {limit_s:.3g} s (timeout_s bounds the whole request)"
    )


def _read_secret(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise PrometheusUnavailableError(
            f"cannot read the bearer token file {path}: {exc}"
        ) from exc


class PrometheusClient:
    """POST queries to one Prometheus-compatible API; thread-safe, used with a worker pool."""

    def __init__(
        self,
        config: PrometheusConfig,
        *,
        session: requests.Session | None = None,
        env: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not config.url:
            raise PrometheusUnavailableError("no Prometheus URL configured")
        environ = os.environ if env is None else env
        self.config = config
        add_url(config.url)
        self.url = config.url.rstrip("/")
        self._sleep = sleep
        headers = dict(config.headers)
        for header, variable in config.headers_from_env.items():
            if variable not in environ:
                raise PrometheusUnavailableError(
                    f"header {header}: environment variable {variable} unset"
                )
            headers[header] = environ[variable]
            add_secret(environ[variable])
        auth = config.auth
        token: str | None = None
        if auth.bearer_token_env:
            if auth.bearer_token_env not in environ:
                raise PrometheusUnavailableError(
                    f"bearer token: environment variable {auth.bearer_token_env} unset"
                )
            token = environ[auth.bearer_token_env]
        elif auth.bearer_token_file:
            token = _read_secret(auth.bearer_token_file)
        if token is not None:
            add_bearer(token)
            headers["Authorization"] = f"Bearer {token}"
        basic: tuple[str, str] | None = None
        if auth.basic_username and auth.basic_password_env:
            if auth.basic_password_env not in environ:
                raise PrometheusUnavailableError(
                    f"basic auth: environment variable {auth.basic_password_env} unset"
                )
            basic = (auth.basic_username, environ[auth.basic_password_env])
            add_basic(*basic)
        headers["Accept-Encoding"] = "gzip" if config.gzip else "identity"
        own = session or requests.Session()
        own.verify = config.ca_bundle or config.verify_tls
        adapter_size = max(10, config.concurrency)
        self.connection = PrometheusConnect(
            url=self.url,
            headers=headers,
            auth=basic,
            session=own,
            retry=Retry(total=0, raise_on_status=False),
            timeout=config.timeout_s,
            method="POST",
        )
        # PrometheusConnect mounted its own adapter (retry disabled): keep a pool per worker,
        # with connections that obey the total deadline of each request, to the configured
        # host and to any host a redirect leads to.
        for prefix in (self.url, "http://", "https://"):
            own.mount(
                prefix,
                DeadlineAdapter(
                    pool_maxsize=adapter_size, max_retries=Retry(total=0, raise_on_status=False)
                ),
            )
        self.session = own
        self._local = threading.local()
        self._headers = headers
        self._auth = basic
        self._policy = Policy(
            config.follow_redirects,
            config.max_response_bytes,
            ("Authorization", *config.headers_from_env),
        )

    @contextmanager
    def counting(self, stats: ClientStats) -> Iterator[None]:
        """Count this thread's requests, retries and bytes into ``stats`` inside the block."""
        self._local.sink = stats
        try:
            yield
        finally:
            self._local.sink = None

    @contextmanager
    def bounded(self, deadline: float | None) -> Iterator[None]:
        """No request or retry wait of this thread lasts past ``deadline`` (``time.monotonic``
        seconds) inside the block; None: only ``timeout_s`` per request."""
        self._local.deadline = deadline
        try:
            yield
        finally:
            self._local.deadline = None

    def check(self) -> bool:
        """Whether the server answers at all (prometheus-api-client's connection check)."""
        try:
            return bool(self.connection.check_prometheus_connection())
        except requests.RequestException:
            return False

    def close(self) -> None:
        """Release the session's connections."""
        self.session.close()

    def query_range(
        self, query: str, *, start_s: float, end_s: float, step_s: float
    ) -> ApiResponse:
        """``/api/v1/query_range`` (caller keeps ``(end - start) / step`` under 11,000)."""
        return self._post(
            "/api/v1/query_range",
            {
                "query": query,
                "start": f"{start_s:.3f}",
                "end": f"{end_s:.3f}",
                "step": f"{step_s:g}",
            },
            matrix=True,
        )

    def query(self, query: str, *, time_s: float, matrix: bool = False) -> ApiResponse:
        """``/api/v1/query`` at ``time_s``; ``matrix`` when a range vector is asked for."""
        form = {"query": query, "time": f"{time_s:.3f}"}
        return self._post("/api/v1/query", form, matrix=matrix)

    def remote_read(
        self,
        matchers: Sequence[LabelMatch],
        *,
        start_ms: int,
        end_ms: int,
        describe: str,
        chunks: bool = True,
    ) -> ApiResponse:
        """Raw samples of the series ``matchers`` select in ``[start_ms, end_ms]`` through
        ``/api/v1/read``, as a matrix answer; ``describe`` (the equivalent PromQL selector)
        names the request in errors.

        ``chunks`` asks for Prometheus' stored XOR chunks (``STREAMED_XOR_CHUNKS``,
        ``bot/metrics/xor_chunks.py``), else for decoded samples (``SAMPLES``,
        ``bot/metrics/remote_read.py``); the answer's ``Content-Type`` says which came (a
        server that does not stream chunks answers ``SAMPLES``). Any other answer (404 on an
        API without remote read, a 400 over the server's sample limit, another body, a frame
        with a bad checksum) raises ``RemoteReadUnsupportedError``: the caller reads the same
        samples through the query API instead.
        """
        url = self.url + REMOTE_READ_PATH
        body = encode_read_request(matchers, start_ms, end_ms, chunks=chunks)
        status, content, streamed = self._send_read(url, body, describe)
        if status != 200:
            raise RemoteReadUnsupportedError(
                f"remote read refused: {excerpt(content)}", query=describe, url=url, status=status
            )
        try:
            if streamed:
                series = decode_chunked_response(content, start_ms, end_ms)
            else:
                series = decode_read_response(content)
        except RemoteReadError as exc:
            kind = "streamed chunks" if streamed else "answer"
            raise RemoteReadUnsupportedError(
                f"remote read {kind} unreadable: {exc}", query=describe, url=url, status=status
            ) from exc
        return ApiResponse({"resultType": "matrix"}, (), series)

    def _send_read(self, url: str, body: bytes, describe: str) -> tuple[int, bytes, bool]:
        """(status, content, whether the answer is a chunk stream) of a remote read."""
        headers = {**self._headers, **REMOTE_READ_HEADERS}
        status, content, kind = self._send(url, body, headers, describe)
        return status, content, kind.split(";")[0].strip() == STREAMED_MEDIA_TYPE

    def _post(self, path: str, form: dict[str, str], *, matrix: bool = False) -> ApiResponse:
        url = self.url + path
        # Prometheus reads ``timeout`` as a Go-style duration: "0.5s" and "1e+06s" are refused
        timeout = duration(max(self.config.timeout_s, 0.001))
        body = {**form, **self.config.extra_params, "timeout": timeout}
        query = form["query"]
        status, content, _ = self._send(url, body, self._headers, query)
        decoded = decode_matrix(content) if matrix and status == 200 else None
        if decoded is not None:
            return ApiResponse({"resultType": "matrix"}, decoded.warnings, decoded.series)
        return self._decode(content, status, query=query, url=url)

    def _send(
        self, url: str, body: Mapping[str, str] | bytes, headers: Mapping[str, str], query: str
    ) -> tuple[int, bytes, str]:
        """POST ``body``, retried as the module doc says; (status, content, Content-Type) of
        the answer."""
        config = self.config
        deadline: float | None = getattr(self._local, "deadline", None)
        attempt = 0
        while True:
            limit = config.timeout_s
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PrometheusUnavailableError(
                        "no time left for this fetch (prometheus.fetch_timeout_s, "
                        "or what remained of run.repository_timeout_s)",
                        query=query,
                        url=url,
                    )
                limit = min(limit, left)
            wait: float | None = None
            failure: MetricsError
            try:
                status, content, retry_after, kind = self._post_once(
                    url, body, headers, limit, query
                )
            except _NoAnswer as exc:
                failure = PrometheusUnavailableError(str(exc), query=query, url=url)
            else:
                self._count(requests_=1, bytes_=len(content))
                if status in RETRY_STATUSES:
                    wait = retry_after
                    failure = PrometheusUnavailableError(
                        f"server error: {excerpt(content)}", query=query, url=url, status=status
                    )
                elif status in AUTH_STATUSES:
                    raise PrometheusUnavailableError(
                        "authentication refused", query=query, url=url, status=status
                    )
                else:
                    return status, content, kind
            if attempt >= config.retries:
                raise failure
            delay = min(config.max_backoff_s, config.backoff_s * 2**attempt)
            if wait is not None:
                delay = min(config.max_backoff_s, wait)
            if deadline is not None:
                delay = min(delay, max(0.0, deadline - time.monotonic()))
            attempt += 1
            self._count(retries=1)
            self._sleep(delay)

    def _post_once(
        self,
        url: str,
        body: Mapping[str, str] | bytes,
        headers: Mapping[str, str],
        limit: float,
        query: str,
    ) -> tuple[int, bytes, float | None, str]:
        """One POST (redirects included) that ends within ``limit`` seconds, whatever the
        servers do: status, content, ``Retry-After`` seconds and ``Content-Type``; raises
        ``_NoAnswer`` without a complete answer."""
        config = self.config
        with total_deadline(limit) as guard:
            try:
                answer = exchange(
                    self.session,
                    url,
                    body,
                    headers,
                    auth=self._auth,
                    policy=self._policy,
                    timeout=(min(config.connect_timeout_s, limit), limit),
                    deadline=time.monotonic() + limit,
                    query=query,
                )
            except DeadlineReached as exc:
                raise _NoAnswer(_cut_off(limit)) from exc
            except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
                if guard.fired:
                    raise _NoAnswer(_cut_off(limit)) from exc
                if isinstance(exc, requests.Timeout | urllib3.exceptions.TimeoutError):
                    raise _NoAnswer(f"timed out: {excerpt(str(exc))}") from exc
                raise _NoAnswer(f"cannot connect: {excerpt(str(exc))}") from exc
        if guard.fired:  # the shutdown may look like the end of a body sent without a length
            raise _NoAnswer(_cut_off(limit))
        return answer.status, answer.content, _retry_after_s(answer.retry_after), answer.kind

    def _count(self, **counts: int) -> None:
        sink: ClientStats | None = getattr(self._local, "sink", None)
        if sink is not None:
            sink.add(**counts)

    @staticmethod
    def _decode(content: bytes, status: int, *, query: str, url: str) -> ApiResponse:
        try:
            payload = orjson.loads(content)  # 2-3x faster than json on large answers
        except orjson.JSONDecodeError as exc:
            raise QueryError(
                f"not a JSON answer: {excerpt(content)}", query=query, url=url, status=status
            ) from exc
        if not isinstance(payload, dict):
            raise QueryError("unexpected JSON answer", query=query, url=url, status=status)
        if payload.get("status") != "success":
            kind = excerpt(str(payload.get("errorType", "error")), 40)
            raise QueryError(
                f"{kind}: {excerpt(str(payload.get('error', 'no error message')))}",
                query=query,
                url=url,
                status=status,
            )
        data = payload.get("data")
        if not isinstance(data, dict):
            raise QueryError("answer without data", query=query, url=url, status=status)
        return ApiResponse(data, warnings_of(payload.get("warnings")))
