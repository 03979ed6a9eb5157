"""Decode a Prometheus matrix answer straight into numpy arrays, without a Python object per sample.

A full JSON parse builds a list, a number and a string per sample, which for 14 days of one
namespace is millions of objects; this decoder keeps the JSON parser for the labels only and
reads each series' samples with numpy's C text parser:

    {"status":"success","data":{"resultType":"matrix","result":[
      {"metric":{...labels...},"values":[[t,"v"],[t,"v"],...]}, ...]}[,"warnings":[...]]}

``[``, ``]`` and ``"`` are blanked in the values text, which leaves ``t , v , t , v ...`` for
``numpy.fromstring(sep=",")`` (``NaN``, ``+Inf`` and ``-Inf`` parse as such). Anything that
does not have exactly this shape (another server's key order, an error answer) returns ``None``
and the caller falls back to the full JSON parse, so the fast path can only be faster, never
different (``tests/metrics/test_decode.py`` checks both on the same bytes).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from bot.model import FloatArray
from bot.redaction import excerpt

PREFIX = b'{"status":"success","data":{"resultType":"matrix","result":['
"""How Prometheus (``web/api/v1``, jsoniter encoder) starts a successful matrix answer."""

_METRIC = b'{"metric":'
_VALUES = b',"values":[['
_END = b"]]}"
_BLANK = bytes.maketrans(b'[]"', b"   ")


MAX_WARNINGS = 10
"""Warnings kept from one answer (each a bounded excerpt, ``bot.redaction.excerpt``)."""


def warnings_of(raw: object) -> tuple[str, ...]:
    """The ``warnings`` of an answer as bounded, redacted excerpts, at most ``MAX_WARNINGS``."""
    if not isinstance(raw, list | tuple):
        return ()
    return tuple(excerpt(str(w)) for w in raw[:MAX_WARNINGS])


@dataclass(frozen=True, slots=True)
class DecodedMatrix:
    """Series of a matrix answer: (labels, timestamps in seconds, values), and the warnings."""

    series: list[tuple[dict[str, Any], FloatArray, FloatArray]]
    warnings: tuple[str, ...]


def decode_matrix(content: bytes) -> DecodedMatrix | None:
    """The series of a successful matrix answer, or ``None`` if ``content`` has another shape."""
    if not content.startswith(PREFIX):
        return None
    pos = len(PREFIX)
    series: list[tuple[dict[str, Any], FloatArray, FloatArray]] = []
    try:
        while content.startswith(_METRIC, pos):
            values_at = content.find(_VALUES, pos)
            if values_at < 0:
                return None
            labels = orjson.loads(content[pos + len(_METRIC) : values_at])
            start = values_at + len(_VALUES)
            end = content.find(_END, start)
            if end < 0 or not isinstance(labels, dict):
                return None
            with warnings.catch_warnings():  # numpy < 2 only warns on unparsable text
                warnings.simplefilter("error", DeprecationWarning)
                numbers = np.fromstring(content[start:end].translate(_BLANK).decode(), sep=",")
            if len(numbers) % 2:
                return None
            series.append((labels, numbers[0::2].copy(), numbers[1::2].copy()))
            pos = end + len(_END)
            if content.startswith(b",", pos):
                pos += 1
        rest = content[pos:]
        if rest == b"]}}":
            return DecodedMatrix(series, ())
        if not rest.startswith(b"]},"):
            return None
        tail = orjson.loads(b"{" + rest[3:])
    except (ValueError, DeprecationWarning, orjson.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(tail, dict) or set(tail) - {"warnings", "infos"}:
        return None
    return DecodedMatrix(series, warnings_of(tail.get("warnings")))
