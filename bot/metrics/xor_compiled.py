"""The compiled XOR-chunk decoder (``xor_library.py`` loads it) called with numpy arrays: the
output arrays are sized and allocated here, every argument passed as an address. Used by
``xor_chunks.py`` when ``xor_library.AVAILABLE``; its numpy reference is there.
"""

from __future__ import annotations

import ctypes

import numpy as np

from bot.metrics.xor_library import SAMPLES as _SAMPLES
from bot.metrics.xor_library import TABLE as _TABLE

CHUNK_MAX = 65536
"""Samples one chunk may hold (a 16-bit count)."""

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


def _at(array: np.ndarray) -> int:
    """The address of a C-contiguous array's first element."""
    return int(array.ctypes.data)


def samples(
    data: bytes,
    starts: np.ndarray,
    ends: np.ndarray,
    offsets: np.ndarray,
    *,
    start_ms: int,
    end_ms: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """(times s ``float64``, value bits ``uint64``, samples kept per chunk, status, chunk) of
    the XOR chunks at ``data[starts[i]:ends[i]]`` (``offsets``: ``n + 1`` sample offsets from
    0, each chunk's count as its first two bytes say): the samples in ``[start_ms, end_ms]``
    without stale markers, as ``xor_chunks.py``'s ``decode_xor`` and ``_kept`` give them;
    status ``OK`` or the first error met (module constants) and the chunk that has it. Only
    when ``AVAILABLE``."""
    if _SAMPLES is None:
        raise RuntimeError("the compiled XOR decoder is not built")
    buffer = np.frombuffer(data, dtype=np.uint8)
    first = np.ascontiguousarray(starts, dtype=np.int64)
    last = np.ascontiguousarray(ends, dtype=np.int64)
    offset = np.ascontiguousarray(offsets, dtype=np.int64)
    if not (len(first) == len(last) == len(offset) - 1):
        raise ValueError("starts, ends and offsets of different chunks")
    total = max(int(offset[-1]), 0)
    scratch = np.empty(CHUNK_MAX, dtype=np.int64)
    out_s = np.empty(total, dtype=np.float64)
    out_v = np.empty(total, dtype=np.uint64)
    kept = np.zeros(len(first), dtype=np.int64)
    where = ctypes.c_int64(-1)
    status = _SAMPLES(
        _at(buffer),
        len(buffer),
        _at(first),
        _at(last),
        len(first),
        _at(offset),
        start_ms,
        end_ms,
        _at(scratch),
        _at(out_s),
        _at(out_v),
        _at(kept),
        ctypes.addressof(where),
    )
    n = int(kept.sum()) if status == OK else 0
    return out_s[:n], out_v[:n], kept, int(status), where.value


SPACE = 10
"""A table was too small (``table`` calls again with the sizes found)."""

TABLE_ERRORS: dict[int, str] = {
    11: "truncated varint",
    12: "varint longer than 10 bytes",
    13: "unsupported wire type {}",
    14: "series runs past its frame",
    15: "series field runs past its message",
    16: "label runs past its message",
    17: "chunk field runs past its message",
    18: "chunk encoding {} is not XOR (float samples)",
    19: "chunk without its sample count",
}
"""The table's errors (status: message, ``{}`` its detail), in the words of the numpy reader."""


class Table:
    """Where the series, labels and chunks of an answer lie (``tb_xor_table``): ``series``
    ``(n, 2)`` message spans; ``labels`` ``(n, 5)`` series message, name start, end, value
    start, end (-1 when absent); ``chunks`` ``(n, 3)`` series message, data start, end.
    ``status`` 0, or an error of ``TABLE_ERRORS`` with ``detail``."""

    __slots__ = ("chunks", "detail", "labels", "series", "status")

    def __init__(
        self, series: np.ndarray, labels: np.ndarray, chunks: np.ndarray, status: int, detail: int
    ) -> None:
        self.series, self.labels, self.chunks = series, labels, chunks
        self.status, self.detail = status, detail


def table(data: bytes, spans: list[tuple[int, int]]) -> Table:
    """The series, labels and chunks of the ``ChunkedReadResponse`` messages at ``spans`` of
    ``data`` (``Table``). Only when ``AVAILABLE``."""
    if _TABLE is None:
        raise RuntimeError("the compiled XOR decoder is not built")
    buffer = np.frombuffer(data, dtype=np.uint8)
    where = np.array(spans, dtype=np.int64).reshape(-1, 2)
    sizes = [len(data) // 256 + 16, len(data) // 16 + 16, len(data) // 64 + 16]
    found = np.zeros(3, dtype=np.int64)
    detail = ctypes.c_int64(0)
    while True:
        series = np.empty((sizes[0], 2), dtype=np.int64)
        labels = np.empty((sizes[1], 5), dtype=np.int64)
        chunks = np.empty((sizes[2], 3), dtype=np.int64)
        status = _TABLE(
            _at(buffer),
            len(buffer),
            _at(where),
            len(where),
            _at(series),
            sizes[0],
            _at(labels),
            sizes[1],
            _at(chunks),
            sizes[2],
            _at(found),
            ctypes.addressof(detail),
        )
        if status != SPACE:
            break
        sizes = [int(n) for n in found]
    n = [int(k) for k in found] if status == OK else [0, 0, 0]
    return Table(series[: n[0]], labels[: n[1]], chunks[: n[2]], int(status), detail.value)
