"""Two neighbouring order statistics in C (``order_pair.c``), called with numpy arrays."""

from __future__ import annotations

import ctypes

import numpy as np

from bot.native import address, kernel

_PAIR = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
"""``tb_order_pair(v*, n, k, scratch*, out*) -> 0 | -1``."""


def order_pair(values: np.ndarray, k: int) -> tuple[float, float] | None:
    """The ``k``-th and ``k + 1``-th smallest of ``values`` (0-based; a contiguous float64
    array, left as it is); None when the kernel is absent or refuses (a value that is not
    finite, a negative zero, ``k`` out of range): run the twin then."""
    function = kernel("tb_order_pair", ctypes.c_int, _PAIR)
    n = values.size
    if function is None or values.dtype != np.float64 or not values.flags.c_contiguous:
        return None
    if not 0 <= k < n - 1:
        return None
    buffer = np.empty(n + 2)  # the kernel's scratch, then its two values
    base = address(buffer)
    if function(address(values), n, k, base, base + 8 * n) != 0:
        return None
    return float(buffer[n]), float(buffer[n + 1])
