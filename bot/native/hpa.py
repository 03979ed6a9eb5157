"""The HPA controller's walk (``hpa_replay.c``), called with numpy arrays.

The Python twin and the model are ``bot/recommend/replay/controller.py`` (``walk_in_python``).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

from bot.native import address, kernel

_I64, _F64, _PTR = ctypes.c_int64, ctypes.c_double, ctypes.c_void_p
_SIGNATURE = [_PTR, _PTR, _PTR, _I64, _I64, _I64, _I64, _I64, _I64, _I64, _PTR, _PTR]
"""``tb_hpa_replay(usage**, request*, target*, metrics, n, min, max, initial, syncs, window,
out*, reach*) -> 0 | -1``."""

_RATE_LIMIT = [_PTR, _I64, _I64]
"""``tb_rate_limit(path*, n, syncs) -> 0 | -1``."""

METRICS_MAX = 64
"""Metrics one walk takes (``hpa_replay.c``); an HPA has a handful."""

WINDOW_MAX = 4096
"""Steps the stabilisation window may span (``hpa_replay.c``): 300 s at steps of 74 ms."""


def _columns(usage: Sequence[np.ndarray]) -> tuple[list[np.ndarray], ctypes.Array[Any]]:
    """The usage of each metric as a contiguous ``float64`` column and a C array of their
    addresses, for a ``usage**`` argument (``ctypes.addressof`` of it; keep both alive for the
    call)."""
    columns = [np.ascontiguousarray(u, dtype=np.float64) for u in usage]
    pointers = (ctypes.c_void_p * max(len(columns), 1))(*[address(c) for c in columns])
    return columns, pointers


def walk(
    usage: Sequence[np.ndarray],
    requests: Sequence[float],
    targets: Sequence[float],
    *,
    min_replicas: int,
    max_replicas: int,
    initial: int,
    syncs: int,
    window: int,
) -> tuple[np.ndarray, float] | None:
    """Replicas per step (``int64``) and the reach, or ``None`` when the kernel is not built
    or the walk is beyond its bounds (``METRICS_MAX``, ``WINDOW_MAX``): run the twin then.
    ``usage``: one array per metric, all of one length; ``requests`` > 0, ``targets`` > 0."""
    replay = kernel("tb_hpa_replay", ctypes.c_int, _SIGNATURE)
    if replay is None or not usage or len(usage) > METRICS_MAX or not 1 <= window <= WINDOW_MAX:
        return None
    columns, pointers = _columns(usage)
    n = columns[0].size
    if any(c.size != n for c in columns) or not len(requests) == len(targets) == len(columns):
        raise ValueError(
            "hpa.walk: every metric needs a usage array of one length, a request and a target"
        )
    request = np.asarray(requests, dtype=np.float64)
    target = np.asarray(targets, dtype=np.float64)
    out = np.empty(n, dtype=np.int64)
    reach = ctypes.c_double()
    status = replay(
        ctypes.addressof(pointers),
        address(request),
        address(target),
        len(columns),
        n,
        min_replicas,
        max_replicas,
        initial,
        syncs,
        window,
        address(out),
        ctypes.addressof(reach),
    )
    return (out, reach.value) if status == 0 else None


def rate_limit(path: np.ndarray, syncs: int) -> bool:
    """Slow every too-fast rise of ``path`` (a contiguous ``int64`` array, in place) to the
    scale-up limit (``_rate_limited``); False when the kernel is absent or ``syncs`` is beyond
    its bound (the path is untouched: run the twin then)."""
    limit = kernel("tb_rate_limit", ctypes.c_int, _RATE_LIMIT)
    if limit is None:
        return False
    if path.dtype != np.int64 or not path.flags.c_contiguous or not path.flags.writeable:
        raise ValueError("rate_limit: expected a writeable contiguous int64 array")
    return bool(limit(address(path), path.size, syncs) == 0)


_FAST = [_PTR, _PTR, _PTR, _PTR, _I64, _I64, _I64, _I64, _F64, _F64, _I64, _I64]
_FAST += [_PTR, _PTR, _PTR, _PTR, _PTR]
"""``tb_hpa_fast(usage**, request*, target*, scale*, metrics, n, min, max, start, reach0, syncs,
window, path*, passed*, desired*, out*, reach*) -> 0 | -1``."""


def fast(
    usage: Sequence[np.ndarray],
    requests: Sequence[float],
    targets: Sequence[float],
    scales: Sequence[float],
    *,
    min_replicas: int,
    max_replicas: int,
    start: float,
    reach: float,
    syncs: int,
    window: int,
    scratch: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, float] | None:
    """``replay_fast_reach``'s replicas per step (``int64``, before the scale-up rate limit)
    and its reach, in one compiled pass; None when the kernel is absent or refuses (the
    numpy model then). ``scratch``: three contiguous float64 arrays of the usage's length."""
    function = kernel("tb_hpa_fast", ctypes.c_int, _FAST)
    if function is None or not usage or len(usage) > METRICS_MAX:
        return None
    columns, pointers = _columns(usage)
    n = columns[0].size
    if any(c.size != n for c in columns) or not (
        len(requests) == len(targets) == len(scales) == len(columns)
    ):
        raise ValueError("hpa.fast: every metric needs a usage array of one length and its figures")
    if any(
        a.size != n or a.dtype != np.float64 or not a.flags.c_contiguous or not a.flags.writeable
        for a in scratch
    ):
        raise ValueError("hpa.fast: scratch must be three writeable float64 arrays of length n")
    figures = np.array([requests, targets, scales], dtype=np.float64)
    out = np.empty(n, dtype=np.int64)
    reached = ctypes.c_double()
    status = function(
        ctypes.addressof(pointers),
        address(figures[0]),
        address(figures[1]),
        address(figures[2]),
        len(columns),
        n,
        min_replicas,
        max_replicas,
        start,
        reach,
        syncs,
        window,
        *(address(a) for a in scratch),
        address(out),
        ctypes.addressof(reached),
    )
    return (out, reached.value) if status == 0 else None


_SHORTFALL = [_PTR, _I64, _PTR, _PTR, _PTR, _I64, _I64, _I64, _PTR]
"""``tb_hpa_shortfall(path*, n, usage**, request*, above*, metrics, max, lag, out*) -> count``."""


def shortfall(
    path: np.ndarray,
    usage: Sequence[np.ndarray],
    requests: Sequence[float],
    above: Sequence[float],
    *,
    max_replicas: int,
    lag: int,
) -> np.ndarray | None:
    """The steps of capacity shortfall of ``path`` (a contiguous ``int64`` array; bool array),
    in one compiled pass; None when the kernel is absent or refuses (numpy then)."""
    function = kernel("tb_hpa_shortfall", ctypes.c_int64, _SHORTFALL)
    if function is None or len(usage) > METRICS_MAX or path.dtype != np.int64:
        return None
    columns, pointers = _columns(usage)
    n = path.size
    if any(c.size != n for c in columns) or not len(requests) == len(above) == len(columns):
        raise ValueError("hpa.shortfall: every metric needs a usage array of the path's length")
    steps = np.ascontiguousarray(path)
    figures = np.array([requests, above], dtype=np.float64).reshape(2, len(columns))
    out = np.empty(n, dtype=np.bool_)
    found = function(
        address(steps),
        n,
        ctypes.addressof(pointers),
        address(figures[0]) if columns else None,
        address(figures[1]) if columns else None,
        len(columns),
        max_replicas,
        lag,
        address(out),
    )
    return out if found >= 0 else None
