"""Integer amounts as the VPA recommender keeps them (``model/types.go``).

CPU is an int64 of **millicores**, memory an int64 of **bytes**. Float results convert by
"clamp to [0, 1e14], then truncate toward zero" (Go ``int64(x)``); a +Inf multiplier gives
``MAX_RESOURCE_AMOUNT``. These functions accept numpy arrays (one value per replay step).
"""

from __future__ import annotations

import math

import numpy as np

from bot.model import FloatArray, Resource
from bot.recommend.vpa.constants import MAX_RESOURCE_AMOUNT


def amount_from_float(x: FloatArray) -> FloatArray:
    """``resourceAmountFromFloat``: clamp to [0, 1e14] and truncate (NaN, e.g. 0 × Inf, is 0)."""
    return np.trunc(np.fmin(np.fmax(x, 0.0), MAX_RESOURCE_AMOUNT))  # fmax/fmin: NaN -> 0


def amount_from_value(value: FloatArray, resource: Resource) -> FloatArray:
    """``CPUAmountFromCores`` (trunc(cores × 1000)) or ``MemoryAmountFromBytes``."""
    return amount_from_float(value * 1000.0 if resource == "cpu" else value)


def value_from_amount(amount: FloatArray, resource: Resource) -> FloatArray:
    """``CoresFromCPUAmount`` (millicores / 1000) or bytes as float."""
    return amount / 1000.0 if resource == "cpu" else amount.astype(np.float64)


def scale_amount(amount: FloatArray, factor: FloatArray | float) -> FloatArray:
    """``ScaleResource(a, f) = trunc(a × f)``, clamped like every conversion."""
    with np.errstate(invalid="ignore", over="ignore"):
        return amount_from_float(np.asarray(amount, dtype=np.float64) * factor)


def round_up_to_scale(value: int, scale: int) -> int:
    """``RoundUpToScale``: ``ceil(v/s) × s``; unchanged for v == 0 or a scale <= 0."""
    if value == 0 or scale <= 0:
        return value
    return math.ceil(value / scale) * scale
