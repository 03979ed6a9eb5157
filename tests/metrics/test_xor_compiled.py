"""The compiled XOR-chunk decoder and its numpy reference: the same samples to the bit on every
stream of the decoder's tests, on random series, and the same refusals on broken chunks."""

from __future__ import annotations

import math
import struct
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.metrics import xor_compiled as xor
from bot.metrics import xor_library
from bot.metrics.remote_read import STALE_NAN_BITS, RemoteReadError
from bot.metrics.xor_chunks import decode_chunked_response
from tests.metrics.test_remote_read import field
from tests.metrics.test_xor_chunks import (
    BACK_IN_TIME,
    EVERY_CODE,
    HOSTILE,
    T0,
    chunk_message,
    frame,
    response,
    series_message,
    split_series,
    xor_chunk,
)

STALE = struct.unpack("<d", struct.pack("<Q", STALE_NAN_BITS))[0]
EVERYTHING = (-(2**62), 2**62)


def _decode(body: bytes, start: int, end: int, *, compiled: bool) -> object:
    """The series, or the error's text."""
    try:
        got = decode_chunked_response(body, start, end, compiled_decoder=compiled)
    except RemoteReadError as exc:
        return str(exc)
    return [(labels, t.tobytes(), v.tobytes()) for labels, t, v in got]


def _same(body: bytes, start: int = EVERYTHING[0], end: int = EVERYTHING[1]) -> object:
    compiled = _decode(body, start, end, compiled=True)
    assert compiled == _decode(body, start, end, compiled=False)
    return compiled


def test_the_decoder_is_built_where_the_suite_runs():
    """``scripts/setup`` installs a C compiler, so the compiled decoder is what the suite
    compares; by default the bot runs it."""
    assert xor_library.AVAILABLE and xor_library.DECODER == "compiled"
    assert xor_library.library_path() is not None
    args = (b"", np.zeros(0), np.zeros(0), np.zeros(1))
    *_, status, _ = xor.samples(*args, start_ms=0, end_ms=1)
    assert status == xor.OK
    assert decode_chunked_response.__kwdefaults__ == {"compiled_decoder": True}


WITHOUT_THE_LIBRARY = (
    "import importlib.machinery as m; m.EXTENSION_SUFFIXES[:] = [];"  # as if never built
    "import sys; sys.argv = ['tortoise-bot', '--version'];"
)


def test_without_a_c_compiler_the_numpy_decoder_runs_and_says_so():
    """An installation without the built library decodes with the numpy reference, and says
    so in ``--version`` (and in the log, ``PrometheusSource``)."""
    code = WITHOUT_THE_LIBRARY + (
        "from bot.metrics import xor_library as x, xor_chunks as c;"
        "assert not x.AVAILABLE and x.library_path() is None;"
        "assert c.decode_chunked_response.__kwdefaults__ == {'compiled_decoder': False};"
        "from bot.cli import main; main()"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1] == (
        "XOR-chunk decoder: numpy (the package was installed without a C compiler)"
    )


def test_every_code_and_64_bit_jumps_decode_alike():
    for points in (EVERY_CODE, BACK_IN_TIME, EVERY_CODE[:1], EVERY_CODE[:2]):
        got = _same(response(series_message({"p": "a"}, [chunk_message(points)])))
        assert isinstance(got, list) and len(got) == 1
        assert len(got[0][1]) == 8 * sum(_bits(v) != STALE_NAN_BITS for _, v in points)


@pytest.mark.parametrize(
    ("points", "start", "end", "count"),
    [
        (EVERY_CODE, T0 + 1, T0 + 2_000_000_000, 6),  # cut at both ends, a stale marker dropped
        (EVERY_CODE, T0 + 2_000_060_002, T0 + 2_000_060_002, 1),
        (EVERY_CODE, T0 + 10**12, T0 + 10**13, 0),
        # first and last sample inside: the chunk is taken whole, as the twin does
        (BACK_IN_TIME, T0 - 2**40 + 3, T0, len(BACK_IN_TIME)),
        (BACK_IN_TIME, T0 - 2**40 + 8, T0 + 9, 9),  # even with its last sample before it
    ],
)
def test_the_range_is_cut_alike(points, start, end, count):
    got = _same(response(series_message({"p": "a"}, [chunk_message(points)])), start, end)
    assert isinstance(got, list) and len(got[0][1]) == 8 * count


def test_split_series_trimmed_and_shuffled_decode_alike():
    _, messages = split_series()
    for window in (EVERYTHING, (T0 + 90_000, T0 + 150 * 60_000)):
        assert len(_same(response(*messages), *window)) == 4  # type: ignore[arg-type]
        _same(response(*messages[::2], *messages[1::2]), *window)


@pytest.mark.parametrize(("body", "message"), HOSTILE)
def test_hostile_streams_are_refused_alike(body, message):
    got = _same(body, 0, 2**62)
    assert isinstance(got, str) and message in got


def _chunk(data: bytes) -> bytes:
    return response(series_message({}, [field(3, 1) + field(4, data)]))


GOOD = xor_chunk(EVERY_CODE)
BROKEN = [
    (GOOD[:-6], "past its end"),  # truncated
    (struct.pack(">H", len(EVERY_CODE) + 3) + GOOD[2:], "past its end"),  # too many samples
    (b"\xff\xff" + GOOD[2:], "fewer bits"),  # a huge count
    (b"\x00\x02" + b"\xff" * 12, "varint longer"),  # a first time of 11+ bytes
    (b"\x00\x01" + b"\x02", "past its end"),  # no value
    (b"\x00\x02" + b"\x02" + bytes(8) + b"\x80" * 3, "past its end"),  # delta cut short
    # '11' + 31 leading zeros + 63 significant bits: a window of 94 bits
    (b"\x00\x02\x02" + bytes(8) + b"\x01" + bytes([0b11111111, 0b11111100]) + bytes(8), "wider"),
]


@pytest.mark.parametrize(("data", "message"), BROKEN)
def test_broken_chunks_are_refused_alike(data, message):
    got = _same(_chunk(data))
    assert isinstance(got, str) and message in got


def test_the_kernel_checks_the_table_it_is_given():
    data = GOOD + bytes(4)
    window = {"start_ms": 0, "end_ms": 2**62}
    ok = xor.samples(
        data, np.array([0]), np.array([len(GOOD)]), np.array([0, len(EVERY_CODE)]), **window
    )
    assert ok is not None and ok[3] == xor.OK and ok[2].tolist() == [len(EVERY_CODE) - 1]
    for starts, ends, offsets in (
        ([0], [len(data) + 1], [0, len(EVERY_CODE)]),  # past the data
        ([-1], [len(GOOD)], [0, len(EVERY_CODE)]),
        ([0], [1], [0, len(EVERY_CODE)]),  # no count
        ([0], [len(GOOD)], [0, 3]),  # offsets that do not hold the count
        ([0], [len(GOOD)], [1, len(EVERY_CODE) + 1]),
    ):
        got = xor.samples(data, np.array(starts), np.array(ends), np.array(offsets), **window)
        assert got is not None and got[3] == xor.TABLE


values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, 1.5, STALE, -0.0, 2.0**-1074, 1e300]),
    st.integers(0, 2**53).map(float),
)
deltas = st.one_of(
    st.sampled_from([15_000, 60_000]),
    st.integers(-(2**20), 2**20),
    st.integers(-(2**45), 2**45),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.tuples(deltas, values), min_size=1, max_size=130), min_size=1, max_size=4),
    st.integers(-(2**40), 2**40),
)
def test_random_series_decode_alike_and_as_written(chunks, start):
    """Random chunks (any delta of delta width, any value bits): both decoders give the
    written samples (stale markers dropped)."""
    written, messages, stamp = [], [], T0 + start
    for chunk in chunks:
        points = []
        for delta, value in chunk:
            stamp += delta
            points.append((stamp, value))
        written += points
        messages.append(chunk_message(points))
    got = _same(response(series_message({"s": "x"}, messages)))
    assert isinstance(got, list)
    ((_, t, v),) = got
    kept = [(ts, value) for ts, value in written if _bits(value) != STALE_NAN_BITS]
    assert np.frombuffer(t).tolist() == [ts / 1000 for ts, _ in kept]
    assert np.frombuffer(v, dtype=np.uint64).tolist() == [_bits(value) for _, value in kept]


def _bits(value: float) -> int:
    return int(struct.unpack("<Q", struct.pack("<d", value))[0])


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_mutated_chunks_are_decoded_or_refused_alike(data):
    """Any chunk with bytes changed, cut or added: both refuse it, or both give the same."""
    points = [(T0 + 60_000 * i + (i % 3) * 7, math.sin(i) * 10**i) for i in range(20)]
    chunk = bytearray(xor_chunk(points))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(chunk) - 1))
        chunk[at] = data.draw(st.integers(0, 255))
    chunk = chunk[: data.draw(st.integers(2, len(chunk) + 1))]
    body = _chunk(bytes(chunk))
    compiled = _decode(body, *EVERYTHING, compiled=True)
    twin = _decode(body, *EVERYTHING, compiled=False)
    if isinstance(compiled, str) or isinstance(twin, str):  # the fault each met first
        assert isinstance(compiled, str) and isinstance(twin, str)
    else:
        assert compiled == twin


def test_many_small_series_outgrow_the_first_table():
    """More series, labels and chunks than the first guess from the answer's size: the table
    is sized again and read whole."""
    tiny = series_message({"a": "1", "b": ""}, [chunk_message(EVERY_CODE[:1])])
    series = [series_message({"n": str(i)}, []) for i in range(300)] + [tiny] * 50
    got = _same(b"".join(frame(field(1, s)) for s in series))
    assert isinstance(got, list) and len(got) == 301
    assert got[-1][0] == {"a": "1", "b": ""} and len(got[-1][1]) == 8 * 50  # one series


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_mutated_messages_are_decoded_or_refused_alike(data):
    """Any series message with bytes changed or cut (labels, chunk headers, lengths), framed
    with a right checksum: both refuse it, or both give the same."""
    message = bytearray(
        field(1, series_message({"pod": "a", "c": "x"}, [chunk_message(EVERY_CODE[:5])]))
        + field(1, series_message({"pod": "b"}, [chunk_message(EVERY_CODE[3:], reorder=True)]))
    )
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(message) - 1))
        message[at] = data.draw(st.sampled_from([0, 1, 2, 0x0A, 0x12, 0x18, 0x22, 0x80, 0xFF]))
    message = message[: data.draw(st.integers(0, len(message)))]
    body = frame(bytes(message))
    compiled = _decode(body, *EVERYTHING, compiled=True)
    twin = _decode(body, *EVERYTHING, compiled=False)
    if isinstance(compiled, str) or isinstance(twin, str):
        assert isinstance(compiled, str) and isinstance(twin, str)
    else:
        assert compiled == twin
