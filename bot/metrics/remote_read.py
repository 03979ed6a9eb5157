"""Raw samples through Prometheus' remote read API (``/api/v1/read``), decoded with numpy.

The JSON API costs the client about 0.3 µs per sample (two decimal numbers to parse); the remote
read API sends the same raw samples as a snappy-compressed protobuf (``prompb.ReadResponse``,
``prompb/remote.proto`` and ``prompb/types.proto``) that numpy reads in bulk, about ten times
cheaper. The server's side costs the same (it reads the same chunks).

Request (``ReadRequest``, ``SAMPLES`` response type, one ``Query`` per request)::

    ReadRequest { repeated Query queries = 1; }
    Query { int64 start_timestamp_ms = 1; int64 end_timestamp_ms = 2;
            repeated LabelMatcher matchers = 3; }
    LabelMatcher { Type type = 1 (EQ 0, NEQ 1, RE 2, NRE 3); string name = 2; string value = 3; }

Response::

    ReadResponse { repeated QueryResult results = 1; }
    QueryResult { repeated TimeSeries timeseries = 1; }
    TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; ... }
    Label { string name = 1; string value = 2; }
    Sample { double value = 1; int64 timestamp = 2; }   # ms; a field equal to 0 is omitted

Prometheus (gogo-protobuf) writes every ``Sample`` of a series one after the other, value then
timestamp, so almost every sample is the same 18 bytes ``12 10 09 <8-byte double> 10 <6-byte
varint>`` (a millisecond timestamp between 1971 and 2109 is a 6-byte varint), or 9 bytes
``12 07 10 <varint>`` when the value is 0. ``_samples`` reads runs of such records with numpy
and any other record (another field order, a 0 timestamp, unknown fields) with the general
decoder, so the fast path is only faster, never different: ``tests/metrics/test_remote_read.py``
checks both on the same bytes, and the integration tests check remote read against the JSON API.

Remote read returns stale markers (the NaN Prometheus writes when a series ends), which the
query API drops from range vectors: they are dropped here too, other NaN values are kept.
Times are ``ms / 1000`` seconds, the same doubles the JSON API's decimal text parses to.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import cramjam
import numpy as np

from bot.metrics.promql import LabelMatch
from bot.model import FloatArray

STALE_NAN_BITS = 0x7FF0000000000002
"""``value.StaleNaN`` (``model/value/value.go``): the marker of a series that ended."""

STREAMED_XOR_CHUNKS = 1
"""``prompb.ReadRequest_STREAMED_XOR_CHUNKS``."""

MATCHER_TYPES = {"=": 0, "!=": 1, "=~": 2, "!~": 3}
"""``prompb.LabelMatcher_Type`` of each PromQL matcher operator."""

HEADERS = {
    "Content-Type": "application/x-protobuf",
    "Content-Encoding": "snappy",
    "X-Prometheus-Remote-Read-Version": "0.1.0",
}
"""Request headers of a ``SAMPLES`` remote read (``storage/remote/client.go``)."""

_FULL = 18
"""Bytes of a sample record with a value and a 6-byte timestamp varint."""

_ZERO = 9
"""Bytes of a sample record whose value is 0 (omitted) with a 6-byte timestamp varint."""

_FIRST_WINDOW = 16384
"""Records checked at once at first (more than a 10,000-step chunk of one series)."""


RawSeries = tuple[dict[str, str], FloatArray, FloatArray]
"""(labels, times in seconds, values) of one series."""


class RemoteReadError(ValueError):
    """A remote read answer that is not a ``ReadResponse``."""


# ---------------------------------------------------------------------- encoding


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1  # negative int64: two's complement, 10 bytes
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _field(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    return _varint((number << 3) | 2) + _varint(len(payload)) + payload


def encode_read_request(
    matchers: Sequence[LabelMatch], start_ms: int, end_ms: int, *, chunks: bool = False
) -> bytes:
    """The snappy-compressed ``ReadRequest`` of samples matching ``matchers`` in
    ``[start_ms, end_ms]`` (both ends included, as a range selector in Prometheus 2.x);
    ``chunks`` accepts only ``STREAMED_XOR_CHUNKS`` answers (``bot/metrics/xor_chunks.py``,
    ``accepted_response_types = 2``, packed), else the default ``SAMPLES``."""
    query = _field(1, start_ms) + _field(2, end_ms)
    for m in matchers:
        m.render()  # checks the label name and the operator
        matcher = (
            _field(1, MATCHER_TYPES[m.op])
            + _field(2, m.label.encode())
            + _field(3, m.value.encode("utf-8"))
        )
        query += _field(3, matcher)
    request = _field(1, query) + (_field(2, bytes([STREAMED_XOR_CHUNKS])) if chunks else b"")
    return bytes(cramjam.snappy.compress_raw(request))


# ---------------------------------------------------------------------- decoding


def read_varint(data: bytes, pos: int, end: int | None = None) -> tuple[int, int]:
    """(value, next position) of the protobuf varint at ``pos`` (read up to ``end``)."""
    end = len(data) if end is None else end
    result = shift = 0
    while True:
        if pos >= end:
            raise RemoteReadError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise RemoteReadError("varint longer than 10 bytes")


def _field_at(data: bytes, pos: int, end: int) -> tuple[int, int, Any, int]:
    """(field number, wire type, value, next position) of the field at ``pos``; a
    length-delimited value is its ``(start, end)``."""
    key, pos = read_varint(data, pos)
    number, wire = key >> 3, key & 7
    value: Any
    if wire == 0:
        value, pos = read_varint(data, pos)
    elif wire == 1:
        value, pos = data[pos : pos + 8], pos + 8
    elif wire == 2:
        length, pos = read_varint(data, pos)
        value, pos = (pos, pos + length), pos + length
    elif wire == 5:
        value, pos = data[pos : pos + 4], pos + 4
    else:
        raise RemoteReadError(f"unsupported wire type {wire}")
    if pos > end:
        raise RemoteReadError("field runs past its message")
    return number, wire, value, pos


def _fields(data: bytes, start: int, end: int) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) of every field of the message ``data[start:end]``."""
    out: list[tuple[int, int, Any]] = []
    pos = start
    while pos < end:
        number, wire, value, pos = _field_at(data, pos, end)
        out.append((number, wire, value))
    return out


def _int64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _sample(data: bytes, start: int, end: int) -> tuple[int, float]:
    """(timestamp ms, value) of one ``Sample`` message, by the general decoder."""
    value, stamp = 0.0, 0
    for number, wire, content in _fields(data, start, end):
        if number == 1 and wire == 1:
            value = struct.unpack("<d", content)[0]
        elif number == 2 and wire == 0:
            stamp = _int64(content)
    return stamp, value


def _records(buf: np.ndarray, pos: int, n: int, stride: int) -> np.ndarray:
    """``n`` records of ``stride`` bytes from ``pos`` as an ``(n, stride)`` view (no copy)."""
    return buf[pos : pos + n * stride].reshape(n, stride)


def _template(stride: int) -> tuple[np.ndarray, np.ndarray]:
    """(mask, expected) per byte of a regular record: key and length bytes exact, value bytes
    free, the 6-byte varint's continuation bits set on its first five bytes only."""
    mask, expect = np.zeros(stride, np.uint8), np.zeros(stride, np.uint8)
    head = [0x12, stride - 2, 0x09, *([0] * 8), 0x10] if stride == _FULL else [0x12, 7, 0x10]
    known = [0, 1, 2, 11] if stride == _FULL else [0, 1, 2]
    for i in known:
        mask[i], expect[i] = 0xFF, head[i]
    mask[stride - 6 :] = 0x80
    expect[stride - 6 : stride - 1] = 0x80
    return mask, expect


_TEMPLATES = {stride: _template(stride) for stride in (_FULL, _ZERO)}


def _regular(buf: np.ndarray, pos: int, n: int, stride: int) -> int:
    """How many of the ``n`` records of ``stride`` bytes from ``pos`` are regular, in a row."""
    mask, expect = _TEMPLATES[stride]
    ok = (_records(buf, pos, n, stride) & mask) == expect
    if bool(ok.all()):
        return n
    return int(np.argmin(ok.all(axis=1)))


def _run(buf: np.ndarray, pos: int, end: int, stride: int) -> int:
    """How many regular records of ``stride`` bytes start at ``pos``, checked in growing
    windows so that the cost follows the records read, not the bytes left."""
    total, window = 0, _FIRST_WINDOW
    while True:
        n = min(window, (end - pos) // stride)
        if n == 0:
            return total
        k = _regular(buf, pos, n, stride)
        total += k
        pos += k * stride
        if k < n:
            return total
        window *= 8


def _decode_run(
    buf: np.ndarray, pos: int, count: int, stride: int
) -> tuple[np.ndarray, FloatArray]:
    """Times (ms) and values of ``count`` regular records: the 6-byte varints are widened to
    8 bytes and their 7-bit groups shifted together in place."""
    rec = _records(buf, pos, count, stride)
    wide = np.zeros((count, 8), np.uint8)
    wide[:, :6] = rec[:, stride - 6 :]
    packed = wide.view("<u8").ravel()
    stamps = packed & np.uint64(0x7F)
    for group in range(1, 6):
        stamps |= (packed >> np.uint64(group)) & np.uint64(0x7F << (7 * group))
    if stride == _ZERO:
        return stamps.view(np.int64), np.zeros(count)
    return stamps.view(np.int64), np.ascontiguousarray(rec[:, 3:11]).view("<f8").ravel()


def _samples(
    data: bytes, buf: np.ndarray, pos: int, end: int
) -> tuple[list[np.ndarray], list[FloatArray], int]:
    """Times (ms) and values of the ``Sample`` records from ``pos`` up to the next other field
    of the series ending at ``end``, and where they stop (see the module doc)."""
    stamps: list[np.ndarray] = []
    values: list[FloatArray] = []
    while pos < end and data[pos] == 0x12:
        for stride in (_FULL, _ZERO):
            count = _run(buf, pos, end, stride)
            if count:
                t, v = _decode_run(buf, pos, count, stride)
                stamps.append(t)
                values.append(v)
                pos += stride * count
                break
        else:
            _, _, (body, stop), pos = _field_at(data, pos, end)
            stamp, value = _sample(data, body, stop)
            stamps.append(np.array([stamp], dtype=np.int64))
            values.append(np.array([value]))
    return stamps, values, pos


def skip_field(data: bytes, pos: int, wire: int, end: int) -> int:
    """The position after a field of wire type ``wire`` whose value starts at ``pos``."""
    if wire == 0:
        return read_varint(data, pos, end)[1]
    if wire == 1:
        return pos + 8
    if wire == 2:
        length, pos = read_varint(data, pos, end)
        return pos + length
    if wire == 5:
        return pos + 4
    raise RemoteReadError(f"unsupported wire type {wire}")


def read_label(data: bytes, pos: int, end: int) -> tuple[str, str]:
    """``(name, value)`` of the ``prompb.Label`` message ``data[pos:end]`` (both answers hold
    the same one)."""
    name = value = ""
    while pos < end:
        key, pos = read_varint(data, pos, end)
        if key in (0x0A, 0x12):
            length, pos = read_varint(data, pos, end)
            if pos + length > end:
                raise RemoteReadError("label runs past its message")
            text = data[pos : pos + length].decode("utf-8")
            pos += length
            if key == 0x0A:
                name = text
            else:
                value = text
        else:
            pos = skip_field(data, pos, key & 7, end)
    return name, value


def _series(data: bytes, buf: np.ndarray, start: int, end: int) -> RawSeries:
    labels: dict[str, str] = {}
    stamps: list[np.ndarray] = []
    values: list[FloatArray] = []
    pos = start
    while pos < end:
        if data[pos] == 0x12:  # samples: read in bulk up to the next other field
            run_t, run_v, pos = _samples(data, buf, pos, end)
            stamps.extend(run_t)
            values.extend(run_v)
            continue
        number, wire, value, pos = _field_at(data, pos, end)
        if number == 1 and wire == 2:
            name, text = read_label(data, *value)
            labels[name] = text
    t_ms = np.concatenate(stamps) if stamps else np.zeros(0, dtype=np.int64)
    v = np.concatenate(values) if values else np.zeros(0)
    stale = v.view(np.uint64) == STALE_NAN_BITS
    if stale.any():
        t_ms, v = t_ms[~stale], v[~stale]
    return labels, t_ms / 1000.0, v


def decode_read_response(body: bytes) -> list[RawSeries]:
    """Every series of a snappy-compressed ``ReadResponse`` (all its query results)."""
    try:
        data = bytes(cramjam.snappy.decompress_raw(body))
    except cramjam.DecompressionError as exc:
        raise RemoteReadError(f"not a snappy block: {exc}") from exc
    buf = np.frombuffer(data, dtype=np.uint8)
    out: list[RawSeries] = []
    try:
        for number, wire, result in _fields(data, 0, len(data)):
            if number != 1 or wire != 2:
                continue
            for n, w, series in _fields(data, *result):
                if n == 1 and w == 2:
                    out.append(_series(data, buf, *series))
    except (IndexError, UnicodeDecodeError, struct.error) as exc:
        raise RemoteReadError(f"malformed ReadResponse: {exc}") from exc
    return out
