"""The frames of a ``STREAMED_XOR_CHUNKS`` remote-read answer and the chunks they hold
(``bot.metrics.xor_chunks`` has the format): every frame checked against its CRC32C, then
where each chunk's data lies and which series (labels) it belongs to, a series continued in
the next frame joined under one index. The numpy reference of the compiled ``tb_xor_table``."""

from __future__ import annotations

import google_crc32c

from bot.metrics.remote_read import RemoteReadError, read_label, read_varint, skip_field

MAX_FRAME_BYTES = 64 * 1024 * 1024
"""Largest frame accepted (Prometheus sends frames of about 1 MiB,
``--storage.remote.read-max-bytes-in-frame``): a longer length is a broken or hostile stream."""


class ChunkTable:
    """Where the data of every chunk lies in the joined frames, and its series."""

    __slots__ = ("ends", "labels", "series", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.series: list[int] = []
        self.labels: list[dict[str, str]] = []


def frames(body: bytes, *, max_bytes: int = MAX_FRAME_BYTES) -> list[tuple[int, int]]:
    """``(start, end)`` of every message of a chunked stream, each checked against its CRC32C."""
    out: list[tuple[int, int]] = []
    pos, size = 0, len(body)
    while pos < size:
        length, pos = read_varint(body, pos, size)
        if length > max_bytes:
            raise RemoteReadError(f"frame of {length:,} bytes, more than the {max_bytes:,} allowed")
        if pos + 4 + length > size:
            raise RemoteReadError(
                f"truncated frame: {length:,} bytes announced, {max(0, size - pos - 4):,} sent"
            )
        expected = int.from_bytes(body[pos : pos + 4], "big")
        start = pos + 4
        if google_crc32c.value(body[start : start + length]) != expected:
            raise RemoteReadError(f"frame at byte {pos:,}: CRC32C mismatch")
        out.append((start, start + length))
        pos = start + length
    return out


def chunk_table(data: bytes, spans: list[tuple[int, int]]) -> ChunkTable:
    """Every XOR chunk of the ``ChunkedReadResponse`` messages at ``spans`` of ``data``; a
    series continued in the next message (same labels) keeps one index."""
    table = ChunkTable()
    index: dict[tuple[tuple[str, str], ...], int] = {}
    starts, ends, owners = table.starts, table.ends, table.series
    for start, end in spans:
        pos = start
        while pos < end:
            key, pos = read_varint(data, pos, end)
            if key != 0x0A:  # query_index and anything else
                pos = skip_field(data, pos, key & 7, end)
                continue
            length, pos = read_varint(data, pos, end)
            stop = pos + length
            if stop > end:
                raise RemoteReadError("series runs past its frame")
            labels: dict[str, str] = {}
            first = len(starts)
            while pos < stop:
                key = data[pos]
                if key == 0x12 and pos + 3 < stop:  # a chunk: its length inline when short
                    low, high = data[pos + 1], data[pos + 2]
                    if low < 0x80:
                        length, pos = low, pos + 2
                    elif high < 0x80:
                        length, pos = (low & 0x7F) | (high << 7), pos + 3
                    else:
                        length, pos = read_varint(data, pos + 1, stop)
                    starts.append(pos)
                    pos += length
                    ends.append(pos)
                    continue
                key, pos = read_varint(data, pos, stop)
                if key & 7 != 2:
                    pos = skip_field(data, pos, key & 7, stop)
                    continue
                length, pos = read_varint(data, pos, stop)
                if key == 0x0A:
                    name, value = read_label(data, pos, pos + length)
                    labels[name] = value
                elif key == 0x12:
                    starts.append(pos)
                    ends.append(pos + length)
                pos += length
            if pos != stop:
                raise RemoteReadError("series field runs past its message")
            ident = tuple(sorted(labels.items()))
            number = index.get(ident)
            if number is None:
                number = index[ident] = len(table.labels)
                table.labels.append(labels)
            owners.extend([number] * (len(starts) - first))
    return table
