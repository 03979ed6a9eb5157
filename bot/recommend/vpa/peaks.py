"""Memory peaks: one per pod and aggregation window, with OOM kills as bumps
(``model/container.go``: ``addMemorySample``, ``RecordOOM``).

The VPA feeds its memory histogram the largest working-set sample of each pod in each window of
``memory_aggregation_interval_s`` (windows start at each pod's first sample), entered at the
window's end; an OOM kill adds a sample ``max(used + min_bump, trunc(used × ratio))``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bot.model import FloatArray, IntArray
from bot.recommend.vpa.samples import SampleOrder, accepted, sample_order


@dataclass(frozen=True, slots=True, eq=False)
class MemoryPeaks:
    """One peak per pod per aggregation window, entered at the window end."""

    values: FloatArray
    window_start_s: FloatArray
    window_end_s: FloatArray
    oom_bumps: FloatArray
    """The memory sample each OOM kill produced (``needed``), one per accepted OOM."""


def memory_peaks(
    times_s: FloatArray,
    pods: IntArray,
    usage_bytes: FloatArray,
    *,
    oom_times_s: FloatArray,
    oom_pods: IntArray,
    oom_request_bytes: FloatArray,
    interval_s: float,
    oom_bump_up_ratio: float,
    oom_min_bump_up_bytes: float,
    order: SampleOrder | None = None,
) -> MemoryPeaks:
    """Per-pod window peaks with OOM bumps (``model/container.go``, ``addMemorySample``,
    ``RecordOOM``).

    Windows of ``interval_s`` start at each pod's first sample (usage or OOM), so a sample at
    ``t`` belongs to the window ending at ``t0 + (floor((t - t0)/I) + 1)·I``. Its peak is the
    largest usage sample in it, raised by OOM samples
    ``needed = max(used + min_bump, trunc(used × ratio))`` where ``used = max(request at the OOM,
    usage peak of that window up to the OOM)``; OOM samples never feed ``used`` (no runaway).
    Deviation: the rare "first sample of a window is 0 bytes" quirk is not reproduced.

    ``order`` (``sample_order(..., strict=False)`` of the usage series) may be passed when known.
    """
    ok_oom = np.isfinite(oom_request_bytes) & (oom_request_bytes >= 0)
    if not ok_oom.any() and times_s.size:
        if order is None:
            order = sample_order(times_s, pods, usage_bytes, strict=False)
        if order.all_accepted:
            fast = _peaks_in_order(times_s, pods, usage_bytes, interval_s, one_pod=order.one_pod)
            if fast is not None:
                return fast
    keep = accepted(times_s, pods, usage_bytes, strict=False)
    if bool(keep.all()):
        t, p, v = times_s, pods.astype(np.intp), usage_bytes
    else:
        t, p, v = times_s[keep], pods[keep].astype(np.intp), usage_bytes[keep]
    ot, op, orq = oom_times_s[ok_oom], oom_pods[ok_oom].astype(np.intp), oom_request_bytes[ok_oom]
    if t.size == 0 and ot.size == 0:
        empty = np.zeros(0)
        return MemoryPeaks(empty, empty, empty, empty)
    n_pods = int(max(p.max(initial=-1), op.max(initial=-1))) + 1
    t0 = np.full(n_pods, np.inf)
    grouped = p.size > 0 and bool(np.all(p[1:] >= p[:-1]))
    if grouped:
        firsts = np.flatnonzero(np.r_[True, p[1:] != p[:-1]])
        t0[p[firsts]] = np.minimum.reduceat(t, firsts)
    else:
        np.minimum.at(t0, p, t)
    np.minimum.at(t0, op, ot)
    k = np.floor((t - t0[p]) / interval_s).astype(np.intp)
    ok_k = np.floor((ot - t0[op]) / interval_s).astype(np.intp)
    n_windows = int(max(k.max(initial=0), ok_k.max(initial=0))) + 1
    key = p * n_windows + k
    peak = np.full(n_pods * n_windows, -1.0)
    if grouped and bool(np.all(key[1:] >= key[:-1])):
        # Grouped by pod and in time order (the common case): one reduceat per window.
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        peak[key[starts]] = np.maximum.reduceat(v, starts)
    else:
        np.maximum.at(peak, key, v)
    bumps = np.zeros(ot.size)
    for i in range(ot.size):
        same = (key == op[i] * n_windows + ok_k[i]) & (t <= ot[i])
        used = max(float(orq[i]), float(v[same].max()) if same.any() else 0.0)
        needed = max(used + oom_min_bump_up_bytes, math.trunc(used * oom_bump_up_ratio))
        bumps[i] = needed
    if ot.size:
        np.maximum.at(peak, op * n_windows + ok_k, bumps)
    return _window_peaks(peak, t0, n_windows, interval_s, bumps)


def _window_peaks(
    peak: FloatArray, t0: FloatArray, n_windows: int, interval_s: float, bumps: FloatArray
) -> MemoryPeaks:
    """``MemoryPeaks`` from the (pod × window) peak table (-1: no sample), by window end."""
    present = np.flatnonzero(peak >= 0)
    pod_of = present // n_windows
    win_of = present % n_windows
    starts = t0[pod_of] + win_of * interval_s
    order = np.argsort(starts + interval_s, kind="stable")
    return MemoryPeaks(peak[present][order], starts[order], (starts + interval_s)[order], bumps)


MAX_POD_RUNS = 64
"""``_peaks_in_order`` searches window edges pod by pod, up to this many pods."""


def _peaks_in_order(
    t: FloatArray, pods: IntArray, v: FloatArray, interval_s: float, *, one_pod: bool = False
) -> MemoryPeaks | None:
    """``memory_peaks`` for accepted samples grouped by pod in time order without OOM kills:
    the same peak table, found from window edges instead of a window index per sample.

    Each pod's window index ``floor((t - t0) / I)`` never decreases along its samples, so a
    binary search on the edges ``t0 + j·I`` finds where each window starts; the positions are
    kept only when the formula itself, applied to the two samples around each, agrees (else
    None, and the caller takes the general path).
    """
    n = t.size
    if one_pod or int(pods.min()) == int(pods.max()):
        firsts = np.zeros(1, dtype=np.intp)
    else:
        firsts = np.flatnonzero(np.concatenate(([True], pods[1:] != pods[:-1])))
        if firsts.size > MAX_POD_RUNS:
            return None
    ends = np.append(firsts[1:], n)
    pod_ids = pods[firsts].astype(np.intp)
    n_pods = int(pod_ids.max()) + 1
    t0 = np.full(n_pods, np.inf)
    t0[pod_ids] = t[firsts]
    last_k = np.floor((t[ends - 1] - t0[pod_ids]) / interval_s).astype(np.intp)
    n_windows = max(int(last_k.max()), 0) + 1
    starts_parts: list[np.ndarray] = []
    keys_parts: list[np.ndarray] = []
    for a, e, pod, k_max in zip(
        firsts.tolist(), ends.tolist(), pod_ids.tolist(), last_k.tolist(), strict=True
    ):
        first_t = t0[pod]
        js = np.arange(1, k_max + 1, dtype=np.intp)
        pos = a + np.searchsorted(t[a:e], first_t + js * interval_s)
        below = np.floor((t[np.maximum(pos - 1, a)] - first_t) / interval_s)
        above = np.floor((t[np.minimum(pos, e - 1)] - first_t) / interval_s)
        if not bool(np.all((pos > a) & (below < js) & ((pos == e) | (above >= js)))):
            return None
        nonempty = pos < np.append(pos[1:], e)
        starts_parts += [np.array([a], dtype=np.intp), pos[nonempty]]
        keys_parts += [np.array([pod * n_windows]), pod * n_windows + js[nonempty]]
    starts = np.concatenate(starts_parts)
    peak = np.full(n_pods * n_windows, -1.0)
    peak[np.concatenate(keys_parts)] = np.maximum.reduceat(v, starts)
    return _window_peaks(peak, t0, n_windows, interval_s, np.zeros(0))
