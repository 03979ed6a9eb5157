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

from bot.native import address, kernel

_I64, _F64, _PTR = ctypes.c_int64, ctypes.c_double, ctypes.c_void_p
_REPLAY = [_PTR, _PTR, _PTR, _I64, _F64, _F64, _I64, _PTR, _I64, _PTR, _I64, _I64]
_REPLAY += [_PTR, _PTR, _PTR, _PTR, _PTR, _PTR, _PTR, _I64, _F64]
"""``tb_vpa_replay(step_t*, v*, w*, n, start_s, inv_step, steps, starts*, nb, table*, e0,
binades, cum*, totals*, counts*, step_counts*, last_s*, lohi*, vmax*, strict, scale) -> 0 |
-1``."""
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
    starts64: np.ndarray
    """``starts`` as the kernels read them (contiguous ``float64``; ``starts`` itself when it
    is such)."""
    starts_at: int
    table_at: int
    """The addresses of ``starts64`` and ``table``, taken once."""


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
    found = GuessTable(starts, table, e0, binades, s, address(s), address(table))
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


def _starts_at(s: np.ndarray, guess: GuessTable) -> int:
    """The address of the bucket starts ``s`` (``_f64`` of ``guess``'s)."""
    return guess.starts_at if s is guess.starts64 else address(s)


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
    scale: float = 1.0,
) -> Replayed | None:
    """The series through ``tb_vpa_replay`` (bucket layout ``starts``); ``counters`` needs
    step times that never decrease (``strict``: always increase); each weight counts
    ``weights × scale``. None: run the twin."""
    function = kernel("tb_vpa_replay", ctypes.c_int, _REPLAY)
    n = values.size
    if function is None or steps < 1 or step_t.size != n or weights.size != n:
        return None
    guess = guess_table(starts)
    if guess is None:
        return None
    t, v, w, s = _f64(step_t), _f64(values), _f64(weights), _f64(starts)
    nb = s.size
    # One buffer for every output (one address to take): cum, totals, step_counts, last_s,
    # vmax, then counts and lohi as int64.
    cells = steps * nb
    at_top = cells + 3 * steps
    out = np.empty(at_top + 1 + nb + 2)
    base = address(out)
    status = function(
        address(t),
        address(v),
        address(w),
        n,
        start_s,
        1.0 / step_s,
        steps,
        _starts_at(s, guess),
        nb,
        guess.table_at,
        guess.e0,
        guess.binades,
        base,
        base + 8 * cells,
        base + 8 * (at_top + 1),
        base + 8 * (cells + steps) if counters else None,
        base + 8 * (cells + 2 * steps) if counters else None,
        base + 8 * (at_top + 1 + nb),
        base + 8 * at_top,
        int(strict),
        scale,
    )
    if status != 0:
        return None
    ints = out[at_top + 1 :].view(np.int64)
    lo, hi = int(ints[nb]), int(ints[nb + 1])
    return Replayed(
        out[:cells].reshape(steps, nb),
        lo,
        hi,
        out[cells : cells + steps],
        ints[:nb],
        float(out[at_top]),
        out[cells + steps : cells + 2 * steps] if counters else None,
        out[cells + 2 * steps : at_top] if counters else None,
    )


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
        weights.ctypes.data,  # a strided view as a rule: numpy's pointer at once
        rows,
        cols,
        weights.strides[0] // 8,
        address(tot),
        address(qs),
        qs.size,
        epsilon,
        address(hit),
        address(has),
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
        address(v),
        v.size,
        _starts_at(s, guess),
        s.size,
        guess.table_at,
        guess.e0,
        guess.binades,
        address(counts),
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
    nb = 0 if s is None else s.size
    t, v = _f64(times), _f64(values)
    # One buffer for every output: peak, t0, tmax, vmax, then pod, window, entries and the
    # counts as int64.
    out = np.empty(4 * n + 3 + nb)
    base = address(out)
    ints = 2 * n + 2  # where the int64 part starts
    status = function(
        address(t),
        address(p),
        p.itemsize,
        address(v),
        n,
        interval_s,
        base,
        base + 8 * ints,
        base + 8 * (ints + n),
        base + 8 * n,
        base + 8 * (ints + 2 * n),
        None if s is None or guess is None else _starts_at(s, guess),
        nb,
        None if guess is None else guess.table_at,
        0 if guess is None else guess.e0,
        0 if guess is None else guess.binades,
        None if s is None else base + 8 * (ints + 2 * n + 1),
        base + 8 * (2 * n + 1),
        base + 8 * (2 * n),
    )
    if status != 0:
        return None
    tail = out[ints:].view(np.int64)
    m = int(tail[2 * n])
    return WindowPeaks(
        out[:m],
        tail[:m],
        tail[n : n + m],
        out[n : n + m],
        float(out[2 * n]),
        None if s is None else tail[2 * n + 1 :],
        float(out[2 * n + 1]) if s is not None else -math.inf,
    )


_ESTIMATE = [_PTR, _I64, _I64, _I64, _PTR, _I64, _PTR, _I64, _F64, _PTR, _I64, _F64, _PTR, _PTR]
_ESTIMATE += [_F64, _I64, _F64, _I64, _F64, _PTR, _PTR, _PTR, _PTR, _PTR, _PTR, _PTR]
"""``tb_vpa_estimate(w*, steps, cols, stride, totals*, first_bucket, upper_edges*, nb, epsilon,
ps*, cpu, margin, upper_factor*, lower_factor*, pod_min, has_min, min_amount, has_max,
max_amount, target*, lower*, upper*, uncapped*, unfloored*, capped_by*, sticky*) -> 0 | -1``."""


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
    sticky: tuple[float, float]
    """Tortoise's sticky maximum of the target and of the unfloored target over the steps
    (``tortoise.requests.sticky_max`` against the upper bound)."""


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
    # One buffer: the five output rows, one after another, then the percentiles, capped_by
    # and the two sticky maxima.
    out = np.empty(5 * steps + 6)
    out[5 * steps : 5 * steps + 3] = percentiles
    base = address(out)
    status = function(
        weights.ctypes.data,  # a strided view as a rule: numpy's pointer at once
        steps,
        cols,
        stride,
        address(tot),
        first_bucket,
        address(edges),
        edges.size,
        epsilon,
        base + 8 * 5 * steps,
        int(cpu),
        margin,
        address(up),
        address(low),
        pod_min,
        int(bool(min_amount)),
        min_amount or 0.0,
        int(bool(max_amount)),
        max_amount or 0.0,
        base,
        base + 8 * steps,
        base + 16 * steps,
        base + 24 * steps,
        base + 32 * steps,
        base + 8 * (5 * steps + 3),
        base + 8 * (5 * steps + 4),
    )
    if status != 0:
        return None
    rows = out[: 5 * steps].reshape(5, steps)
    capped_by = int(out[5 * steps + 3 : 5 * steps + 4].view(np.int64)[0])
    kept, kept_unfloored = out[5 * steps + 4 :].tolist()
    return Estimated(rows[0], rows[1], rows[2], rows[3], rows[4], capped_by, (kept, kept_unfloored))


_USAGE = [_PTR, _I64, _PTR, _I64, _PTR]
"""``tb_usage_buckets(counts*, nb, ps*, nps, out*) -> 0 | -1``."""


def usage_buckets(counts: np.ndarray, ps: np.ndarray) -> tuple[list[int], int] | None:
    """For each of ``ps`` (a contiguous float64 array), the bucket its percentile of the
    counted samples lands in, and the number of samples; None: run the twin."""
    function = kernel("tb_usage_buckets", ctypes.c_int, _USAGE)
    if function is None or counts.dtype != np.int64 or not counts.flags.c_contiguous:
        return None
    out = np.empty(ps.size + 1, dtype=np.int64)
    if function(address(counts), counts.size, address(ps), ps.size, address(out)) != 0:
        return None
    found: list[int] = out.tolist()
    return found[:-1], found[-1]
