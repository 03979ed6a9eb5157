"""Quantities: every legal Kubernetes form parses; formatting rounds up and keeps the style."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.manifests.quantities import (
    CPU_STEP_MILLICORES,
    MEMORY_DECIMAL_STEP_BYTES,
    MEMORY_STEP_BYTES,
    QuantityError,
    bytes_from_quantity,
    cores_from_quantity,
    cpu_style,
    format_cpu,
    format_memory,
    memory_style,
    parse_quantity,
)

PARSE = [
    ("1.5", Fraction(3, 2)),
    ("1500m", Fraction(3, 2)),
    ("2Gi", 2 * 1024**3),
    ("2G", 2 * 10**9),
    ("1e3", 1000),
    ("1E-3", Fraction(1, 1000)),
    ("128974848", 128974848),
    ("0.1", Fraction(1, 10)),
    ("100k", 100_000),
    ("129e6", 129_000_000),
    ("123Mi", 123 * 1024**2),
    ("500u", Fraction(1, 2000)),
    ("5n", Fraction(5, 10**9)),
    (".5", Fraction(1, 2)),
    ("+3", 3),
    ("1Ki", 1024),
    ("3Ei", 3 * 1024**6),
]


@pytest.mark.parametrize(("text", "value"), PARSE, ids=[t for t, _ in PARSE])
def test_parses_every_legal_form(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("bad", ["", "1.2.3", "Mi", "12MiB", "1e", "abc", "1 Gi", "0x10"])
def test_rejects_illegal_quantities(bad):
    with pytest.raises(QuantityError):
        parse_quantity(bad)


def test_numbers_as_yaml_reads_them():
    assert cores_from_quantity(2) == 2.0
    assert cores_from_quantity(0.25) == 0.25
    assert bytes_from_quantity(1024) == 1024
    assert bytes_from_quantity("0.5") == 1  # rounded up to a whole byte, like Quantity.Value


FORMAT_CPU = [
    (0.25, "milli", "250m"),
    (0.2501, "milli", "255m"),
    (0.001, "milli", "5m"),
    (1.5, "milli", "1500m"),
    (0.25, "cores", "0.25"),
    (2.0, "cores", "2"),
    (0.2501, "cores", "0.255"),
    (1.005, "cores", "1.005"),
]


@pytest.mark.parametrize(
    ("cores", "style", "text"), FORMAT_CPU, ids=[f"{c}-{s}" for c, s, _ in FORMAT_CPU]
)
def test_format_cpu_rounds_up_to_5m_in_the_files_style(cores, style, text):
    assert format_cpu(cores, style) == text


FORMAT_MEMORY = [
    (512 * 1024**2, "binary", "512Mi"),
    (1024**3, "binary", "1Gi"),
    (1.5 * 1024**3, "binary", "1536Mi"),
    (500e6, "binary", "477Mi"),
    (536870912, "bytes", "536870912"),
    (500e6 + 1, "bytes", str(477 * 1024**2)),
    (128e6, "decimal", "128M"),
    (2e9, "decimal", "2G"),
    (128.5e6, "decimal", "129M"),
]


@pytest.mark.parametrize(
    ("value", "style", "text"), FORMAT_MEMORY, ids=[f"{v}-{s}" for v, s, _ in FORMAT_MEMORY]
)
def test_format_memory_rounds_up_in_the_files_style(value, style, text):
    assert format_memory(value, style) == text


@pytest.mark.parametrize(
    ("text", "style"), [("250m", "milli"), ("0.25", "cores"), ("1", "cores"), (" 2000m ", "milli")]
)
def test_cpu_style(text, style):
    assert cpu_style(text) == style


@pytest.mark.parametrize(
    ("text", "style"),
    [
        ("512Mi", "binary"),
        ("1Gi", "binary"),
        ("536870912", "bytes"),
        ("128M", "decimal"),
        ("1e9", "bytes"),
    ],
)
def test_memory_style(text, style):
    assert memory_style(text) == style


@given(st.floats(min_value=0, max_value=512, allow_nan=False), st.sampled_from(["milli", "cores"]))
def test_cpu_round_trip_within_one_step(cores, style):
    back = cores_from_quantity(format_cpu(cores, style))
    # float tolerance: the input float is converted through its shortest decimal repr
    assert cores - 1e-9 <= back < cores + CPU_STEP_MILLICORES / 1000 + 1e-9


@given(st.integers(min_value=0, max_value=2**50), st.sampled_from(["binary", "decimal", "bytes"]))
def test_memory_round_trip_within_one_step(value, style):
    back = bytes_from_quantity(format_memory(value, style))
    step = MEMORY_DECIMAL_STEP_BYTES if style == "decimal" else MEMORY_STEP_BYTES
    assert value <= back < value + step


@given(st.integers(min_value=0, max_value=10**6))
def test_formatted_values_are_fixed_points(millicores):
    text = format_cpu(millicores / 1000)
    assert format_cpu(cores_from_quantity(text)) == text
