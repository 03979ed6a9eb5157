"""Tortoise's replica slots replayed in one pass (``replica_slots.c``), called with numpy arrays.

The Python twin is ``bot/recommend/tortoise/replicas.py`` (``replica_slots``).
"""

from __future__ import annotations

import ctypes

import numpy as np

from bot.native import address, kernel

_I64, _F64, _PTR = ctypes.c_int64, ctypes.c_double, ctypes.c_void_p
_SLOTS = [_PTR, _PTR, _I64, _F64, _I64, _I64, _I64, _F64, _F64, _I64, _I64, _F64, _F64]
_SLOTS += [_PTR, _PTR, _PTR, _PTR]
"""``tb_replica_slots(t*, r*, n, offset_s, width, daily, n_slots, min_mult, max_mult, floor,
max_floor, decay_age, decay_factor, lo*, hi*, seen*, last_end*) -> 0 | -1``."""


def slots(
    times_s: np.ndarray,
    replicas: np.ndarray,
    *,
    offset_s: float,
    width: int,
    daily: bool,
    n_slots: int,
    min_multiplier: float,
    max_multiplier: float,
    floor: int,
    max_floor: int,
    decay_age_s: float,
    decay_factor: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per slot (minReplicas, maxReplicas, seen) of replicas at ``times_s`` (in order, one UTC
    offset), or None: run the twin."""
    function = kernel("tb_replica_slots", ctypes.c_int, _SLOTS)
    if function is None or times_s.size != replicas.size or n_slots < 1:
        return None
    t = np.ascontiguousarray(times_s, dtype=np.float64)
    r = np.ascontiguousarray(replicas, dtype=np.float64)
    out = np.empty((3, n_slots), dtype=np.int64)
    last_end = np.empty(n_slots)
    base = address(out)
    status = function(
        address(t),
        address(r),
        t.size,
        offset_s,
        width,
        int(daily),
        n_slots,
        min_multiplier,
        max_multiplier,
        floor,
        max_floor,
        decay_age_s,
        decay_factor,
        base,
        base + 8 * n_slots,
        base + 16 * n_slots,
        address(last_end),
    )
    return (out[0], out[1], out[2].astype(bool)) if status == 0 else None
