"""The ``STREAMED_XOR_CHUNKS`` decoder: hand-made chunks for every code, hostile frames, and the
answer of the real Prometheus against its ``SAMPLES`` answer."""

from __future__ import annotations

import math
import struct

import cramjam
import google_crc32c
import numpy as np
import pytest
import requests

from bot.config.metrics import PrometheusConfig
from bot.metrics import PrometheusSource
from bot.metrics.client import PrometheusClient
from bot.metrics.promql import LabelMatch
from bot.metrics.remote_read import HEADERS, STALE_NAN_BITS, RemoteReadError
from bot.metrics.xor_chunks import decode_chunked_response
from tests.metrics.faults import FaultProxy, Reply
from tests.metrics.helpers import assert_matches_truth, requests_for
from tests.metrics.test_remote_read import field, varint
from tests.support.prometheus import TEST_LABELS

STALE = struct.unpack("<d", struct.pack("<Q", STALE_NAN_BITS))[0]
T0 = 1_767_225_600_000
CHUNKED = {"Content-Type": "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"}


def _bits(value: float) -> int:
    return int(struct.unpack("<Q", struct.pack("<d", value))[0])


class _Writer:
    """A big-endian bit stream, as ``tsdb/chunkenc/bstream.go`` writes it."""

    def __init__(self) -> None:
        self.bits: list[int] = []

    def write(self, value: int, n: int) -> None:
        self.bits.extend((value >> i) & 1 for i in range(n - 1, -1, -1))

    def raw(self, data: bytes) -> None:
        for byte in data:
            self.write(byte, 8)

    def bytes(self) -> bytes:
        padded = self.bits + [0] * (-len(self.bits) % 8)
        return bytes(int("".join(map(str, padded[i : i + 8])), 2) for i in range(0, len(padded), 8))


def xor_chunk(points: list[tuple[int, float]]) -> bytes:
    """``xorAppender.Append`` of ``tsdb/chunkenc/xor.go`` (Prometheus 2.42), sample by sample."""
    out = _Writer()
    t_prev = delta = previous = trailing = 0
    leading = 0xFF
    for i, (t, value) in enumerate(points):
        bits = _bits(value)
        if i == 0:
            out.raw(varint((t << 1) ^ (t >> 63)))  # zig-zag
            out.write(bits, 64)
        else:
            new_delta = t - t_prev
            if i == 1:
                out.raw(varint(new_delta))
            else:
                dod = new_delta - delta
                for prefix, size, width in ((0b10, 2, 14), (0b110, 3, 17), (0b1110, 4, 20)):
                    if dod != 0 and -(2 ** (width - 1) - 1) <= dod <= 2 ** (width - 1):
                        out.write(prefix, size)
                        out.write(dod & (2**width - 1), width)
                        break
                else:
                    if dod == 0:
                        out.write(0, 1)
                    else:
                        out.write(0b1111, 4)
                        out.write(dod & (2**64 - 1), 64)
            delta = new_delta
            x = bits ^ previous
            if x == 0:
                out.write(0, 1)
            else:
                out.write(1, 1)
                lead = min(64 - x.bit_length(), 31)
                trail = (x & -x).bit_length() - 1
                if leading != 0xFF and lead >= leading and trail >= trailing:
                    out.write(0, 1)
                    out.write(x >> trailing, 64 - leading - trailing)
                else:
                    leading, trailing = lead, trail
                    sig = 64 - lead - trail
                    out.write(1, 1)
                    out.write(lead, 5)
                    out.write(sig & 63, 6)  # 64 is written as 0
                    out.write(x >> trail, sig)
        t_prev, previous = t, bits
    return struct.pack(">H", len(points)) + out.bytes()


def chunk_message(points, *, encoding: int = 1, reorder: bool = False) -> bytes:
    stamps = [t for t, _ in points] or [0]
    fields = [
        field(1, min(stamps)),
        field(2, max(stamps)),
        field(3, encoding),
        field(4, xor_chunk(points)),
    ]
    return b"".join(reversed(fields) if reorder else fields)


def series_message(labels: dict[str, str], chunks: list[bytes]) -> bytes:
    head = b"".join(
        field(1, field(1, k.encode()) + field(2, v.encode())) for k, v in labels.items()
    )
    return head + b"".join(field(2, c) for c in chunks)


def frame(message: bytes, *, crc: int | None = None) -> bytes:
    checksum = google_crc32c.value(message) if crc is None else crc
    return varint(len(message)) + struct.pack(">I", checksum) + message


def response(*series: bytes) -> bytes:
    return b"".join(frame(field(1, s)) for s in series)


def _check(points, got_t, got_v, start=-(2**62), end=2**62):
    want = [(t, v) for t, v in points if start <= t <= end and _bits(v) != STALE_NAN_BITS]
    assert got_t.tolist() == [t / 1000 for t, _ in want]
    assert got_v.view(np.uint64).tolist() == [_bits(v) for _, v in want]


EVERY_CODE = [
    (T0, 1.5),
    (T0 + 60_000, 1.5),  # first delta (uvarint), same value ('0')
    (T0 + 120_000, 2.5),  # dod 0, new window ('11')
    (T0 + 180_000 + 5, 2.75),  # dod +5 ('10' + 14 bits), value in the window ('10')?
    (T0 + 240_000 - 3, 0.0),  # negative dod, counter reset to 0
    (T0 + 300_000 + 60_000, -7e300),  # dod +60,003 ('110' + 17 bits), sign and exponent flip
    (T0 + 360_000 + 600_000, STALE),  # dod ~ +540,000 ('1110' + 20 bits), stale marker
    (T0 + 2_000_000_000, math.nan),  # dod ~ 2e9 ('1111' + 64 bits), plain NaN kept
    (T0 + 2_000_060_000, math.inf),
    (T0 + 2_000_060_001, -(2.0**-1074)),  # negative dod of ~ -60 s ('10'), 64 significant bits
    (T0 + 2_000_060_002, 5.0),
]


def test_every_code_decodes_to_the_written_samples():
    body = response(series_message({"__name__": "c", "pod": "a"}, [chunk_message(EVERY_CODE)]))
    ((labels, t, v),) = decode_chunked_response(body, -(2**62), 2**62)
    assert labels == {"__name__": "c", "pod": "a"}
    _check(EVERY_CODE, t, v)


BACK_IN_TIME = [(T0, 10.0), (T0 + 10, 10.25), (T0 - 2**40, 10.5), (T0 - 2**40 + 1, 10.75)]
BACK_IN_TIME += [(T0 - 2**40 + 2 + i, 10.75 + i / 4) for i in range(1, 6)]


def test_64_bit_dod_back_in_time_and_the_window_reused():
    body = response(series_message({"x": "1"}, [chunk_message(BACK_IN_TIME)]))
    ((_, t, v),) = decode_chunked_response(body, -(2**62), 2**62)
    _check(BACK_IN_TIME, t, v)


def split_series() -> tuple[dict[str, list[tuple[int, float]]], list[bytes]]:
    """Four series of chunks of 1 to 120 samples, each sent as two messages: (points by the
    label ``s``, messages)."""
    rng = np.random.default_rng(7)
    everything, messages = {}, []
    for s in range(4):
        points, chunks, stamp = [], [], T0
        for size in (1, 2, 3, 120, 57):
            chunk = []
            for _ in range(size):
                stamp += int(rng.choice([60_000, 60_000, 60_001, 59_990, 15_000]))
                chunk.append((stamp, float(rng.choice([1.0, 2.0, float(rng.normal(100, 30))]))))
            chunks.append(chunk_message(chunk, reorder=s == 2))
            points += chunk
        everything[str(s)] = points
        messages.append(series_message({"s": str(s)}, chunks[:2]))
        messages.append(series_message({"s": str(s)}, chunks[2:]))
    return everything, messages


def test_chunks_of_many_lengths_series_split_over_frames_and_trimmed():
    everything, messages = split_series()
    start, end = T0 + 90_000, T0 + 150 * 60_000
    got = decode_chunked_response(response(*messages), start, end)
    assert [labels["s"] for labels, _, _ in got] == ["0", "1", "2", "3"]
    for labels, t, v in got:
        _check(everything[labels["s"]], t, v, start, end)
    # the parts of one series need not follow each other
    shuffled = decode_chunked_response(response(*messages[::2], *messages[1::2]), start, end)
    for (la, ta, va), (lb, tb, vb) in zip(got, shuffled, strict=True):
        assert la == lb and ta.tolist() == tb.tolist() and va.tobytes() == vb.tobytes()


GOOD = series_message({"p": "a"}, [chunk_message(EVERY_CODE[:4])])


HOSTILE = [
    (frame(field(1, GOOD), crc=12345), "CRC32C mismatch"),
    (response(GOOD)[:-3], "truncated frame"),
    (varint(2**40) + bytes(4) + GOOD, "more than the"),
    (b"\xff" * 11, "varint longer"),
    (response(series_message({}, [chunk_message(EVERY_CODE, encoding=2)])), "not XOR"),
    (
        response(series_message({}, [field(3, 1) + field(4, b"\x00")])),
        "without its sample count",
    ),
    (
        response(series_message({}, [field(3, 1) + field(4, b"\xff\xff" + bytes(8))])),
        "fewer bits",
    ),
    (
        response(series_message({}, [field(3, 1) + field(4, b"\x00\x03" + bytes(9))])),
        "past its end",
    ),
    (response(field(1, b"\x0a\x05ab")), "label runs past"),
    (response(b"\x0a\x05ab"), "series field runs past"),
    (response(series_message({"p": "a"}, []).replace(b"a", b"\xff")), "malformed"),
]
"""Broken or hostile answers and the error each gives."""


@pytest.mark.parametrize(("body", "message"), HOSTILE)
def test_hostile_streams_raise(body, message):
    with pytest.raises(RemoteReadError, match=message):
        decode_chunked_response(body, 0, 2**62)


def test_empty_answer_has_no_series():
    assert decode_chunked_response(b"", 0, 1) == []


# ---------------------------------------------------------------------- the real Prometheus

WINDOW = {"start_ms": 0, "end_ms": 2**62}


@pytest.mark.prometheus
def test_chunks_and_samples_answers_hold_the_same_samples(sim_cluster, sim_prometheus):
    client = PrometheusClient(PrometheusConfig(url=sim_prometheus.url, gzip=False))
    end_ms = int(sim_cluster.t_s[-1] * 1000)
    start_ms = int(sim_cluster.t_s[0] * 1000) + 3_600_001  # cuts through chunks
    for metric in ("container_cpu_usage_seconds_total", "container_memory_working_set_bytes"):
        matchers = [LabelMatch("__name__", "=", metric)]
        answers = [
            client.remote_read(
                matchers, start_ms=start_ms, end_ms=end_ms, describe=metric, chunks=chunks
            ).series
            for chunks in (True, False)
        ]
        chunked, samples = ({tuple(sorted(s[0].items())): s for s in a or []} for a in answers)
        assert len(chunked) > 10 and set(chunked) == set(samples)
        for key, (_, t, v) in chunked.items():
            assert t.tobytes() == samples[key][1].tobytes()
            assert v.tobytes() == samples[key][2].tobytes()
            assert len(t) and t[0] >= start_ms / 1000


def _answer_with(body: bytes, headers: dict[str, str]):
    return lambda n, seen: Reply(200, body, headers) if seen.path == "/api/v1/read" else None


@pytest.mark.prometheus
def test_a_samples_answer_is_read_and_a_bad_stream_falls_back_to_the_query_api(
    sim_cluster, sim_prometheus
):
    window = {"start_s": float(sim_cluster.t_s[0]), "end_s": float(sim_cluster.t_s[-1])}
    wanted = requests_for(sim_cluster, TEST_LABELS)[:1]

    def ignores_chunks(n, seen):  # a server that answers SAMPLES whatever was accepted
        if seen.path != "/api/v1/read":
            return None
        request = bytes(cramjam.snappy.decompress_raw(seen.body))
        length, pos, shift = 0, 1, 0  # the first field, the query: keep it, drop the rest
        while request[pos] & 0x80:
            length |= (request[pos] & 0x7F) << shift
            pos, shift = pos + 1, shift + 7
        length, pos = length | request[pos] << shift, pos + 1
        assert request[pos + length :] == b"\x12\x01\x01"  # accepted: STREAMED_XOR_CHUNKS
        plain = bytes(cramjam.snappy.compress_raw(request[: pos + length]))
        answer = requests.post(sim_prometheus.url + "/api/v1/read", data=plain, headers=HEADERS)
        assert answer.headers["Content-Type"] == "application/x-protobuf"
        return Reply(200, answer.content, {"Content-Type": "application/x-protobuf"})

    config = {"url": "", "gzip": False, "raw_api": "remote_read", "concurrency": 1}
    with FaultProxy(sim_prometheus.url, ignores_chunks) as proxy:
        result = PrometheusSource(PrometheusConfig(**{**config, "url": proxy.url})).fetch(
            wanted, **window
        )
    assert not result.errors and proxy.seen[0].path == "/api/v1/read"
    assert_matches_truth(sim_cluster, result.histories[wanted[0].ref])

    broken = frame(field(1, GOOD), crc=1)
    with FaultProxy(sim_prometheus.url, _answer_with(broken, CHUNKED)) as proxy:
        auto = PrometheusSource(PrometheusConfig(**{**config, "url": proxy.url, "raw_api": "auto"}))
        result = auto.fetch(wanted, **window)
        assert not result.errors
        assert_matches_truth(sim_cluster, result.histories[wanted[0].ref])
        assert [s.path for s in proxy.seen].count("/api/v1/read") == 1  # then the query API
        strict = PrometheusSource(PrometheusConfig(**{**config, "url": proxy.url}))
        failed = strict.fetch(wanted, **window)
    error = str(failed.errors[wanted[0].ref])
    assert "streamed chunks unreadable" in error and "CRC32C mismatch" in error
