"""A bound on the size of every GitHub REST answer (``github.max_response_bytes``).

PyGithub reads each answer whole into memory (``requests`` without ``stream``), so a server or
proxy that answers one endpoint with a huge or endless body would grow the process until it is
killed. The bound is read where the body is read: PyGithub's ``Requester`` opens its HTTP
connections through the connection classes named on the class (``HTTPRequestsConnectionClass``
and its HTTPS twin), each owning one ``requests.Session``; ``install`` replaces those two classes
with subclasses whose session carries a response hook. The hook runs before ``requests`` reads
the body: it refuses a ``Content-Length`` over the bound without reading, else reads the body in
chunks and stops as soon as it passes the bound, closing the connection. PyGithub's public
``Requester.injectConnectionClasses`` would do the same but turns connection reuse off for every
request; replacing the classes keeps it.

The bound travels with the client: ``BoundedRetry`` (PyGithub's ``GithubRetry`` plus the bound)
is the one per-client value PyGithub hands to every connection it opens, including those of the
requesters it derives (an App's installation token, ``withAuth``, ``withLazy``). A client built
with another retry policy reads its answers unbounded, as PyGithub does.

An answer over the bound raises ``AnswerTooLarge`` (a ``requests.RequestException``) out of the
PyGithub call; ``bot.forge.github.api.translated`` turns it into a ``ForgeError`` that fails the
repository it came from.
"""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import urlsplit

import requests
from github import GithubRetry
from github.Requester import (
    HTTPRequestsConnectionClass,
    HTTPSRequestsConnectionClass,
    Requester,
)

from bot.redaction import redact

READ_CHUNK_BYTES = 256 * 1024
"""Bytes asked of the socket per read of an answer's body."""

_CONNECTION_ATTRS = ("_Requester__httpConnectionClass", "_Requester__httpsConnectionClass")
"""Where ``Requester.__init__`` finds the connection classes it opens (class attributes)."""

_INSTALL_LOCK = threading.Lock()


class AnswerTooLarge(requests.RequestException):
    """GitHub's answer to ``endpoint`` (``METHOD /path?query``) passed ``limit`` bytes; ``declared``
    is its ``Content-Length`` when that alone told (nothing was read then)."""

    def __init__(self, endpoint: str, limit: int, declared: int | None = None) -> None:
        self.endpoint = endpoint
        self.limit = limit
        self.declared = declared
        told = (
            f"it declares {declared:,} bytes, not read"
            if declared is not None
            else "stopped reading there"
        )
        super().__init__(
            f"the answer to {endpoint} is larger than github.max_response_bytes "
            f"({limit:,} bytes): {told}"
        )


class BoundedRetry(GithubRetry):
    """PyGithub's retry policy carrying ``max_response_bytes`` to every connection of a client
    (None: unbounded); copies made by urllib3 (``new``) keep it."""

    def __init__(self, *, max_response_bytes: int | None = None, **kwargs: Any) -> None:
        self.max_response_bytes = max_response_bytes
        super().__init__(**kwargs)

    def new(self, **kw: Any) -> BoundedRetry:
        kw["max_response_bytes"] = self.max_response_bytes
        copy: BoundedRetry = super().new(**kw)
        return copy


def endpoint(response: requests.Response) -> str:
    """``METHOD /path?query`` of the request ``response`` answers (no host, no credentials)."""
    request = response.request
    parts = urlsplit(request.url or "")
    query = f"?{parts.query}" if parts.query else ""
    return redact(f"{request.method} {parts.path}{query}")


def read_bounded(response: requests.Response, limit: int) -> None:
    """Read ``response``'s body into it (``response.content``) unless it passes ``limit`` bytes:
    then close the connection and raise ``AnswerTooLarge`` (``Content-Length`` first, so a
    declared oversize is refused without reading)."""
    declared = response.headers.get("Content-Length", "")
    if response.request.method == "HEAD":  # a length without a body
        declared = ""
    if declared.isdigit() and int(declared) > limit:
        response.close()
        raise AnswerTooLarge(endpoint(response), limit, int(declared))
    body = bytearray()  # grows in place: no second copy of what was read while reading
    for chunk in response.iter_content(READ_CHUNK_BYTES):
        if len(body) + len(chunk) > limit:
            del body
            response.close()
            raise AnswerTooLarge(endpoint(response), limit)
        body += chunk
    response._content = bytes(body)


def bound_session(session: requests.Session, retry: object) -> None:
    """Bound every answer ``session`` reads when ``retry`` carries a bound (``BoundedRetry``)."""
    limit = getattr(retry, "max_response_bytes", None)
    if not isinstance(limit, int):
        return

    def hook(response: requests.Response, *args: Any, **kwargs: Any) -> requests.Response:
        if not kwargs.get("stream"):  # a streamed answer is read by its caller
            read_bounded(response, limit)
        return response

    session.hooks["response"].append(hook)


class BoundedHTTPConnection(HTTPRequestsConnectionClass):
    """PyGithub's HTTP connection whose session reads answers within the client's bound."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        bound_session(self.session, self.retry)


class BoundedHTTPSConnection(HTTPSRequestsConnectionClass):
    """PyGithub's HTTPS connection whose session reads answers within the client's bound."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        bound_session(self.session, self.retry)


def install() -> None:
    """Make PyGithub open its connections through the bounded classes (once per process; a
    client without a ``BoundedRetry`` is unaffected). Raises ``RuntimeError`` when PyGithub no
    longer names its connection classes where this expects them, rather than run unbounded."""
    pairs = zip(
        _CONNECTION_ATTRS,
        (HTTPRequestsConnectionClass, HTTPSRequestsConnectionClass),
        (BoundedHTTPConnection, BoundedHTTPSConnection),
        strict=True,
    )
    with _INSTALL_LOCK:
        for attr, stock, bounded in pairs:
            current = getattr(Requester, attr, None)
            if current is bounded:
                continue
            if current is not stock:
                raise RuntimeError(
                    f"PyGithub's Requester.{attr} is {current!r}, not {stock.__name__}: "
                    "the bound on GitHub's answers cannot be installed"
                )
            setattr(Requester, attr, bounded)


__all__ = [
    "AnswerTooLarge",
    "BoundedHTTPConnection",
    "BoundedHTTPSConnection",
    "BoundedRetry",
    "install",
    "read_bounded",
]
