"""Raw samples to step values in C (``step_rates.c``), called with numpy arrays.

The numpy twins, and the formulas, are in ``bot/metrics/raw.py`` (``counter_rates``,
``step_max``). The kernels take the usual case (every kept sample in a step of its own, in
time order) and return ``None`` for any other, which the twins then compute.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from bot.native import address, kernel

_I64, _F64, _PTR = ctypes.c_int64, ctypes.c_double, ctypes.c_void_p
_COUNTER = [_PTR, _PTR, _I64, _F64, _I64, _F64, _F64, _PTR, _PTR, _PTR]
"""``tb_counter_rates(t*, v*, n, first, steps, step, max_gap, out_t*, out_v*, count*)``."""
_GAUGE = [_PTR, _PTR, _I64, _F64, _I64, _F64, _PTR, _PTR, _PTR]
"""``tb_step_max(t*, v*, n, first, steps, step, out_t*, out_v*, count*)``."""

STEPS_MAX = 2**62
"""Largest step number passed to the kernels (an int64)."""


def _run(
    name: str,
    signature: list[Any],
    t: np.ndarray,
    v: np.ndarray,
    *,
    scalars: tuple[float | int, ...],
    size: int,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Kernel ``name`` on float64 samples ``t``, ``v`` with ``scalars`` (first, steps, step and
    any more), into ``size`` outputs: ``(times, values)`` written, or ``None`` (not built,
    other dtypes, a step number beyond int64, or the kernel's own refusal)."""
    run = kernel(name, ctypes.c_int, signature)
    if run is None or t.dtype != np.float64 or v.dtype != np.float64 or len(t) != len(v):
        return None
    if not -STEPS_MAX < int(scalars[1]) < STEPS_MAX:
        return None
    tt, vv = np.ascontiguousarray(t), np.ascontiguousarray(v)
    out_t = np.empty(max(size, 0), dtype=np.float64)
    out_v = np.empty(max(size, 0), dtype=np.float64)
    count = ctypes.c_int64(0)
    status = run(
        address(tt),
        address(vv),
        len(tt),
        *scalars,
        address(out_t),
        address(out_v),
        ctypes.addressof(count),
    )
    if status != 0:
        return None
    return out_t[: count.value], out_v[: count.value]


def counter_rates(
    t: np.ndarray, v: np.ndarray, *, first_s: float, steps: int, step_s: float, max_gap_s: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """(evaluation times, rates) of one counter series, as ``raw.counter_rates`` gives them
    (``steps``: the last step's number; ``max_gap_s``: the largest pair gap, tolerance
    included), or ``None``: not built, or not the usual case (run the twin then)."""
    scalars = (first_s, steps, step_s, max_gap_s)
    return _run("tb_counter_rates", _COUNTER, t, v, scalars=scalars, size=len(t) - 1)


def step_max(
    t: np.ndarray, v: np.ndarray, *, first_s: float, steps: int, step_s: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """(evaluation times, highest sample of each step) of one gauge series, as
    ``raw.step_max`` gives them, or ``None`` (as ``counter_rates``)."""
    return _run("tb_step_max", _GAUGE, t, v, scalars=(first_s, steps, step_s), size=len(t))
