"""One request to Prometheus, redirects included, within a total deadline and a size bound.

``exchange`` sends a POST and follows the redirects ``follow_redirects`` allows
(``same-host``, ``off``, ``any``), itself, not through ``requests``, so that:

- every hop runs inside the caller's ``total_deadline`` (``bot/metrics/deadline.py``): the
  session's adapters watch connections to any host, and each chunk read checks the clock;
- no configured secret goes to another host: ``Authorization``, basic authentication and each
  ``headers_from_env`` header are sent to the configured host only;
- an answer is read in chunks and refused once its ``Content-Length`` or the bytes read (after
  decompression) pass ``max_response_bytes``, so memory stays bounded whatever the server
  sends.

A redirect not followed and an answer over the bound raise ``MetricsError`` subclasses at once
(retrying would get the same); a deadline that passes raises ``DeadlineReached``.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import requests

from bot.metrics.errors import PrometheusUnavailableError, QueryError
from bot.redaction import strip_url_credentials

MAX_REDIRECTS = 5
"""Redirects followed by one request at most."""

READ_CHUNK = 1 << 20
"""Bytes asked of the connection per read (urllib3 also caps what one read decompresses)."""

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
"""Statuses with a ``Location`` to follow; the same POST is sent again there (queries are
read-only; turning a 303 into a GET would lose the query)."""

_DEFAULT_PORTS = {"http": 80, "https": 443}


class DeadlineReached(Exception):  # noqa: N818  (an outcome, retried by the caller)
    """The request's total deadline passed while an answer was being read."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A complete answer: status, body, ``Retry-After`` and ``Content-Type`` headers."""

    status: int
    content: bytes
    retry_after: str | None
    kind: str


@dataclass(frozen=True, slots=True)
class Policy:
    """What one client allows: the redirect policy, the size bound and its secret headers."""

    follow_redirects: str
    max_response_bytes: int
    secret_headers: Collection[str]


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS.get(scheme)


def same_host(configured: str, location: str) -> bool:
    """Whether ``location`` is on the host and port of ``configured`` (or is its ``https``
    form on the default port, the upgrade ``requests`` also keeps credentials for)."""
    scheme, host, port = _origin(configured)
    to_scheme, to_host, to_port = _origin(location)
    if host != to_host:
        return False
    if (scheme, port) == (to_scheme, to_port):
        return True
    return (scheme, port, to_scheme, to_port) == ("http", 80, "https", 443)


def _without_secrets(headers: Mapping[str, str], secret_headers: Collection[str]) -> dict[str, str]:
    secret = {h.lower() for h in (*secret_headers, "authorization")}
    return {k: v for k, v in headers.items() if k.lower() not in secret}


def exchange(
    session: requests.Session,
    url: str,
    body: Mapping[str, str] | bytes,
    headers: Mapping[str, str],
    *,
    auth: tuple[str, str] | None,
    policy: Policy,
    timeout: tuple[float, float],
    deadline: float,
    query: str,
) -> Answer:
    """POST ``body`` to ``url`` and read the answer as the module doc says; ``deadline`` is
    the ``time.monotonic`` second the whole exchange must end by."""
    target, send_headers, send_auth = url, dict(headers), auth
    for _hop in range(MAX_REDIRECTS + 1):
        response = session.post(
            target,
            data=body,
            headers=send_headers,
            auth=send_auth,
            timeout=timeout,
            stream=True,
            allow_redirects=False,
        )
        try:
            location = response.headers.get("Location")
            if response.status_code in REDIRECT_STATUSES and location:
                following = urljoin(target, location)
                _check_redirect(url, following, policy.follow_redirects, query)
                if not same_host(url, following):
                    send_headers = _without_secrets(send_headers, policy.secret_headers)
                    send_auth = None
                target = following
                continue
            content = _read(response, policy.max_response_bytes, deadline, query, url)
            return Answer(
                response.status_code,
                content,
                response.headers.get("Retry-After"),
                response.headers.get("Content-Type", ""),
            )
        finally:
            response.close()
    raise PrometheusUnavailableError(
        f"more than {MAX_REDIRECTS} redirects", query=query, url=strip_url_credentials(url)
    )


def _check_redirect(url: str, location: str, policy: str, query: str) -> None:
    """Raise when ``policy`` does not follow a redirect from ``url`` to ``location``."""
    if policy == "any" or (policy == "same-host" and same_host(url, location)):
        return
    _, host, port = _origin(location)
    where = f"{host}:{port}" if port else host
    why = "redirects are off" if policy == "off" else "it is another host"
    raise PrometheusUnavailableError(
        f"redirected to {where} ({strip_url_credentials(location)}), not followed: {why} "
        "(prometheus.follow_redirects)",
        query=query,
        url=url,
    )


def _read(response: requests.Response, limit: int, deadline: float, query: str, url: str) -> bytes:
    """The whole (decoded) body, refused past ``limit`` bytes or ``deadline``."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(f"announces {int(declared):,} bytes", limit, query, url)
    chunks: list[bytes] = []
    size = 0
    for chunk in response.raw.stream(READ_CHUNK, decode_content=True):
        size += len(chunk)
        if size > limit:
            raise _too_large(f"passed {limit:,} bytes and was cut", limit, query, url)
        if time.monotonic() > deadline:
            raise DeadlineReached
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(what: str, limit: int, query: str, url: str) -> QueryError:
    return QueryError(
        f"answer too large: it {what}; prometheus.max_response_bytes is {limit:,} "
        "(a narrower query, fewer containers per namespace, or a higher bound)",
        query=query,
        url=url,
    )
