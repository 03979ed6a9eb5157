"""What one set of values would have done over a recorded window: ``replay(series, values)``.

Pure and deterministic: the same series and values give the same figures, so the current
values and a proposal equal to them give identical figures on both sides.

* **Replicas**: with an HPA, the controller replayed on each metric's total demand
  (``controller.py``) under the values' requests, targets and min/max; without one (or with no
  resource metric to replay), the recorded replica counts. The load of one pod is then the
  recorded load of one pod × recorded replicas / serving replicas: a pod the HPA adds
  carries load only once started (``pod_startup_s``; ``ReplicaPath.serving``).
* **CPU**, per container and pod: minutes above the request (contention risk), above the limit
  (throttling), and the 95th percentile of usage as a percentage of the request.
* **Memory**, per container and pod (the working set of one pod is taken as recorded): OOM
  episodes at the limit (a run of samples at or above it, plus each recorded OOM kill at a
  limit no lower than this one that no such run explains: the kill happened between scrapes);
  without a limit, minutes above the request (eviction risk); headroom at the peak.
* **Capacity shortfall** (HPA only): steps at maxReplicas with utilisation above the target
  beyond the tolerance, and steps when new pods are still starting (``pod_startup_s``) while the
  serving pods would run above their requests.
* **Cost**: requested core-hours and GiB-hours, with the replicas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from bot.model import (
    GIB,
    HOURS_PER_WEEK,
    SECONDS_PER_HOUR,
    CpuReplay,
    FloatArray,
    MemoryReplay,
    ReplayFigures,
    ReplicaReplay,
)
from bot.recommend.replay.controller import Metric
from bot.recommend.replay.exact import replay_reach
from bot.recommend.replay.series import ContainerSeries, ReplaySeries
from bot.recommend.replay.values import ContainerValues, HpaValues, Options, Values, hpa_metrics

KILL_MATCH_STEPS = 2
"""A recorded OOM kill within this many steps after a sample at or above the limit is that
sample's episode (kube-state-metrics and cAdvisor are scraped at different moments)."""


def _percentile_of(values: FloatArray, q: int, *, scratch: bool = False) -> float:
    """``np.percentile(values, q)`` (linear interpolation, numpy's rounding); ``scratch``:
    ``values`` is a temporary that may be reordered. From one partial sort at the lower rank:
    the next order statistic is the smallest value above it."""
    n = values.size
    if not n:
        return 0.0
    if not scratch or not bool(np.isfinite(values).all()):
        return float(np.percentile(values, q))
    virtual = (n - 1) * float(np.true_divide(q, 100))  # numpy's virtual index
    if not virtual < n - 1:
        return float(values.max())
    below = math.floor(virtual)
    low, high = _order_pair(values, below)
    weight = virtual - below
    if weight >= 0.5:  # numpy's _lerp
        return high - (high - low) * (1 - weight)
    return low + (high - low) * weight


SAMPLE_STRIDE = 16
"""``_order_pair`` guesses a threshold from every 16th value."""


def _order_pair(values: FloatArray, k: int) -> tuple[float, float]:
    """The ``k``-th and ``k + 1``-th smallest of finite ``values`` (0-based, ``k + 1 < n``),
    which may be reordered.

    A partial sort of the whole array costs ~150 µs at 20,160 values. Instead, a threshold a
    few standard errors below the ``k/n`` quantile of a strided sample keeps the values at or
    above it; when no more than ``k`` values lie below it, the pair is the pair of ranks ``k -
    below`` and ``k - below + 1`` among the kept ones (exactly: the values below the threshold
    are all smaller). Otherwise, or for short arrays, the whole array is partially sorted."""
    n = values.size
    if n >= 64 * SAMPLE_STRIDE:
        sample = values[::SAMPLE_STRIDE].copy()
        m = sample.size
        slack = 4.0 * math.sqrt(m * (k / n) * (1.0 - k / n)) + 2.0
        rank = math.floor(m * k / n - slack)
        if rank > 0:
            threshold = float(np.partition(sample, rank)[rank])
            kept = values[values >= threshold]
            rest = k - (n - kept.size)
            if rest >= 0:
                kept.partition(rest)
                return float(kept[rest]), float(kept[rest + 1 :].min())
    values.partition(k)
    return float(values[k]), float(values[k + 1 :].min())


def _percentile_of_counts(values: FloatArray, q: float) -> float:
    """``np.percentile(values, q)`` (linear interpolation) of whole non-negative numbers such
    as replica counts, from their counts instead of a sort."""
    if not values.size:
        return 0.0
    counts = np.cumsum(np.bincount(values.astype(np.int64)))
    position = (values.size - 1) * (q / 100.0)
    below = math.floor(position)
    low = int(np.searchsorted(counts, below, side="right"))
    high = int(np.searchsorted(counts, min(below + 1, values.size - 1), side="right"))
    weight = position - below  # numpy's _lerp, rounding included
    if weight >= 0.5:
        return float(high - (high - low) * (1.0 - weight))
    return float(low + (high - low) * weight)


@dataclass(frozen=True, slots=True)
class ReplicaPath:
    """Replicas per step (float), the serving ones among them (``serving``: the fewest of the
    last ``ceil(pod_startup_s / step)`` steps and this one, so a pod started within the start-up
    time carries no load yet) and the steps of capacity shortfall (module doc); ``replayed``
    False: the recorded replicas (no HPA, or no resource metric to replay)."""

    replicas: FloatArray
    short: np.ndarray
    replayed: bool
    serving: FloatArray | None = None
    """None: every pod of ``replicas`` serves."""

    @property
    def shortfall_steps(self) -> int:
        return int(np.count_nonzero(self.short))


def _path_key(values: Values, options: Options) -> tuple[object, ...] | None:
    """What a replica path depends on: the HPA, the requests its metrics divide by, the
    controller model and the pod start-up time (None: no HPA)."""
    hpa = values.hpa
    if hpa is None:
        return None
    requests = tuple(
        (c.name, c.requests.get(t.resource))
        for t in hpa.targets
        for c in values.containers
        if t.container in (None, c.name)
    )
    return (hpa, requests, options.model, options.pod_startup_s)


def replica_path(series: ReplaySeries, values: Values, options: Options) -> ReplicaPath:
    """The replicas ``values`` give over ``series``: the HPA replayed, or as recorded.
    Remembered on ``series`` by what the path depends on (``_path_key``)."""
    key = _path_key(values, options)
    if key is not None and key in series.memo:
        known: ReplicaPath = series.memo[key]
        return known
    walk = _replica_path(series, values, options)
    if key is not None:
        series.memo[key] = walk
    return walk


def _steps(
    series: ReplaySeries, hpa: HpaValues, metrics: list[Metric], values: Values, options: Options
) -> np.ndarray:
    """The replayed replicas per step (``int64``). Paths are also remembered without their
    maxReplicas, with their reach (``exact.replay_reach``): a maxReplicas no lower than the
    reach, and no lower than the reach of the one it was replayed with, gives the same path
    (the search for bounds replays the same requests and targets under several maxReplicas)."""
    initial = max(round(float(series.replicas[0])) if series.steps else hpa.min_replicas, 1)
    key = _path_key(replace(values, hpa=replace(hpa, max_replicas=0)), options)
    known: list[tuple[float, np.ndarray]] = series.memo.setdefault(("any max", key), [])
    for reach, steps in known:
        if reach <= hpa.max_replicas:
            return steps
    steps, reach = replay_reach(
        metrics,
        min_replicas=hpa.min_replicas,
        max_replicas=hpa.max_replicas,
        initial=initial,
        step_s=series.step_s,
        model=options.model,
        behavior=hpa.behavior,
        area=series.walk_area() if options.model == "fast" else None,
    )
    if reach <= hpa.max_replicas:  # the clamp changed nothing
        known.append((reach, steps))
    return steps


def _replica_path(series: ReplaySeries, values: Values, options: Options) -> ReplicaPath:
    metrics = hpa_metrics(series, values)
    hpa = values.hpa
    if hpa is None or not metrics:
        path = np.maximum(np.round(series.replicas), 0.0)
        return ReplicaPath(path, np.zeros(series.steps, dtype=bool), False)
    plain = [m for m, _ in metrics]
    return walked(series, _steps(series, hpa, plain, values, options), plain, hpa, options)


def walked(
    series: ReplaySeries, steps: np.ndarray, metrics: list[Metric], hpa: HpaValues, options: Options
) -> ReplicaPath:
    """The ``ReplicaPath`` of the replayed replicas ``steps`` (one per step of ``series``):
    the serving pods after ``options.pod_startup_s`` and the shortfall (module doc)."""
    path = steps.astype(np.float64)
    lag = math.ceil(options.pod_startup_s / series.step_s - 1e-9)
    serving = _serving(path, lag)
    short = _shortfall(path, serving, metrics, hpa.max_replicas, hpa.behavior.scale_up.tolerance)
    return ReplicaPath(path, short, True, serving)


def _serving(path: FloatArray, lag: int) -> FloatArray:
    """The pods of ``path`` serving at each step: the fewest of the last ``lag + 1`` steps (a
    pod started within the last ``lag`` steps is still starting)."""
    serving = path.copy()
    for back in range(1, lag + 1):
        np.minimum(serving[back:], path[:-back], out=serving[back:])
    return serving


def _shortfall(
    path: FloatArray,
    serving: FloatArray,
    metrics: list[Metric],
    max_replicas: int,
    tolerance: float,
) -> np.ndarray:
    """The steps of capacity shortfall of ``path`` (bool per step): at ``max_replicas`` with a
    metric's utilisation ``floor(usage × 100 / (path × request))`` above its target beyond the
    tolerance, or while pods are still starting (``serving`` below the path) and a metric's
    usage is above what the serving pods request."""
    short = np.zeros(path.size, dtype=bool)
    at_max = path >= max_replicas
    starting = serving < path
    any_at_max, any_starting = bool(at_max.any()), bool(starting.any())
    with np.errstate(invalid="ignore", divide="ignore"):
        for metric in metrics:
            if any_at_max:
                util = np.multiply(metric.usage, 100.0)
                util /= path * metric.request
                np.floor(util, out=util)
                short |= at_max & (util > metric.target_percent * (1.0 + tolerance))
            if any_starting:
                short |= starting & (metric.usage > serving * metric.request)
    return short


def _replica_figures(series: ReplaySeries, walk: ReplicaPath, options: Options) -> ReplicaReplay:
    path = walk.replicas
    by_hour: tuple[float, ...] = ()
    if options.slots is not None and series.steps:
        counts = np.bincount(options.slots, minlength=HOURS_PER_WEEK)
        sums = np.bincount(options.slots, weights=path, minlength=HOURS_PER_WEEK)
        with np.errstate(invalid="ignore"):  # an hour without a step: 0 / 0, NaN
            means = np.divide(sums, counts, out=sums)
        by_hour = rounded_2(means)
    return ReplicaReplay(
        mean=float(path.mean()) if path.size else 0.0,
        p95=_percentile_of_counts(path, 95),
        max=float(path.max()) if path.size else 0.0,
        pod_hours=float(path.sum()) * series.step_s / SECONDS_PER_HOUR,
        shortfall_minutes=walk.shortfall_steps * series.step_s / 60.0 if walk.replayed else None,
        replayed=walk.replayed,
        by_hour=by_hour,
        time_zone=options.time_zone,
    )


NEAR_HALF = 1e-6
"""``rounded_2`` leaves to Python's ``round`` the values whose hundredfold lies this close to a
half."""


def rounded_2(values: FloatArray) -> tuple[float, ...]:
    """``round(x, 2)`` of each value (Python's: the exact value rounded half to even, as the
    nearest double), in numpy: ``rint(x × 100) / 100`` picks the same hundredth wherever the
    rounding error of ``x × 100`` (below 1e-10 for |x| < 1e6) cannot cross a half, and the
    division gives the nearest double to it, as ``round`` does; the few values near a half go
    through ``round`` itself. NaN stays NaN."""
    with np.errstate(invalid="ignore", over="ignore"):  # NaN, ±inf and huge values: ``round``
        hundredfold = np.multiply(values, 100.0)
        out: list[float] = np.divide(np.rint(hundredfold), 100.0).tolist()
        near = (np.abs(hundredfold - np.floor(hundredfold) - 0.5) < NEAR_HALF) | ~(
            np.abs(values) < 1e6
        )
    for i in np.flatnonzero(near).tolist():
        out[i] = round(float(values[i]), 2)
    return tuple(out)


def _cpu(
    cs: ContainerSeries,
    cv: ContainerValues,
    scale: FloatArray | None,
    pods: FloatArray | None,
    minutes_per_step: float,
    *,
    detail: bool = True,
) -> CpuReplay:
    """CPU figures of one container; ``scale`` multiplies each step's per-pod load and
    ``pods`` counts how many serving pods each sample stands for (None: as recorded)."""

    def per_sample(per_step: FloatArray) -> FloatArray:
        return per_step if cs.aligned else per_step[cs.cpu_step]

    usage = cs.cpu_cores if scale is None else np.multiply(cs.cpu_cores, per_sample(scale))
    weight = None if pods is None else per_sample(pods)

    def minutes(mask: np.ndarray) -> float:
        if weight is None:
            return float(np.count_nonzero(mask)) * minutes_per_step
        return float(weight[mask].sum()) * minutes_per_step

    request, limit = cv.requests.cpu_cores, cv.limits.cpu_cores
    total = (
        float(weight.sum()) * minutes_per_step
        if weight is not None
        else usage.size * minutes_per_step
    )
    over = minutes(usage > request) if request else 0.0
    throttled = minutes(usage > limit) if limit else None
    p95 = (
        _percentile_of(usage if scale is not None else usage.copy(), 95, scratch=True)
        / request
        * 100.0
        if request and detail
        else None
    )
    return CpuReplay(cv.name, request, limit, total, over, throttled, p95)


def _memory(
    cs: ContainerSeries, cv: ContainerValues, recorded_limit: int | None, step_s: float
) -> MemoryReplay:
    """Memory figures of one container (module doc); ``recorded_limit``: the limit in force
    when the recorded OOM kills happened."""
    request, limit = cv.requests.memory_bytes, cv.limits.memory_bytes
    used = cs.mem_bytes
    peak = float(used.max()) if used.size else 0.0
    kills: int | None = None
    over: float | None = None
    if limit:
        hit = used >= limit
        first = hit.copy()
        if hit.size > 1:
            same_pod = cs.mem_pod[1:] == cs.mem_pod[:-1]
            first[1:] &= ~(hit[:-1] & same_pod)
        kills = int(np.count_nonzero(first))
        if cs.oom_step.size and (recorded_limit is None or limit <= recorded_limit):
            kills += _unexplained_kills(cs, hit)
    elif request:
        over = float(np.count_nonzero(used > request)) * step_s / 60.0
    bound = limit or request
    headroom = (bound - peak) / bound * 100.0 if bound else None
    return MemoryReplay(cv.name, request, limit, kills, over, peak, headroom)


def _unexplained_kills(cs: ContainerSeries, hit: np.ndarray) -> int:
    """Recorded kills without a sample at or above the limit in the same pod within
    ``KILL_MATCH_STEPS`` steps before (kills between scrapes)."""
    hit_pod, hit_step = cs.mem_pod[hit], cs.mem_step[hit]
    key = hit_pod.astype(np.int64) * (1 << 32) + hit_step
    order = np.sort(key)
    low = cs.oom_pod.astype(np.int64) * (1 << 32) + np.maximum(cs.oom_step - KILL_MATCH_STEPS, 0)
    high = cs.oom_pod.astype(np.int64) * (1 << 32) + cs.oom_step
    found = np.searchsorted(order, high, side="right") - np.searchsorted(order, low, side="left")
    return int(np.count_nonzero(found == 0))


def per_pod_load(
    series: ReplaySeries, walk: ReplicaPath
) -> tuple[FloatArray | None, FloatArray | None]:
    """How the replayed replicas change each step's load of one pod (recorded / serving; 0
    without a pod) and how many pods each recorded pod stands for (serving / recorded; 1
    where none was recorded); None, None when the replicas are the recorded ones. The load is
    carried by the serving pods (``ReplicaPath.serving``): a pod the HPA adds serves once it
    has started, as the shortfall figure counts it."""
    if not walk.replayed:
        return None, None
    path = walk.replicas if walk.serving is None else walk.serving
    recorded = series.replicas
    with np.errstate(invalid="ignore", divide="ignore"):
        pods = np.divide(path, np.maximum(recorded, 1e-9))
        absent = ~(recorded > 0)
        if absent.any():
            np.copyto(pods, 1.0, where=absent)
        scale = np.divide(recorded, np.maximum(path, 1e-9))
        absent = ~(path > 0)
        if absent.any():
            np.copyto(scale, 0.0, where=absent)
    return scale, pods


def over_request_share(
    series: ReplaySeries, values: Values, container: str | None, options: Options
) -> float:
    """The largest share of container-minutes with CPU above the request among ``container``
    (None: every container) under ``values``: what the target rule and the gate read, without
    the other figures."""
    walk = replica_path(series, values, options)
    scale, pods = per_pod_load(series, walk)
    shares = [0.0]
    for cv in values.containers:
        cs = series.containers.get(cv.name)
        if cs is None or (container is not None and cv.name != container):
            continue
        figures = _cpu(cs, cv, scale, pods, series.step_s / 60.0, detail=False)
        if figures.container_minutes:
            shares.append(figures.over_request_minutes / figures.container_minutes)
    return max(shares)


def replay(
    series: ReplaySeries,
    values: Values,
    *,
    recorded: Values | None = None,
    options: Options | None = None,
) -> ReplayFigures:
    """The figures of ``values`` over ``series`` (module doc). ``recorded``: the values in force
    while the history was recorded (the current ones; default ``values``), whose limits tell
    which recorded OOM kills a candidate limit would also see."""
    options = options or Options()
    recorded = recorded or values
    walk = replica_path(series, values, options)
    replicas = _replica_figures(series, walk, options)
    minutes_per_step = series.step_s / 60.0
    scale, pods = per_pod_load(series, walk)
    cpu, memory = [], []
    core_per_pod = gib_per_pod = 0.0
    for cv in values.containers:
        core_per_pod += cv.requests.cpu_cores or 0.0
        gib_per_pod += (cv.requests.memory_bytes or 0) / GIB
        cs = series.containers.get(cv.name)
        if cs is None:
            continue
        cpu.append(_cpu(cs, cv, scale, pods, minutes_per_step, detail=options.detail))
        old = recorded.container(cv.name)
        memory.append(_memory(cs, cv, old.limits.memory_bytes if old else None, series.step_s))
    pod_hours = replicas.pod_hours
    return ReplayFigures(
        window_s=series.window_s,
        cpu=tuple(cpu),
        memory=tuple(memory),
        replicas=replicas,
        core_hours=pod_hours * core_per_pod,
        gib_hours=pod_hours * gib_per_pod,
    )
