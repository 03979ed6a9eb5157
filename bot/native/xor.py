"""Prometheus' XOR chunks decoded in C (``xor_chunks.c``), called with numpy arrays.

The numpy twin, and the encoding, are in ``bot/metrics/xor_chunks.py`` (``decode_xor``).
"""

from __future__ import annotations

import ctypes

import numpy as np

from bot.native import address, kernel

_I64, _PTR = ctypes.c_int64, ctypes.c_void_p
_SIGNATURE = [_PTR, _I64, _PTR, _PTR, _I64, _PTR, _I64, _I64, _PTR, _PTR, _PTR, _PTR, _PTR]
"""``tb_xor_samples(data*, size, starts*, ends*, n, offsets*, start_ms, end_ms, scratch*,
out_s*, out_v*, kept*, where*) -> status``."""

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


def samples(
    data: bytes,
    starts: np.ndarray,
    ends: np.ndarray,
    offsets: np.ndarray,
    *,
    start_ms: int,
    end_ms: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int] | None:
    """(times s ``float64``, value bits ``uint64``, samples kept per chunk, status, chunk) of
    the XOR chunks at ``data[starts[i]:ends[i]]`` (``offsets``: ``n + 1`` sample offsets from
    0, each chunk's count as its first two bytes say): the samples in ``[start_ms, end_ms]``
    without stale markers, as ``bot/metrics/xor_chunks.py``'s ``decode_xor`` and ``_kept``
    give them; status ``OK`` or the first error met (module constants) and the chunk that has
    it. ``None`` when the kernel is not built: run the twins then."""
    run = kernel("tb_xor_samples", ctypes.c_int, _SIGNATURE)
    if run is None:
        return None
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
    status = run(
        address(buffer),
        len(buffer),
        address(first),
        address(last),
        len(first),
        address(offset),
        start_ms,
        end_ms,
        address(scratch),
        address(out_s),
        address(out_v),
        address(kept),
        ctypes.addressof(where),
    )
    n = int(kept.sum()) if status == OK else 0
    return out_s[:n], out_v[:n], kept, int(status), where.value


_TABLE_SIGNATURE = [_PTR, _I64, _PTR, _I64, _PTR, _I64, _PTR, _I64, _PTR, _I64, _PTR, _PTR]
"""``tb_xor_table(data*, size, spans*, n_spans, series*, cap, labels*, cap, chunks*, cap,
found*, detail*) -> status``."""

SPACE = 10
"""A table was too small (``table`` calls again with the sizes found)."""

TABLE_ERRORS = {
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
"""The table's errors (status: message, ``{}`` its detail), in the words of the twin."""


class Table:
    """Where the series, labels and chunks of an answer lie (``xor_chunks.c``,
    ``tb_xor_table``): ``series`` ``(n, 2)`` message spans; ``labels`` ``(n, 5)`` series
    message, name start, end, value start, end (-1 when absent); ``chunks`` ``(n, 3)``
    series message, data start, end. ``status`` 0, or an error of ``TABLE_ERRORS`` with
    ``detail``."""

    __slots__ = ("chunks", "detail", "labels", "series", "status")

    def __init__(
        self, series: np.ndarray, labels: np.ndarray, chunks: np.ndarray, status: int, detail: int
    ) -> None:
        self.series, self.labels, self.chunks = series, labels, chunks
        self.status, self.detail = status, detail


def table(data: bytes, spans: list[tuple[int, int]]) -> Table | None:
    """The series, labels and chunks of the ``ChunkedReadResponse`` messages at ``spans`` of
    ``data`` (``Table``), or ``None`` when the kernel is not built: run the twin then."""
    run = kernel("tb_xor_table", ctypes.c_int, _TABLE_SIGNATURE)
    if run is None:
        return None
    buffer = np.frombuffer(data, dtype=np.uint8)
    where = np.array(spans, dtype=np.int64).reshape(-1, 2)
    sizes = [len(data) // 256 + 16, len(data) // 16 + 16, len(data) // 64 + 16]
    found = np.zeros(3, dtype=np.int64)
    detail = ctypes.c_int64(0)
    while True:
        series = np.empty((sizes[0], 2), dtype=np.int64)
        labels = np.empty((sizes[1], 5), dtype=np.int64)
        chunks = np.empty((sizes[2], 3), dtype=np.int64)
        status = run(
            address(buffer),
            len(buffer),
            address(where),
            len(where),
            address(series),
            sizes[0],
            address(labels),
            sizes[1],
            address(chunks),
            sizes[2],
            address(found),
            ctypes.addressof(detail),
        )
        if status != SPACE:
            break
        sizes = [int(n) for n in found]
    n = [int(k) for k in found] if status == OK else [0, 0, 0]
    return Table(series[: n[0]], labels[: n[1]], chunks[: n[2]], int(status), detail.value)
