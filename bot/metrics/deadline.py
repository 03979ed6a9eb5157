"""A total deadline for one HTTP request: connect, send, the answer's headers and its whole body.

``requests`` (urllib3) applies a read timeout to each socket read, so a server that sends one
byte per second never times out. Here, while a request runs inside ``total_deadline(s)``, the
connection it uses registers its socket with a guard; a timer shuts the socket down after ``s``
seconds, which ends whatever read or write is blocked on it (``shutdown`` wakes a blocked
``recv``, unlike ``close``). The request then fails, and ``guard.fired`` tells the caller that
the deadline, not the server, ended it (a body cut short by the shutdown is never taken for a
complete answer).

``DeadlineAdapter`` is the ``requests`` transport adapter whose connections register; it is
mounted for the Prometheus URL only. A connection returned to the pool leaves its guard first,
so a late timer never touches a connection another request took.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.poolmanager import PoolManager

_LOCAL = threading.local()
"""The guard of the request this thread is sending, if any."""


class Guard:
    """The deadline of one request: the socket it watches and whether it fired."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._done = False
        self.fired = False

    def watch(self, sock: socket.socket | None) -> None:
        """The request now uses ``sock`` (shut at once when the deadline already passed)."""
        with self._lock:
            if self._done or sock is None:
                return
            self._sock = sock
            if self.fired:
                _shut(sock)

    def release(self, sock: socket.socket | None) -> None:
        """``sock`` goes back to the pool: never shut it from now on."""
        with self._lock:
            if self._sock is sock:
                self._sock = None

    def fire(self) -> None:
        """The deadline passed: end the request's socket I/O."""
        with self._lock:
            if self._done:
                return
            self.fired = True
            if self._sock is not None:
                _shut(self._sock)

    def finish(self) -> None:
        """The request is over, whatever its outcome."""
        with self._lock:
            self._done = True
            self._sock = None


def _shut(sock: socket.socket) -> None:
    with suppress(OSError):  # already closed or never connected
        sock.shutdown(socket.SHUT_RDWR)


def _current() -> Guard | None:
    guard: Guard | None = getattr(_LOCAL, "guard", None)
    return guard


@contextmanager
def total_deadline(seconds: float) -> Iterator[Guard]:
    """Bound the requests this thread sends inside the block to ``seconds`` in total."""
    guard = Guard()
    _LOCAL.guard = guard
    timer = threading.Timer(max(0.0, seconds), guard.fire)
    timer.daemon = True
    timer.start()
    try:
        yield guard
    finally:
        guard.finish()
        timer.cancel()
        _LOCAL.guard = None


class _Watched:
    """Connection mixin: register the socket with the thread's guard when connecting and
    before each request on a kept-alive connection."""

    sock: socket.socket | None

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        guard = _current()
        if guard is not None:
            guard.watch(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:
        guard = _current()
        if guard is not None:
            guard.watch(self.sock)
        super().request(*args, **kwargs)  # type: ignore[misc]


class _HTTPConnection(_Watched, HTTPConnection):
    pass


class _HTTPSConnection(_Watched, HTTPSConnection):
    pass


class _Release:
    """Pool mixin: a connection put back leaves the guard of the request that used it."""

    def _put_conn(self, conn: Any) -> None:
        guard = _current()
        if guard is not None and conn is not None:
            guard.release(getattr(conn, "sock", None))
        super()._put_conn(conn)  # type: ignore[misc]


class _HTTPPool(_Release, HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(_Release, HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


_POOLS = {"http": _HTTPPool, "https": _HTTPSPool}


class DeadlineAdapter(HTTPAdapter):
    """An ``HTTPAdapter`` whose connections obey ``total_deadline`` (directly or via a proxy)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOLS)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> PoolManager:
        manager: PoolManager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = dict(_POOLS)
        return manager
