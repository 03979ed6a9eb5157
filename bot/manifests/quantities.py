"""Kubernetes quantities: the only place where ``250m`` and ``512Mi`` exist.

Parsing follows ``k8s.io/apimachinery/pkg/api/resource/quantity.go`` (``ParseQuantity``): a
signed decimal number followed by a binary SI suffix (``Ki Mi Gi Ti Pi Ei``), a decimal SI suffix
(``n u m k M G T P E``) or a decimal exponent (``e3``, ``E-2``). Values are kept exact
(``Fraction``) until converted to cores (float) or bytes (int, rounded up as ``Quantity.Value``
does).

Formatting writes a value back in the style the file already uses and rounds *up* first:

- CPU: to a multiple of ``CPU_STEP_MILLICORES`` (5m): ``0.2501`` cores -> ``255m`` (``milli``
  style) or ``0.255`` (``cores`` style, used when the file writes ``0.25`` or ``1``).
- Memory: to a multiple of ``MEMORY_STEP_BYTES`` (1Mi) in ``binary`` (``512Mi``, ``1Gi``) and
  ``bytes`` (``536870912``) style; to ``MEMORY_DECIMAL_STEP_BYTES`` (1M) in ``decimal``
  (``128M``) style. The binary suffix is the largest one that writes the value as an integer
  (``1536Mi``, ``2Gi``).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Literal, TypeAlias

CpuStyle: TypeAlias = Literal["milli", "cores"]
"""``milli``: ``250m``; ``cores``: ``0.25``, ``2``."""
MemoryStyle: TypeAlias = Literal["binary", "decimal", "bytes"]
"""``binary``: ``512Mi``; ``decimal``: ``512M``; ``bytes``: ``536870912``."""

CPU_STEP_MILLICORES = 5
"""CPU values are rounded up to a multiple of this many millicores before writing."""
MEMORY_STEP_BYTES = 1024**2
"""Memory values in binary or bytes style are rounded up to a whole MiB before writing."""
MEMORY_DECIMAL_STEP_BYTES = 1000**2
"""Memory values in decimal style are rounded up to a whole megabyte (``M``) before writing."""
DEFAULT_CPU_STYLE: CpuStyle = "milli"
"""Style of a CPU value the file does not write yet."""
DEFAULT_MEMORY_STYLE: MemoryStyle = "binary"
"""Style of a memory value the file does not write yet."""

BINARY_SUFFIXES: dict[str, int] = {
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "Ti": 1024**4,
    "Pi": 1024**5,
    "Ei": 1024**6,
}
"""Binary SI suffix -> multiplier (``quantity.go``, ``suffix.go``)."""
DECIMAL_SUFFIXES: dict[str, Fraction] = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
"""Decimal SI suffix -> multiplier."""

_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?[0-9]+)|(?P<dec>[numkMGTPE]?))$"
)
"""A Kubernetes quantity: number then one suffix (``quantity.go``, ``splitREString``)."""


class QuantityError(ValueError):
    """A string is not a legal Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a quantity (``1500m`` -> 3/2, ``2Gi`` -> 2147483648, ``1e3`` -> 1000)."""
    if isinstance(value, bool):
        raise QuantityError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"not a quantity: {value!r}")
        return Fraction(Decimal(repr(value)))
    text = value.strip()
    match = _QUANTITY.match(text)
    if match is None:
        raise QuantityError(f"not a Kubernetes quantity: {value!r}")
    number = Fraction(Decimal(match["num"]))
    if match["sign"] == "-":
        number = -number
    if match["bin"]:
        return number * BINARY_SUFFIXES[match["bin"]]
    if match["exp"]:
        return number * Fraction(10) ** int(match["exp"][1:])
    return number * DECIMAL_SUFFIXES[match["dec"] or ""]


def cores_from_quantity(value: str | int | float) -> float:
    """CPU in cores: ``250m`` -> 0.25, ``1.5`` -> 1.5, ``2`` -> 2.0."""
    return float(parse_quantity(value))


def bytes_from_quantity(value: str | int | float) -> int:
    """Memory in bytes, rounded up to a whole byte: ``512Mi`` -> 536870912, ``1G`` -> 10**9."""
    return math.ceil(parse_quantity(value))


def cpu_style(text: str) -> CpuStyle:
    """The style a written CPU value uses: ``milli`` when it ends in ``m``, else ``cores``."""
    return "milli" if text.strip().endswith("m") else "cores"


def memory_style(text: str) -> MemoryStyle:
    """The style a written memory value uses (binary suffix, decimal suffix, or plain bytes)."""
    match = _QUANTITY.match(text.strip())
    if match is None or match["bin"]:
        return "binary"
    if match["dec"]:
        return "decimal"
    return "bytes"


def round_cpu_millicores(cores: float, *, step_millicores: int = CPU_STEP_MILLICORES) -> int:
    """Millicores rounded up to a multiple of ``step_millicores`` (at least one step when > 0)."""
    if cores < 0:
        raise QuantityError(f"negative CPU: {cores}")
    milli = Fraction(Decimal(repr(float(cores)))) * 1000
    return math.ceil(milli / step_millicores) * step_millicores


def round_memory_bytes(memory_bytes: float, *, step_bytes: int = MEMORY_STEP_BYTES) -> int:
    """Bytes rounded up to a multiple of ``step_bytes``."""
    if memory_bytes < 0:
        raise QuantityError(f"negative memory: {memory_bytes}")
    exact = (
        Fraction(Decimal(repr(float(memory_bytes))))
        if isinstance(memory_bytes, float)
        else Fraction(memory_bytes)
    )
    return math.ceil(exact / step_bytes) * step_bytes


def format_cpu(
    cores: float, style: CpuStyle = DEFAULT_CPU_STYLE, *, step_millicores: int = CPU_STEP_MILLICORES
) -> str:
    """A CPU quantity, rounded up: ``format_cpu(0.2501)`` -> ``255m``; ``cores`` style -> ``0.255``."""
    milli = round_cpu_millicores(cores, step_millicores=step_millicores)
    if style == "milli":
        return f"{milli}m"
    whole, frac = divmod(milli, 1000)
    return str(whole) if frac == 0 else f"{whole}.{frac:03d}".rstrip("0")


def format_memory(
    memory_bytes: float, style: MemoryStyle = DEFAULT_MEMORY_STYLE, *, step_bytes: int | None = None
) -> str:
    """A memory quantity, rounded up: ``format_memory(500e6)`` -> ``477Mi``; styles in module doc."""
    if style == "decimal":
        value = round_memory_bytes(memory_bytes, step_bytes=step_bytes or MEMORY_DECIMAL_STEP_BYTES)
        for suffix in ("E", "P", "T", "G", "M", "k"):
            mult = int(DECIMAL_SUFFIXES[suffix])
            if value % mult == 0:
                return f"{value // mult}{suffix}"
        return str(value)
    value = round_memory_bytes(memory_bytes, step_bytes=step_bytes or MEMORY_STEP_BYTES)
    if style == "bytes" or value == 0:
        return str(value)
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        mult = BINARY_SUFFIXES[suffix]
        if value % mult == 0:
            return f"{value // mult}{suffix}"
    return str(value)


def describe_cpu(cores: float | None) -> str:
    """A CPU value as people read it, exactly (no rounding): ``250m``, ``2``, ``1500m``;
    ``-`` when not set."""
    if cores is None:
        return "-"
    milli = Fraction(cores).limit_denominator(10**9) * 1000
    if milli.denominator != 1:
        return f"{cores:g}"
    whole, frac = divmod(int(milli), 1000)
    return str(whole) if frac == 0 else f"{int(milli)}m"


def describe_memory(memory_bytes: int | None) -> str:
    """A memory value as people read it, exactly: the largest suffix that writes it as an
    integer, binary before decimal from ``Mi``/``M`` up (``512Mi``, ``2Gi``, ``128M``), then
    ``Ki``, ``k``, else bytes; ``-`` when not set."""
    if memory_bytes is None:
        return "-"
    if memory_bytes == 0:
        return "0"
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "E", "P", "T", "G", "M", "Ki", "k"):
        mult = BINARY_SUFFIXES.get(suffix) or int(DECIMAL_SUFFIXES[suffix])
        if memory_bytes % mult == 0:
            return f"{memory_bytes // mult}{suffix}"
    return str(memory_bytes)
