"""Restart events, crash-loop periods and unexplained counter resets, from fetched series.

Pure: no I/O. A *restart event* is an increase of kube-state-metrics'
``kube_pod_container_status_restarts_total`` between two consecutive step values of one
(pod, container), at the later step, counted as many times as the counter rose (after a drop of
that counter, a new pod with the same name, its new value). A value already above zero at the
first sample is a restart before the window: it has no time and is not an event.

A *crash loop* is a run of at least ``CRASH_LOOP_RESTARTS`` restarts of one container within
``CRASH_LOOP_WINDOW_S``; runs whose restarts follow each other within that window merge, so a
loop lasts while it continues. Its period is ``[first restart - CRASH_LOOP_PAD_S,
last restart + CRASH_LOOP_PAD_S)``: the container was already failing before its first restart
and the kubelet's back-off (at most ``CRASH_LOOP_PAD_S``, ``MaxContainerBackOff`` in
kubernetes ``pkg/kubelet/kubelet.go``) keeps it down after the last. The periods of every
container of a workload are merged into the workload's ``crash_loops_s``.

A CPU counter reset (a sample below the previous one in one raw series) is *explained* when a
restart event of the same (pod, container) lies within ``RESET_TOLERANCE_STEPS`` steps of it
(cAdvisor and kube-state-metrics are scraped at different moments).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from bot.model import FloatArray

CRASH_LOOP_RESTARTS = 3
"""Restarts of one container that make a crash loop when they fall within the window."""

CRASH_LOOP_WINDOW_S = 600.0
"""Longest span of ``CRASH_LOOP_RESTARTS`` restarts, and longest pause inside one loop."""

CRASH_LOOP_PAD_S = 300.0
"""Added before the first and after the last restart of a loop (the kubelet's longest back-off)."""

Counts = npt.NDArray[np.int64]
"""Sample indices or restart counts."""

RESET_TOLERANCE_STEPS = 2.0
"""A counter reset this many steps or fewer from a restart event is explained by it."""


def _rises(t: FloatArray, counts: FloatArray) -> tuple[FloatArray, Counts, Counts]:
    """(finite sample times, index of each sample where the counter rose, restarts it added)."""
    finite = np.isfinite(counts)
    t, counts = t[finite], counts[finite]
    if len(t) < 2:
        return t, np.zeros(0, np.int64), np.zeros(0, np.int64)
    rise = np.diff(counts)
    added = np.round(np.where(rise >= 0, rise, counts[1:])).astype(np.int64)
    at = np.flatnonzero(added > 0)
    return t, at + 1, added[at]


def restart_events(t: FloatArray, counts: FloatArray) -> FloatArray:
    """Times of the restarts seen in one step-aligned restart-counter series, one per restart."""
    t, at, added = _rises(t, counts)
    return np.repeat(t[at], added).astype(np.float64)


def oom_kills(
    t: FloatArray, counts: FloatArray, oom_t: FloatArray, oom_request: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """(time, memory request) of each OOM kill of one container, one row per restart.

    ``t``/``counts``: its step-aligned restart counter, sampled however often kube-state-metrics
    was scraped (gaps allowed); ``oom_t``/``oom_request``: the steps at which kube-state-metrics
    reported its last termination reason as ``OOMKilled``, with the memory request reported in
    that step (0 when unknown). A rise of the counter at ``t_i`` (the first sample showing it,
    see ``restart_events``) is an OOM kill when the reason was reported ``OOMKilled`` between
    that rise and the next one ``t_j``: in ``(t_i, t_j)`` when the counter has a sample there
    (later samples hold only scrapes after the restart, so an earlier OOM's reason still
    reported in the step of a restart for another reason does not count), else in
    ``[t_i, t_j)``. The last termination reason only changes with a restart, so any sample in
    that span tells the reason of that restart. The request is the one reported at the first
    ``OOMKilled`` step in ``[t_i, t_j)``. A rise by ``n`` gives ``n`` rows at ``t_i``
    (kube-state-metrics keeps only the last reason; those restarts came between two scrapes).
    """
    t, at, added = _rises(t, counts)
    order = np.argsort(oom_t, kind="stable")
    oom_t, oom_request = oom_t[order], oom_request[order]
    if not len(at) or not len(oom_t):
        return np.zeros(0, np.float64), np.zeros(0, np.float64)
    rise_t = t[at]
    next_t = np.append(rise_t[1:], np.inf)
    settled = t[np.append(at[1:], len(t)) - 1] > rise_t  # a sample after the rise, before the next
    low = np.where(
        settled, np.searchsorted(oom_t, rise_t, "right"), np.searchsorted(oom_t, rise_t, "left")
    )
    high = np.searchsorted(oom_t, next_t, "left")
    killed = high > low
    first = np.searchsorted(oom_t, rise_t, "left")[killed]
    return (
        np.repeat(rise_t[killed], added[killed]).astype(np.float64),
        np.repeat(oom_request[first], added[killed]).astype(np.float64),
    )


def crash_loops(
    events_s: FloatArray,
    *,
    restarts: int = CRASH_LOOP_RESTARTS,
    window_s: float = CRASH_LOOP_WINDOW_S,
    pad_s: float = CRASH_LOOP_PAD_S,
) -> list[tuple[float, float]]:
    """Crash-loop periods of one container from its restart times (definition in the module doc)."""
    t = np.sort(np.asarray(events_s, dtype=np.float64))
    if len(t) < restarts:
        return []
    dense = t[restarts - 1 :] - t[: len(t) - restarts + 1] <= window_s
    looping = np.zeros(len(t), dtype=bool)
    for first in np.flatnonzero(dense).tolist():
        looping[first : first + restarts] = True
    marked = t[looping]
    if not len(marked):
        return []
    out: list[tuple[float, float]] = []
    begin = prev = float(marked[0])
    for x in marked[1:].tolist():
        if x - prev > window_s:
            out.append((begin - pad_s, prev + pad_s))
            begin = x
        prev = x
    out.append((begin - pad_s, prev + pad_s))
    return merge_intervals(out)


def merge_intervals(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sorted, overlapping or touching half-open intervals joined into one."""
    out: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def unexplained_resets(resets_s: FloatArray, events_s: FloatArray, *, step_s: float) -> int:
    """How many counter resets have no restart event within ``RESET_TOLERANCE_STEPS`` steps."""
    if not len(resets_s):
        return 0
    if not len(events_s):
        return len(resets_s)
    events = np.sort(events_s)
    at = np.clip(np.searchsorted(events, resets_s), 1, len(events) - 1) if len(events) > 1 else None
    if at is None:
        nearest = np.abs(resets_s - events[0])
    else:
        nearest = np.minimum(np.abs(resets_s - events[at - 1]), np.abs(resets_s - events[at]))
    return int((nearest > RESET_TOLERANCE_STEPS * step_s + 1e-6).sum())
