"""Calls of one function spread over worker processes, each result handed back in the order the
calls were made (``run.processes``; the pipeline recommends a large repository's workloads so).

``OrderedPool(processes, done=..., lost=...)``: ``submit(key, function, *args)`` calls
``function(*args)`` and ``done(key, result)`` with its result. With one process the call is
made at once in this process, exactly as a plain loop would. With more, ``function`` and its
arguments are pickled by ``submit`` (at pickle's highest protocol: numpy arrays as whole
buffers; what cannot be pickled raises there) to one of ``processes`` workers started from a
clean server process
(``forkserver``: never a fork of this process and its threads); at most ``in_flight`` calls
(twice the processes by default) are out at once, so the caller's data is held for those only,
and ``done`` is called in submission order as results come back (``submit`` waits for the
oldest when the limit is reached; ``finish`` waits for all). An exception ``function`` raises
reaches the caller from ``submit`` or ``finish`` as in a plain loop; a worker that ends without
answering (killed, out of memory) loses only the calls it and its pool held: each gets
``lost(key, error)`` as its result and the next calls go to a new pool.
"""

from __future__ import annotations

import contextlib
import logging
import math
import multiprocessing
import os
import pickle
import tempfile
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, Future, ProcessPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, Generic, TypeVar

from bot.logs import JsonFormatter, setup_logging

R = TypeVar("R")

PRELOAD = ["bot.pipeline.plan"]
"""Imported once by the server process the workers are forked from, not by each worker."""


WARM_UP_S = 0.01
"""What each worker's first call, made by ``start``, waits: long enough that no worker is idle
before every worker is started."""

CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
"""cgroup v2's CPU quota: ``QUOTA PERIOD`` (µs) or ``max PERIOD`` (a container's CPU limit)."""


def usable_cores(cpu_max: Path = CPU_MAX) -> int:
    """The cores this process may use: its affinity, fewer under a cgroup CPU quota (a
    Kubernetes CPU limit of 1.5 gives 2, rounded up), at least 1."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        quota, period = cpu_max.read_text().split()[:2]
        if quota != "max":
            cores = min(cores or 1, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        pass  # no cgroup v2 quota readable: the affinity alone
    return max(1, cores or 1)


def _call_pickled(call: bytes) -> Any:
    """The call ``OrderedPool.submit`` pickled: ``function(*args, **kwargs)``."""
    function, args, kwargs = pickle.loads(call)
    return function(*args, **kwargs)


def _log_like(json_lines: bool, level: int) -> None:
    """A worker's ``bot`` loggers write as this process's do (format, level, redaction)."""
    setup_logging("json" if json_lines else "text", logging.getLevelName(level))


UNIX_PATH_MAX = 107
"""Bytes an AF_UNIX socket path may hold (``sun_path``, 108 with its terminating NUL)."""

SOCKET_SUFFIX = len("/pymp-xxxxxxxx/listener-xxxxxxxx")
"""What multiprocessing's forkserver adds to the temporary directory for its socket."""


def forkserver_socket_fits() -> bool:
    """Whether the forkserver's socket path fits under the temporary directory (a long TMPDIR
    would fail the pool with ``AF_UNIX path too long``)."""
    return len(os.fsencode(tempfile.gettempdir())) + SOCKET_SUFFIX <= UNIX_PATH_MAX


def _rehearse(function: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """Call ``function(*args)`` and discard what it returns, raises or logs: only a death
    counts (the caller makes the same call and reports the rest once)."""
    logging.disable(logging.CRITICAL)
    with contextlib.suppress(BaseException):
        function(*args)


def rehearse(function: Callable[..., Any], *args: Any, timeout_s: float) -> int | None:
    """Make the call ``function(*args)`` once in a worker process (from the same clean server
    process the pools use) and say whether a process survives it: None when the worker ended
    on its own (whatever the call returned or raised) or was still running after
    ``timeout_s`` (then it is killed), else the signal that killed it (a segmentation fault in
    a C extension, the kernel's out-of-memory killer).

    For a step that reads untrusted input through C code: rehearsed first, a crash fails the
    one repository it belongs to instead of ending the whole run. Where the worker cannot be
    started (see ``forkserver_socket_fits``) the call is not rehearsed (None)."""
    if not forkserver_socket_fits():
        return None
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    worker = context.Process(target=_rehearse, args=(function, args), daemon=True)
    worker.start()
    worker.join(max(0.0, timeout_s))
    if worker.is_alive():
        worker.kill()
        worker.join()
        return None
    code = worker.exitcode
    return -code if code is not None and code < 0 else None


class OrderedPool(Generic[R]):
    """See the module doc. Use as a context manager: leaving it stops the workers."""

    def __init__(
        self,
        processes: int,
        *,
        done: Callable[[int, R], None],
        lost: Callable[[int, Exception], R],
        in_flight: int | None = None,
    ) -> None:
        self.processes = max(1, processes)
        if self.processes > 1 and not forkserver_socket_fits():
            logging.getLogger(__name__).warning(
                "the temporary directory %s is too long a path for the worker processes' "
                "socket (AF_UNIX paths hold %d bytes): running in this process (set TMPDIR "
                "to a shorter path to use %d processes)",
                tempfile.gettempdir(),
                UNIX_PATH_MAX,
                self.processes,
            )
            self.processes = 1
        self._done = done
        self._lost = lost
        self._limit = max(1, in_flight if in_flight is not None else 2 * self.processes)
        self._pending: deque[tuple[int, Future[R], ProcessPoolExecutor]] = deque()
        self._executor: ProcessPoolExecutor | None = None

    def _start(self) -> ProcessPoolExecutor:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        bot_log = logging.getLogger("bot")
        json_lines = any(isinstance(h.formatter, JsonFormatter) for h in bot_log.handlers)
        return ProcessPoolExecutor(
            self.processes,
            mp_context=context,
            initializer=_log_like,
            initargs=(json_lines, bot_log.getEffectiveLevel()),
        )

    def start(self) -> None:
        """Start the workers now (with more than one process), not at the first ``submit``: the
        server process's imports and the workers' start-up then overlap whatever the caller
        does before its first call (waiting for the history)."""
        if self.processes == 1 or self._executor is not None:
            return
        self._executor = self._start()
        # a forkserver pool starts a worker per call while none is idle: one short call each
        for _ in range(self.processes):
            self._executor.submit(time.sleep, WARM_UP_S)

    def submit(self, key: int, function: Callable[..., R], *args: Any, **kwargs: Any) -> None:
        """``done(key, function(*args, **kwargs))``, now (one process) or once the earlier calls
        are done."""
        if self.processes == 1:
            self._done(key, function(*args, **kwargs))
            return
        while len(self._pending) >= self._limit:
            self._collect_oldest()
        if self._executor is None:
            self._executor = self._start()
        executor = self._executor
        # pickled here at the highest protocol: numpy arrays go as whole buffers, where the
        # worker queue's own pickling (protocol 4) copies each through ``tobytes``, several
        # times slower for a workload's history; the queue then passes on one bytes object
        call = pickle.dumps((function, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            future = executor.submit(_call_pickled, call)
        except BrokenExecutor as exc:
            self._restart(executor)
            self._done(key, self._lost(key, exc))
            return
        self._pending.append((key, future, executor))

    def finish(self) -> None:
        """Wait for every call submitted, handing each result to ``done`` in order."""
        while self._pending:
            self._collect_oldest()

    def _collect_oldest(self) -> None:
        key, future, executor = self._pending.popleft()
        try:
            result = future.result()
        except BrokenExecutor as exc:
            self._restart(executor)
            result = self._lost(key, exc)
        self._done(key, result)

    def _restart(self, broken: ProcessPoolExecutor) -> None:
        """Drop ``broken`` if it is still the pool in use; the next ``submit`` starts a new one."""
        if self._executor is broken:
            broken.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def __enter__(self) -> OrderedPool[R]:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
        self._pending.clear()
