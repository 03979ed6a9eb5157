"""VPA histograms replayed in one pass (``vpa_histogram.c``), called with numpy arrays.

The Python twins are ``bot/recommend/vpa/aggregate.py`` (``replay_rows``, ``cpu_counters``,
``usage_from_counts``) and ``bot/recommend/vpa/histogram.py`` (``find_buckets``,
``percentiles``). Each function returns ``None`` when the kernel is not built or switched off,
or when the input holds a value it does not take (NaN, infinite or negative values): the caller
runs the twin then.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import numpy as np

from bot.native import kernel

_I64, _F64, _PTR = ctypes.c_int64, ctypes.c_double, ctypes.c_void_p
_REPLAY = [_PTR, _PTR, _PTR, _I64, _F64, _F64, _I64, _PTR, _I64, _PTR, _I64, _I64]
_REPLAY += [_PTR, _PTR, _PTR, _PTR, _PTR, _PTR, _PTR, _I64]
"""``tb_vpa_replay(step_t*, v*, w*, n, start_s, inv_step, steps, starts*, nb, table*, e0,
binades, cum*, totals*, counts*, step_counts*, last_s*, lohi*, vmax*, strict) -> 0 | -1``."""
_COUNTS = [_PTR, _I64, _PTR, _I64, _PTR, _I64, _I64, _PTR, _PTR]
"""``tb_bucket_counts(v*, n, starts*, nb, table*, e0, binades, counts*, vmax*) -> 0 | -1``."""

_PEAKS = [_PTR, _PTR, _I64, _PTR, _I64, _F64, _PTR, _PTR, _PTR, _PTR, _PTR]
_PEAKS += [_PTR, _I64, _PTR, _I64, _I64, _PTR, _PTR, _PTR]
"""``tb_memory_peaks(t*, pods*, pod_bytes, v*, n, interval, peak*, pod_of*, window_of*, t0_of*,
entries*, starts*, nb, table*, e0, binades, counts*, vmax*, tmax*) -> 0 | -1``."""

SUB_BITS = 7
"""Parts per power of two in a guess table (``vpa_histogram.c``)."""


@dataclass(frozen=True, slots=True, eq=False)
class GuessTable:
    """Where ``vpa_histogram.c`` starts looking for a bucket: per power of two from ``2^e0`` on
    (``binades`` of them, up to the last bucket start), cut in ``2^SUB_BITS`` equal parts, the
    bucket of each part's lowest value (``int32``). Only saves comparisons: the kernels find
    the exact bucket from any table."""

    starts: np.ndarray
    """The bucket starts it was made from (kept, so their ``id`` stays theirs)."""
    table: np.ndarray
    e0: int
    binades: int


_TABLES: dict[int, GuessTable] = {}


def guess_table(starts: np.ndarray) -> GuessTable | None:
    """The ``GuessTable`` of bucket starts (increasing, ``starts[0] == 0``), made once per
    starts array; None for a layout it does not fit (fewer than two buckets, or starts that are
    not finite and increasing)."""
    found = _TABLES.get(id(starts))
    if found is not None and found.starts is starts:
        return found
    s = _f64(starts)
    if s.size < 2 or not (s[0] == 0 and bool(np.all(np.diff(s) > 0)) and np.isfinite(s[-1])):
        return None
    e0 = math.frexp(float(s[1]))[1] - 1  # 2^e0 <= starts[1]: below it, bucket 0
    binades = math.frexp(float(s[-1]))[1] - e0  # starts[-1] < 2^(e0 + binades)
    parts = 1 << SUB_BITS
    powers = np.ldexp(1.0, np.arange(e0, e0 + binades))
    lows = (1.0 + np.arange(parts) / parts)[None, :] * powers[:, None]
    table = (np.searchsorted(s, lows.ravel(), side="right") - 1).astype(np.int32)
    found = GuessTable(starts, table, e0, binades)
    if len(_TABLES) < 64:
        _TABLES[id(starts)] = found
    return found


_ROWS = [_PTR, _I64, _I64, _I64, _PTR, _PTR, _I64, _F64, _PTR, _PTR]
"""``tb_percentile_rows(w*, rows, cols, stride, totals*, ps*, nps, epsilon, hit*, has*)``."""


@dataclass(frozen=True, slots=True, eq=False)
class Replayed:
    """One series on the grid: cumulative (step x bucket) weights in the columns
    ``[lo, hi)``, cumulative weights per step, samples per bucket and the largest value; with
    counters, the samples in steps up to each step and the last step time (else None)."""

    cum: np.ndarray
    lo: int
    hi: int
    totals: np.ndarray
    counts: np.ndarray
    top: float
    step_counts: np.ndarray | None
    last_s: np.ndarray | None


def _f64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def replay(
    step_t: np.ndarray,
    values: np.ndarray,
    weights: np.ndarray,
    *,
    start_s: float,
    step_s: float,
    steps: int,
    starts: np.ndarray,
    counters: bool,
    strict: bool = False,
) -> Replayed | None:
    """The series through ``tb_vpa_replay`` (bucket layout ``starts``); ``counters`` needs
    step times that never decrease (``strict``: always increase). None: run the twin."""
    function = kernel("tb_vpa_replay", ctypes.c_int, _REPLAY)
    n = values.size
    if function is None or steps < 1 or step_t.size != n or weights.size != n:
        return None
    guess = guess_table(starts)
    if guess is None:
        return None
    t, v, w, s = _f64(step_t), _f64(values), _f64(weights), _f64(starts)
    nb = s.size
    cum = np.empty((steps, nb))
    totals = np.empty(steps)
    counts = np.empty(nb, dtype=np.int64)
    step_counts = np.empty(steps) if counters else None
    last_s = np.empty(steps) if counters else None
    lohi = np.empty(2, dtype=np.int64)
    top = ctypes.c_double()
    status = function(
        t.ctypes.data,
        v.ctypes.data,
        w.ctypes.data,
        n,
        start_s,
        1.0 / step_s,
        steps,
        s.ctypes.data,
        nb,
        guess.table.ctypes.data,
        guess.e0,
        guess.binades,
        cum.ctypes.data,
        totals.ctypes.data,
        counts.ctypes.data,
        None if step_counts is None else step_counts.ctypes.data,
        None if last_s is None else last_s.ctypes.data,
        lohi.ctypes.data,
        ctypes.addressof(top),
        int(strict),
    )
    if status != 0:
        return None
    lo, hi = int(lohi[0]), int(lohi[1])
    return Replayed(cum, lo, hi, totals, counts, top.value, step_counts, last_s)


def percentile_rows(
    weights: np.ndarray, totals: np.ndarray, ps: tuple[float, ...], epsilon: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """Per ``p`` (rows of the result) and row of ``weights`` (rows x columns), the column its
    percentile lands in, and whether the row has a column >= ``epsilon``; None: run the twin."""
    function = kernel("tb_percentile_rows", ctypes.c_int, _ROWS)
    if function is None or weights.ndim != 2 or weights.dtype != np.float64:
        return None
    rows, cols = weights.shape
    if cols == 0 or weights.strides[1] != 8 or weights.strides[0] % 8:
        return None
    tot = _f64(np.broadcast_to(np.asarray(totals, dtype=np.float64), (rows,)))
    qs = np.asarray(ps, dtype=np.float64)
    hit = np.empty((qs.size, rows), dtype=np.int64)
    has = np.empty(rows, dtype=np.int64)
    status = function(
        weights.ctypes.data,
        rows,
        cols,
        weights.strides[0] // 8,
        tot.ctypes.data,
        qs.ctypes.data,
        qs.size,
        epsilon,
        hit.ctypes.data,
        has.ctypes.data,
    )
    return (hit, has.astype(bool)) if status == 0 else None


def bucket_counts(values: np.ndarray, *, starts: np.ndarray) -> tuple[np.ndarray, float] | None:
    """Samples per bucket (``int64``) of the layout ``starts``, and the largest value; None:
    run the twin."""
    function = kernel("tb_bucket_counts", ctypes.c_int, _COUNTS)
    guess = guess_table(starts) if function is not None else None
    if function is None or guess is None:
        return None
    v, s = _f64(values), _f64(starts)
    counts = np.empty(s.size, dtype=np.int64)
    top = ctypes.c_double()
    status = function(
        v.ctypes.data,
        v.size,
        s.ctypes.data,
        s.size,
        guess.table.ctypes.data,
        guess.e0,
        guess.binades,
        counts.ctypes.data,
        ctypes.addressof(top),
    )
    return (counts, top.value) if status == 0 else None


def _pods(pods: np.ndarray) -> np.ndarray | None:
    """Pod indices as the kernels read them (``int32`` or ``int64``, contiguous), or None."""
    if pods.dtype not in (np.int32, np.int64):
        return None
    return np.ascontiguousarray(pods)


@dataclass(frozen=True, slots=True, eq=False)
class WindowPeaks:
    """One entry per (pod, window) with samples, pod by pod and window by window: the largest
    value, the pod, the window (``k``) and the pod's first time; the latest time; with bucket
    starts, the samples per bucket and the largest value (else None and -inf)."""

    peak: np.ndarray
    pod: np.ndarray
    window: np.ndarray
    t0: np.ndarray
    latest_s: float
    counts: np.ndarray | None = None
    top: float = -math.inf


def memory_peaks(
    times: np.ndarray,
    pods: np.ndarray,
    values: np.ndarray,
    interval_s: float,
    starts: np.ndarray | None = None,
) -> WindowPeaks | None:
    """``tb_memory_peaks`` of samples grouped by pod in time order, with ``starts`` also their
    usage buckets; None: run the twin."""
    function = kernel("tb_memory_peaks", ctypes.c_int, _PEAKS)
    p = _pods(pods) if function is not None else None
    n = values.size
    if function is None or p is None or not (times.size == pods.size == n):
        return None
    guess = None if starts is None else guess_table(starts)
    if starts is not None and guess is None:
        return None
    s = None if starts is None else _f64(starts)
    counts = None if s is None else np.empty(s.size, dtype=np.int64)
    t, v = _f64(times), _f64(values)
    peak, t0 = np.empty(n), np.empty(n)
    pod, window = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    entries = ctypes.c_int64()
    top, latest = ctypes.c_double(), ctypes.c_double()
    status = function(
        t.ctypes.data,
        p.ctypes.data,
        p.itemsize,
        v.ctypes.data,
        n,
        interval_s,
        peak.ctypes.data,
        pod.ctypes.data,
        window.ctypes.data,
        t0.ctypes.data,
        ctypes.addressof(entries),
        None if s is None else s.ctypes.data,
        0 if s is None else s.size,
        None if guess is None else guess.table.ctypes.data,
        0 if guess is None else guess.e0,
        0 if guess is None else guess.binades,
        None if counts is None else counts.ctypes.data,
        ctypes.addressof(top),
        ctypes.addressof(latest),
    )
    if status != 0:
        return None
    m = entries.value
    return WindowPeaks(
        peak[:m],
        pod[:m],
        window[:m],
        t0[:m],
        latest.value,
        counts,
        top.value if counts is not None else -math.inf,
    )


_ESTIMATE = [_PTR, _I64, _I64, _I64, _PTR, _I64, _PTR, _I64, _F64, _PTR, _I64, _F64, _PTR, _PTR]
_ESTIMATE += [_F64, _I64, _F64, _I64, _F64, _PTR, _PTR, _PTR, _PTR, _PTR, _PTR]
"""``tb_vpa_estimate(w*, steps, cols, stride, totals*, first_bucket, upper_edges*, nb, epsilon,
ps*, cpu, margin, upper_factor*, lower_factor*, pod_min, has_min, min_amount, has_max,
max_amount, target*, lower*, upper*, uncapped*, unfloored*, capped_by*) -> 0 | -1``."""


@dataclass(frozen=True, slots=True, eq=False)
class Estimated:
    """Per replay step: capped target, lower and upper bound, uncapped and unfloored target
    (cores or bytes); ``capped_by`` 0, 1 (minAllowed) or 2 (maxAllowed) at the last step."""

    target: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    uncapped: np.ndarray
    unfloored: np.ndarray
    capped_by: int


def estimate(
    weights: np.ndarray,
    totals: np.ndarray,
    *,
    first_bucket: int,
    upper_edges: np.ndarray,
    epsilon: float,
    percentiles: tuple[float, float, float],
    cpu: bool,
    margin: float,
    upper_factor: np.ndarray,
    lower_factor: np.ndarray,
    pod_min: float,
    min_amount: float | None,
    max_amount: float | None,
) -> Estimated | None:
    """The estimator chain over the replayed rows ``weights`` (steps x buckets from
    ``first_bucket``) in one compiled pass; None: run the twin."""
    function = kernel("tb_vpa_estimate", ctypes.c_int, _ESTIMATE)
    if function is None or weights.ndim != 2 or weights.dtype != np.float64:
        return None
    steps, cols = weights.shape
    if steps < 1 or (cols and (weights.strides[1] != 8 or weights.strides[0] < 8 * cols)):
        return None
    stride = weights.strides[0] // 8 if cols else 0
    tot = _f64(totals)
    edges = _f64(upper_edges)
    up, low = _f64(upper_factor), _f64(lower_factor)
    if tot.size != steps or up.size != steps or low.size != steps or weights.strides[0] % 8:
        return None
    ps = np.array(percentiles, dtype=np.float64)
    out = np.empty((5, steps))
    base = out.ctypes.data  # its five rows, one after another
    capped_by = ctypes.c_int64()
    status = function(
        weights.ctypes.data,
        steps,
        cols,
        stride,
        tot.ctypes.data,
        first_bucket,
        edges.ctypes.data,
        edges.size,
        epsilon,
        ps.ctypes.data,
        int(cpu),
        margin,
        up.ctypes.data,
        low.ctypes.data,
        pod_min,
        int(bool(min_amount)),
        min_amount or 0.0,
        int(bool(max_amount)),
        max_amount or 0.0,
        *(base + k * 8 * steps for k in range(5)),
        ctypes.addressof(capped_by),
    )
    if status != 0:
        return None
    return Estimated(out[0], out[1], out[2], out[3], out[4], capped_by.value)
