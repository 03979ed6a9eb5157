"""The remote read codec: request encoding, and the bulk sample decoder against the general one."""

from __future__ import annotations

import struct

import cramjam
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.metrics.promql import LabelMatch
from bot.metrics.remote_read import (
    STALE_NAN_BITS,
    RemoteReadError,
    decode_read_response,
    encode_read_request,
)

STALE = struct.unpack("<d", struct.pack("<Q", STALE_NAN_BITS))[0]
T0_MS = 1_767_225_600_000


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def double(number: int, value: float) -> bytes:
    return varint(number << 3 | 1) + struct.pack("<d", value)


def field(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def sample(t_ms: int, value: float, *, gogo: bool = True) -> bytes:
    """One ``Sample``: as Prometheus writes it (``gogo``: value then time, zeros omitted) or
    time first with every field present, which the decoder must read just the same."""
    if gogo:
        body = (double(1, value) if value != 0 else b"") + (field(2, t_ms) if t_ms else b"")
    else:
        body = field(2, t_ms) + double(1, value)
    return field(2, body)


def series(labels: dict[str, str], points, *, gogo: bool = True, extra: bytes = b"") -> bytes:
    head = b"".join(
        field(1, field(1, k.encode()) + field(2, v.encode())) for k, v in labels.items()
    )
    return head + b"".join(sample(t, v, gogo=gogo) for t, v in points) + extra


def response(*all_series: bytes) -> bytes:
    result = b"".join(field(1, s) for s in all_series)
    return bytes(cramjam.snappy.compress_raw(field(1, result)))


def _points(n: int, seed: int, zero_every: int = 0) -> list[tuple[int, float]]:
    rng = np.random.default_rng(seed)
    values = rng.lognormal(0, 2, n)
    if zero_every:
        values[::zero_every] = 0.0
    return [(T0_MS + 60_000 * i + int(rng.integers(0, 3)), float(v)) for i, v in enumerate(values)]


def _check(decoded, labels, points) -> None:
    got_labels, t, v = decoded
    assert got_labels == labels
    np.testing.assert_array_equal(t, np.array([p[0] for p in points]) / 1000.0)
    np.testing.assert_array_equal(v, np.array([p[1] for p in points]))


@pytest.mark.parametrize("zero_every", [0, 7, 1], ids=["no-zeros", "some-zeros", "all-zeros"])
@pytest.mark.parametrize("gogo", [True, False], ids=["prometheus-layout", "other-layout"])
def test_bulk_and_general_decoding_agree(zero_every, gogo):
    labels = {"__name__": "container_memory_working_set_bytes", "pod": "web-1", "container": "app"}
    points = _points(3000, seed=zero_every, zero_every=zero_every)
    [decoded] = decode_read_response(response(series(labels, points, gogo=gogo)))
    _check(decoded, labels, points)


def test_times_are_the_doubles_the_json_api_parses_to():
    points = [(T0_MS + 1, 1.5), (T0_MS + 60_001, 2.5), (T0_MS + 120_999, 0.1)]
    [(_, t, _)] = decode_read_response(response(series({"a": "b"}, points)))
    assert t.tolist() == [float("1767225600.001"), float("1767225660.001"), float("1767225720.999")]


def test_stale_markers_are_dropped_other_nan_and_inf_kept():
    points = [(T0_MS, 1.0), (T0_MS + 1000, float("nan")), (T0_MS + 2000, float("inf"))]
    points += [(T0_MS + 3000, STALE), (T0_MS + 4000, 4.0)]
    [(_, t, v)] = decode_read_response(response(series({"a": "b"}, points)))
    assert t.tolist() == [1767225600.0, 1767225601.0, 1767225602.0, 1767225604.0]
    assert np.isnan(v[1]) and v[2] == np.inf and v[[0, 3]].tolist() == [1.0, 4.0]


def test_unknown_fields_labels_after_samples_and_several_series():
    exemplar = field(3, double(2, 7.0) + field(3, T0_MS))
    first = series({"pod": "a"}, _points(50, 1), extra=exemplar)
    late_label = b"".join(sample(t, v) for t, v in _points(20, 2)) + field(
        1, field(1, b"pod") + field(2, b"b")
    )
    decoded = decode_read_response(response(first, late_label, series({"pod": "c"}, [])))
    assert [d[0] for d in decoded] == [{"pod": "a"}, {"pod": "b"}, {"pod": "c"}]
    _check(decoded[0], {"pod": "a"}, _points(50, 1))
    _check(decoded[1], {"pod": "b"}, _points(20, 2))
    assert decoded[2][1].size == 0


def test_timestamps_outside_the_six_byte_range_take_the_general_path():
    points = [(0, 1.0), (-5000, 2.0), (T0_MS, 3.0), (1 << 50, 4.0)]
    [(_, t, v)] = decode_read_response(response(series({"a": "b"}, points)))
    assert t.tolist() == [0.0, -5.0, T0_MS / 1000, (1 << 50) / 1000]
    assert v.tolist() == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize(
    "body",
    [
        b"<html>login</html>",
        bytes(cramjam.snappy.compress_raw(b"\x0a\x05\x0a\x03")),  # truncated message
        bytes(cramjam.snappy.compress_raw(b"\x0f")),  # wire type 7
    ],
    ids=["not-snappy", "truncated", "bad-wire-type"],
)
def test_malformed_answers_raise(body):
    with pytest.raises(RemoteReadError):
        decode_read_response(body)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 100_000),
            st.one_of(
                st.just(0.0), st.floats(allow_nan=False), st.sampled_from([STALE, float("nan")])
            ),
        ),
        max_size=200,
    )
)
def test_any_series_round_trips(raw_points):
    points = [(T0_MS + dt, v) for dt, v in raw_points]
    [(_, t, v)] = decode_read_response(response(series({"k": "v"}, points)))
    kept = [(p, x) for p, x in points if struct.pack("<d", x) != struct.pack("<d", STALE)]
    assert t.tolist() == [p / 1000 for p, _ in kept]
    assert [struct.pack("<d", x) for x in v] == [
        struct.pack("<d", x if x != 0 else 0.0) for _, x in kept
    ]


def test_request_carries_matchers_verbatim_and_checks_names():
    hostile = 'x"}) or vector(1) #\n'
    body = encode_read_request(
        [LabelMatch("__name__", "=", "up"), LabelMatch("pod", "=~", hostile)], 1000, 2000
    )
    raw = bytes(cramjam.snappy.decompress_raw(body))
    query = field(1, 1000) + field(2, 2000)
    query += field(3, field(1, 0) + field(2, b"__name__") + field(3, b"up"))
    query += field(3, field(1, 2) + field(2, b"pod") + field(3, hostile.encode()))
    assert raw == field(1, query)
    with pytest.raises(ValueError, match="label name"):
        encode_read_request([LabelMatch("bad-name", "=", "x")], 0, 1)
