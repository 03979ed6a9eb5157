"""Prometheus' XOR chunks decoded in C (``xor_chunks.c``), called with numpy arrays.

The numpy twin, and the encoding, are in ``bot/metrics/xor_chunks.py`` (``decode_xor``).
"""

from __future__ import annotations

import ctypes

import numpy as np

from bot.native import kernel

_I64, _PTR = ctypes.c_int64, ctypes.c_void_p
_SIGNATURE = [_PTR, _I64, _PTR, _PTR, _I64, _PTR, _PTR, _PTR, _PTR]
"""``tb_xor_decode(data*, size, starts*, ends*, n, offsets*, out_t*, out_v*, where*) -> status``."""

OK = 0
TABLE = 1
"""The chunk spans or sample offsets do not fit the data."""
FEWER_BITS = 2
"""A chunk announces more samples than its bits can hold."""
VARINT = 3
"""A varint longer than 10 bytes in a chunk."""
PAST_END = 4
"""A chunk's samples run past its end."""
WINDOW = 5
"""An XOR window of more than 64 bits (leading zeros + significant bits)."""


def decode(
    data: bytes, starts: np.ndarray, ends: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int, int] | None:
    """(times ms ``int64``, value bits ``uint64``, status, chunk) of the XOR chunks at
    ``data[starts[i]:ends[i]]``, chunk ``i``'s samples at ``offsets[i]:offsets[i + 1]``
    (``offsets``: ``n + 1`` sample offsets from 0, each chunk's count as its first two bytes
    say); status ``OK`` or the first error met (module constants) and the chunk that has it.
    ``None`` when the kernel is not built: run the twin then."""
    run = kernel("tb_xor_decode", ctypes.c_int, _SIGNATURE)
    if run is None:
        return None
    buffer = np.frombuffer(data, dtype=np.uint8)
    first = np.ascontiguousarray(starts, dtype=np.int64)
    last = np.ascontiguousarray(ends, dtype=np.int64)
    offset = np.ascontiguousarray(offsets, dtype=np.int64)
    if not (len(first) == len(last) == len(offset) - 1):
        raise ValueError("starts, ends and offsets of different chunks")
    total = int(offset[-1])
    out_t = np.empty(max(total, 0), dtype=np.int64)
    out_v = np.empty(max(total, 0), dtype=np.uint64)
    where = ctypes.c_int64(-1)
    status = run(
        buffer.ctypes.data,
        len(buffer),
        first.ctypes.data,
        last.ctypes.data,
        len(first),
        offset.ctypes.data,
        out_t.ctypes.data,
        out_v.ctypes.data,
        ctypes.addressof(where),
    )
    return out_t, out_v, int(status), where.value
