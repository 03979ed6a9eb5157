"""Remote read answered with Prometheus' own XOR chunks (``STREAMED_XOR_CHUNKS``), decoded in C.

With ``accepted_response_types: [STREAMED_XOR_CHUNKS]`` Prometheus sends the Gorilla chunks it
stores instead of decoding them into ``Sample`` records and snappy-compressing those: far less
work on the server, about a quarter of the bytes (1-2 bits per regular timestamp, a few to
~25 bits per value instead of 18 bytes a sample). The answer is a stream of frames
(``storage/remote/chunked.go``)::

    uvarint length | CRC32C (Castagnoli) of the message, 4 bytes big-endian | message

each message a ``prompb.ChunkedReadResponse`` (``prompb/remote.proto``, ``prompb/types.proto``)::

    ChunkedReadResponse { repeated ChunkedSeries chunked_series = 1; int64 query_index = 2; }
    ChunkedSeries { repeated Label labels = 1; repeated Chunk chunks = 2; }
    Chunk { int64 min_time_ms = 1; int64 max_time_ms = 2; Encoding type = 3 (XOR 1);
            bytes data = 4; }

A series too large for one frame continues in the next frame under the same labels; its parts
are joined here. Chunks cover whole stored chunks, so they overlap the asked range: samples
outside ``[start_ms, end_ms]`` are dropped, as the ``SAMPLES`` answer never holds them.

An XOR chunk (``tsdb/chunkenc/xor.go``, ``xorAppender.Append`` and ``xorWrite``) is a
big-endian 16-bit sample count, then a bit stream:

- sample 0: timestamp as a zig-zag varint (bytes), value as 64 raw bits;
- sample 1: timestamp delta as a uvarint (bytes), value as below;
- sample k >= 2: delta-of-delta ``dod = (t_k - t_{k-1}) - (t_{k-1} - t_{k-2})`` as ``0``
  (dod 0), ``10`` + 14 bits, ``110`` + 17 bits, ``1110`` + 20 bits or ``1111`` + 64 bits
  (two's complement in that width: ``bits > 2^(n-1)`` means ``bits - 2^n``), then the value;
- value: ``x = bits(v_k) XOR bits(v_{k-1})`` as ``0`` (x = 0), ``10`` + the significant bits
  in the previous window (``64 - leading - trailing`` bits), or ``11`` + 5 bits of leading
  zeros + 6 bits of significant length (0 means 64) + those bits; ``x = bits << trailing``.

An answer is read in three steps, two of them compiled (``xor_chunks.c`` beside this file,
loaded by ``xor_library.py``, called by ``xor_compiled.py``: one call each for the whole
answer, outside Python's lock) when the package was built with a C compiler, else by the numpy
reference here (``compiled_decoder=False``):

1. ``frames`` (``xor_frames.py``): every frame's CRC32C (``google_crc32c``);
2. ``layout``: the series, their labels and the data of every chunk (``tb_xor_table``; numpy
   reference ``xor_frames.chunk_table`` and ``_chunk_data``); the labels are decoded here from the spans;
3. ``samples``: every chunk decoded, the samples outside ``[start_ms, end_ms]`` and the stale
   markers dropped, times in seconds (``tb_xor_samples``; numpy reference ``decode_xor`` and
   ``_kept``).

``decode_xor`` reads every chunk of an answer in lock-step: one numpy pass per sample index
(a chunk holds at most 120 samples when Prometheus cuts it), the lanes being the chunks, each
with its bit position, previous time, delta, value bits and window; each step reads a 64-bit
big-endian window at every lane's bit position by a gather, and resolves the prefix codes with
table look-ups and masks. The C decoder reads chunk after chunk, every read checked against the
chunk's end; both give the same samples to the bit and refuse the same answers (with the same
words, unless several faults compete). ``tests/metrics/test_xor_chunks.py`` checks every code
on hand-made chunks, ``tests/metrics/test_xor_compiled.py`` both decoders on them, on random
series and on mutated answers, and the integration tests the answer against the ``SAMPLES`` one.
"""

from __future__ import annotations

import numpy as np

from bot.metrics import xor_compiled as compiled
from bot.metrics.remote_read import (
    STALE_NAN_BITS,
    RawSeries,
    RemoteReadError,
    read_varint,
    skip_field,
)
from bot.metrics.xor_frames import chunk_table, frames
from bot.metrics.xor_library import AVAILABLE

STREAMED_MEDIA_TYPE = "application/x-streamed-protobuf"
"""Media type of a ``STREAMED_XOR_CHUNKS`` answer (``Content-Type:
application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse``,
``storage/remote/codec.go``); a ``SAMPLES`` answer is ``application/x-protobuf``."""

XOR_ENCODING = 1
"""``prompb.Chunk_XOR``."""

U64 = np.uint64
_ZERO = U64(0)

# Timestamp prefix codes by the window's top four bits: prefix length and payload bits.
_DOD_PREFIX = np.array([1] * 8 + [2] * 4 + [3] * 2 + [4, 4], dtype=np.uint64)
_DOD_BITS = np.array([0] * 8 + [14] * 4 + [17] * 2 + [20, 64], dtype=np.uint64)
# Value header length by the top two bits: '0' (same value), '10' (window kept), '11' (new).
_VALUE_HEADER = np.array([1, 1, 2, 13], dtype=np.uint64)


def _chunk(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """(start, end) of the data of the ``Chunk`` message ``data[pos:end]``, by the general
    decoder (any field order, unknown fields skipped)."""
    encoding, body = 0, (0, 0)
    while pos < end:
        key, pos = read_varint(data, pos, end)
        if key == 0x22:  # data
            length, pos = read_varint(data, pos, end)
            body = (pos, pos + length)
            pos += length
        elif key == 0x18:  # type
            encoding, pos = read_varint(data, pos, end)
        else:  # min/max time: the samples' own times are what count
            pos = skip_field(data, pos, key & 7, end)
    if pos != end:
        raise RemoteReadError("chunk field runs past its message")
    if encoding != XOR_ENCODING:
        raise RemoteReadError(f"chunk encoding {encoding} is not XOR (float samples)")
    return body


def _chunk_data(
    bits: _Bits, data: bytes, starts: list[int], ends: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of the data of every ``Chunk`` message ``data[starts[i]:ends[i]]``.

    Prometheus writes ``08 <min time> 10 <max time> 18 01 22 <length> <data>``: those are read
    for all chunks at once; any other layout by ``_chunk``."""
    begin = np.array(starts, dtype=np.uint64)
    stop = np.array(ends, dtype=np.uint64)
    pos = begin.copy()
    regular = np.ones(len(begin), dtype=bool)
    for key in (0x08, 0x10, 0x18, 0x22):
        regular &= bits.bytes[np.minimum(pos, bits.last)] == key
        value, pos, ended = bits.uvarints(pos + U64(1))
        regular &= ended
        if key == 0x18:
            regular &= value == U64(XOR_ENCODING)
    body = pos
    regular &= (pos + value == stop) & (pos <= stop)
    first, last = body, stop
    for i in np.flatnonzero(~regular).tolist():
        first[i], last[i] = _chunk(data, starts[i], ends[i])
    if bool((last - first < U64(2)).any()):
        raise RemoteReadError("chunk without its sample count")
    return first, last


class _Bits:
    """Reads an answer's bytes as a big-endian bit stream, many positions at once."""

    def __init__(self, data: bytes) -> None:
        self.bytes = np.frombuffer(bytes(data) + bytes(24), dtype=np.uint8)
        self.words: np.ndarray[tuple[int], np.dtype[np.uint64]] = np.ndarray(
            shape=(len(self.bytes) - 8,), dtype=">u8", buffer=self.bytes, strides=(1,)
        )
        self.last = U64(len(self.bytes) - 1)

    def near(self, bit: np.ndarray) -> np.ndarray:
        """The bits from each position, the first 57 exact (a one-byte shift of a word)."""
        window: np.ndarray = self.words[bit >> U64(3)].astype(np.uint64) << (bit & U64(7))
        return window

    def full(self, bit: np.ndarray) -> np.ndarray:
        """The 64 bits from each position."""
        byte, shift = bit >> U64(3), bit & U64(7)
        high = self.words[byte].astype(np.uint64) << shift
        window: np.ndarray = high | (
            self.bytes[byte + U64(8)].astype(np.uint64) >> (U64(8) - shift)
        )
        return window

    def uvarints(self, byte: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(value, next byte, whether it ended within 10 bytes) of the uvarint at each byte
        position."""
        value = np.zeros(len(byte), dtype=np.uint64)
        done = np.zeros(len(byte), dtype=bool)
        at = byte.copy()
        for group in range(10):
            octet = self.bytes[np.minimum(at, self.last)].astype(np.uint64)
            live = ~done
            value |= np.where(live, (octet & U64(0x7F)) << U64(7 * group), _ZERO)
            at += live
            done |= octet < U64(0x80)
            if bool(done.all()):
                break
        return value, at, done


def _dod(bits: _Bits, w: np.ndarray, bit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(delta of delta, bits it takes) of each lane whose window ``w`` starts at ``bit`` with a
    timestamp code."""
    top = w >> U64(60)
    prefix, width = _DOD_PREFIX[top], _DOD_BITS[top]
    raw = (w << prefix) >> (U64(64) - width)  # width 0: a shift of 64 gives 0
    wide = width == U64(64)
    if bool(wide.any()):  # '1111' + 64 bits: past the window
        raw[wide] = bits.full(bit[wide] + U64(4))
    dod = raw.astype(np.int64)
    negative = (raw > (U64(1) << (width - U64(1)))) & ~wide  # 2^(n-1); width 0 gives 0
    dod[negative] -= np.int64(1) << width[negative].astype(np.int64)
    return dod, prefix + width


def decode_xor(
    bits: _Bits, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times ms int64, value bits uint64, samples per chunk) of the XOR chunks whose bytes are
    ``bits[starts[i]:ends[i]]``, all chunks read in lock-step (module doc); the samples of
    chunk ``i`` come after those of chunks ``0..i-1``.

    The lanes are sorted by sample count, longest first, so that the lanes still reading at
    sample ``k`` are a prefix of every state array: each step works on views, in place."""
    starts = np.asarray(starts, dtype=np.uint64)
    ends = np.asarray(ends, dtype=np.uint64)
    counts = (bits.bytes[starts].astype(np.int64) << 8) | bits.bytes[starts + U64(1)]
    # each sample after the first takes 2 bits or more: a larger count is a broken chunk
    if bool((counts > 1 + (ends - starts - U64(2)).astype(np.int64) * 4).any()):
        raise RemoteReadError("chunk holds fewer bits than its sample count needs")
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    out_t = np.zeros(int(offsets[-1]), dtype=np.int64)
    out_v = np.zeros(int(offsets[-1]), dtype=np.uint64)
    lane = np.argsort(-counts, kind="stable")
    lane = lane[: int(np.count_nonzero(counts))]
    if not len(lane):
        return out_t, out_v, counts
    longest_first = -counts[lane]  # ascending: lanes with more than k samples come first
    base = offsets[lane]
    end_bit = ends[lane] * U64(8)

    # sample 0: zig-zag varint time, then 64 raw value bits
    zigzag, byte, ended = bits.uvarints(starts[lane] + U64(2))
    if not bool(ended.all()):
        raise RemoteReadError("varint longer than 10 bytes in a chunk")
    t = (zigzag >> U64(1)).astype(np.int64) ^ -(zigzag & U64(1)).astype(np.int64)
    bit = byte * U64(8)
    v = bits.full(bit)
    bit += U64(64)
    out_t[base], out_v[base] = t, v
    delta = np.zeros(len(lane), dtype=np.int64)
    trailing = np.zeros(len(lane), dtype=np.uint64)
    significant = np.zeros(len(lane), dtype=np.uint64)
    reading = len(lane)
    for k in range(1, int(-longest_first[0])):
        m = int(np.searchsorted(longest_first, -k, side="left"))
        if m < reading and not bool((bit[m:reading] <= end_bit[m:reading]).all()):
            raise RemoteReadError("chunk data runs past its end")
        reading = m
        b = bit[:m]
        if k == 1:  # the first delta: a uvarint at a byte boundary
            first, byte, ended = bits.uvarints(b >> U64(3))
            if not bool(ended.all()):
                raise RemoteReadError("varint longer than 10 bytes in a chunk")
            delta[:m] = first.astype(np.int64)
            np.multiply(byte, U64(8), out=b)
            w = bits.near(b)
        else:
            w = bits.near(b)
            if bool((w >> U64(63)).any()):
                dod, used = _dod(bits, w, b)
                delta[:m] += dod
                b += used
                w = bits.near(b)  # the value's header (13 bits at most) from here
            else:  # every lane '0': the same delta
                b += U64(1)
                w <<= U64(1)
        tt = t[:m]
        tt += delta[:m]
        # value: '0' same, '10' + bits in the previous window, '11' + new window + bits
        code = w >> U64(62)
        fresh = code == U64(3)
        sig_m, trail_m = significant[:m], trailing[:m]
        if bool(fresh.any()):  # the lanes with a new window (a minority, read apart)
            new = np.flatnonzero(fresh)
            head = w[new]
            sig = (head >> U64(51)) & U64(63)
            sig[sig == _ZERO] = U64(64)  # 0 means 64
            trail = U64(64) - ((head >> U64(57)) & U64(31)) - sig
            if bool((trail > U64(64)).any()):  # leading + significant > 64 wrapped around
                raise RemoteReadError("XOR window wider than 64 bits")
            sig_m[new], trail_m[new] = sig, trail
        width = sig_m * (code >= U64(2))
        b += _VALUE_HEADER[code]
        byte, shift = b >> U64(3), b & U64(7)
        window = bits.words[byte].astype(np.uint64) << shift
        short = shift + width > U64(64)  # the bits reach into a ninth byte
        if bool(short.any()):
            window[short] |= bits.bytes[byte[short] + U64(8)] >> (U64(8) - shift[short])
        vv = v[:m]
        vv ^= (window >> (U64(64) - width)) << trail_m
        b += width
        at = base[:m] + k
        out_t[at], out_v[at] = tt, vv
    if not bool((bit[:reading] <= end_bit[:reading]).all()):
        raise RemoteReadError("chunk data runs past its end")
    return out_t, out_v, counts


_COMPILED_ERRORS = {
    compiled.TABLE: "chunk table does not fit the answer",
    compiled.FEWER_BITS: "chunk holds fewer bits than its sample count needs",
    compiled.VARINT: "varint longer than 10 bytes in a chunk",
    compiled.PAST_END: "chunk data runs past its end",
    compiled.WINDOW: "XOR window wider than 64 bits",
}
"""The compiled decoder's errors, in the words of ``decode_xor``."""


def samples(
    data: bytes,
    starts: np.ndarray,
    ends: np.ndarray,
    *,
    start_ms: int,
    end_ms: int,
    compiled_decoder: bool = AVAILABLE,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times s, values, samples kept per chunk) of the XOR chunks ``data[starts[i]:ends[i]]``,
    in ``[start_ms, end_ms]`` without stale markers, chunk after chunk: by the compiled decoder
    (``xor_chunks.c``, one call for all chunks) when ``compiled_decoder``, else by the numpy
    reference ``decode_xor`` and ``_kept``. Both give the same samples to the bit and refuse the
    same chunks (when several chunks are broken, they may name different faults first)."""
    starts = np.asarray(starts, dtype=np.uint64)
    ends = np.asarray(ends, dtype=np.uint64)
    octets = np.frombuffer(data, dtype=np.uint8)
    counts = (octets[starts].astype(np.int64) << 8) | octets[starts + U64(1)]
    # checked before the output is allocated: hostile counts never size it
    if bool((counts > 1 + (ends - starts - U64(2)).astype(np.int64) * 4).any()):
        raise RemoteReadError("chunk holds fewer bits than its sample count needs")
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    if not compiled_decoder:
        stamps, bits, counts = decode_xor(_Bits(data), starts, ends)
        return _kept(stamps, bits, counts, start_ms=start_ms, end_ms=end_ms)
    times, bits, kept, status, _ = compiled.samples(
        data,
        starts.astype(np.int64),
        ends.astype(np.int64),
        offsets,
        start_ms=start_ms,
        end_ms=end_ms,
    )
    if status != compiled.OK:
        raise RemoteReadError(_COMPILED_ERRORS.get(status, f"chunk decoder status {status}"))
    return times, bits.view(np.float64), kept


def _kept(
    stamps: np.ndarray, bits: np.ndarray, counts: np.ndarray, *, start_ms: int, end_ms: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times s, values, samples kept per chunk) of decoded chunks: those in
    ``[start_ms, end_ms]``, without stale markers. Only the chunks that cross an end of the
    range are checked sample by sample: the others lie inside it whole."""
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    full = np.flatnonzero(counts)
    stale = bits == U64(STALE_NAN_BITS)
    crossing = full[(stamps[offsets[full]] < start_ms) | (stamps[offsets[full + 1] - 1] > end_ms)]
    if len(crossing) or bool(stale.any()):
        keep = ~stale
        for chunk in crossing.tolist():
            lo, hi = offsets[chunk], offsets[chunk + 1]
            keep[lo:hi] &= (stamps[lo:hi] >= start_ms) & (stamps[lo:hi] <= end_ms)
        kept = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum(keep, out=kept[1:])
        counts = kept[offsets[1:]] - kept[offsets[:-1]]
        stamps, bits = stamps[keep], bits[keep]
    return stamps / 1000.0, bits.view(np.float64), counts


Layout = tuple[list[dict[str, str]], np.ndarray, np.ndarray, np.ndarray]
"""(labels of each series, series of each chunk, start and end of each chunk's data)."""


def layout(
    data: bytes, spans: list[tuple[int, int]], *, compiled_decoder: bool = AVAILABLE
) -> Layout:
    """The series and chunks of the messages at ``spans``: by the compiled table
    (``tb_xor_table``: the chunk headers read in C, the labels decoded here), or by its numpy
    reference ``chunk_table`` and ``_chunk_data`` unless ``compiled_decoder``."""
    if not compiled_decoder:
        table = chunk_table(data, spans)
        starts, ends = _chunk_data(_Bits(data), data, table.starts, table.ends)
        return table.labels, np.array(table.series, dtype=np.int64), starts, ends
    found = compiled.table(data, spans)
    if found.status != compiled.OK:
        message = compiled.TABLE_ERRORS.get(found.status, "chunk table status {}")
        raise RemoteReadError(message.format(found.detail))
    per_message: list[dict[str, str]] = [{} for _ in range(len(found.series))]
    for message_index, name_at, name_end, value_at, value_end in found.labels.tolist():
        name = data[name_at:name_end].decode("utf-8") if name_at >= 0 else ""
        value = data[value_at:value_end].decode("utf-8") if value_at >= 0 else ""
        per_message[message_index][name] = value
    index: dict[tuple[tuple[str, str], ...], int] = {}
    labels: list[dict[str, str]] = []
    numbers = np.empty(len(per_message), dtype=np.int64)
    for i, found_labels in enumerate(per_message):  # a series continued keeps its number
        ident = tuple(sorted(found_labels.items()))
        number = index.get(ident)
        if number is None:
            number = index[ident] = len(labels)
            labels.append(found_labels)
        numbers[i] = number
    chunks = found.chunks
    return (
        labels,
        numbers[chunks[:, 0]],
        chunks[:, 1].astype(np.uint64),
        chunks[:, 2].astype(np.uint64),
    )


def decode_chunked_response(
    body: bytes, start_ms: int, end_ms: int, *, compiled_decoder: bool = AVAILABLE
) -> list[RawSeries]:
    """Every series of a ``STREAMED_XOR_CHUNKS`` answer, its samples in ``[start_ms, end_ms]``
    (stale markers dropped, as in ``decode_read_response``); by the compiled decoder when it is
    built (``compiled_decoder``), else by the numpy reference: the same samples to the bit."""
    try:
        labels, series, starts, ends = layout(body, frames(body), compiled_decoder=compiled_decoder)
        times, values, kept = samples(
            body, starts, ends, start_ms=start_ms, end_ms=end_ms, compiled_decoder=compiled_decoder
        )
    except (IndexError, UnicodeDecodeError) as exc:
        raise RemoteReadError(f"malformed ChunkedReadResponse: {exc}") from exc
    return _series(labels, series, times, values, kept)


def _series(
    labels: list[dict[str, str]],
    series: np.ndarray,
    times: np.ndarray,
    values: np.ndarray,
    kept: np.ndarray,
) -> list[RawSeries]:
    """The samples of each series (``labels``; ``series``: that of each chunk, ``kept``: its
    samples in ``times`` and ``values``, chunk after chunk)."""
    if len(series) > 1 and bool((np.diff(series) < 0).any()):  # parts of a series apart
        order = np.argsort(np.repeat(series, kept), kind="stable")
        times, values = times[order], values[order]
    per_series = np.bincount(series, weights=kept, minlength=len(labels))
    bounds = np.zeros(len(labels) + 1, dtype=np.int64)
    np.cumsum(per_series.astype(np.int64), out=bounds[1:])
    return [
        (found, times[bounds[i] : bounds[i + 1]], values[bounds[i] : bounds[i + 1]])
        for i, found in enumerate(labels)
    ]
