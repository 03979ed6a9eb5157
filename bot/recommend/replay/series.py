"""A workload's history on one time grid, ready to be replayed under any set of values.

Built once per workload (``ReplaySeries.build``) and shared by every candidate the replay
scores. The grid starts at the first sample and has one step per ``step_s`` (the shorter of the
replica and the first container's CPU sampling steps, else 60 s); a sample belongs to the step
``round((t − start) / step)``. Samples after ``now`` or inside excluded periods (crash loops,
emergency) are left out, as the engine leaves them out.

Per step: the recorded replica count (its last value in the step, carried forward over gaps;
without a replica series, the number of pods with a CPU sample), and per container the mean
CPU usage of one pod. The total demand of a container is ``mean per pod × recorded replicas``
(the replay's HPA moves pods, not load). Per sample: CPU usage per pod, and the working set in
pod order for OOM episodes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from bot.model import ContainerHistory, FloatArray, IntArray, Resource, WorkloadHistory
from bot.recommend.replay.controller import WalkArea

DEFAULT_STEP_S = 60.0
"""The grid step when no series tells its own."""

MAX_STEPS = 200_000
"""At most this many steps: a longer window is replayed on a proportionally coarser grid."""


STEP_SAMPLES = 4096
"""The sampling step is read from at most this many samples (the most common gap)."""


def _step_of(times_s: FloatArray) -> float | None:
    """The most common positive gap between consecutive distinct times (among the first
    ``STEP_SAMPLES``), or None."""
    if times_s.size < 2:
        return None
    head = times_s[:STEP_SAMPLES]
    gaps = np.diff(head)
    if bool((gaps > 0).all()) and np.isfinite(head[0]) and np.isfinite(head[-1]):
        # already sorted, distinct and finite: its own np.unique
        t = head
    else:
        t = np.unique(head[np.isfinite(head)])
        if t.size < 2:
            return None
        gaps = np.diff(t)
    gaps = np.round(gaps, 3)
    if gaps.min() == gaps.max():  # one gap throughout: the most common one
        return float(gaps[0]) if gaps[0] > 0 else None
    values, counts = np.unique(gaps[gaps > 0], return_counts=True)
    return float(values[int(np.argmax(counts))]) if values.size else None


def _kept(
    times_s: FloatArray, now_s: float, excluded: tuple[tuple[float, float], ...]
) -> np.ndarray:
    mask: np.ndarray = np.isfinite(times_s) & (times_s <= now_s)
    for start, end in excluded:
        mask &= ~((times_s >= start) & (times_s < end))
    return mask


KeptMask = tuple[np.ndarray, bool]
"""A mask of the samples kept and whether it keeps every one."""

T = TypeVar("T")


class _PerArray(Generic[T]):
    """``compute(array)`` once per array object within one build: the containers of one pod
    share their time axes and CPU and memory scraped together share one, so equal inputs are
    the same object. Every array is held here, so no other takes its ``id``."""

    def __init__(self, compute: Callable[[np.ndarray], T]) -> None:
        self._compute = compute
        self._known: dict[int, tuple[np.ndarray, T]] = {}

    def __call__(self, array: np.ndarray) -> T:
        known = self._known.get(id(array))
        if known is None:
            known = self._known[id(array)] = (array, self._compute(array))
        return known[1]


def _every(mask: np.ndarray) -> KeptMask:
    return mask, bool(mask.all())


class _Kept:
    """The samples one build keeps (``_kept``, finite values), each time axis masked once and
    each selection made once: the containers of one pod share their time axes, CPU and memory
    scraped together share one, so their masks and selected times are the same arrays (and
    ``index`` finds their steps by identity). Every array is held while the build runs, so no
    other takes its ``id``."""

    def __init__(self, now_s: float, excluded: tuple[tuple[float, float], ...]) -> None:
        self._axis = _PerArray(lambda times: _every(_kept(times, now_s, excluded)))
        self._selected: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def mask(self, times: FloatArray, values: np.ndarray) -> KeptMask:
        """The samples of ``times`` in the window and outside the excluded periods, with a
        finite value in ``values`` (the axis's own mask when every value is finite)."""
        kept = self._axis(times)
        finite = np.isfinite(values)
        return kept if bool(finite.all()) else _every(kept[0] & finite)

    def select(self, values: np.ndarray, kept: KeptMask) -> np.ndarray:
        """``values[mask]``, the same array for the same ``values`` and mask; ``values``
        itself when every sample is kept (no copy)."""
        mask, every = kept
        if every:
            return values
        key = (id(values), id(mask))
        known = self._selected.get(key)
        if known is None:
            known = self._selected[key] = (values, mask, values[mask])
        return known[2]


@dataclass(frozen=True, slots=True)
class ContainerSeries:
    """One container's samples on the grid.

    ``cpu_step``/``cpu_cores``: each CPU sample's step and value (cores, one pod);
    ``cpu_mean``: mean CPU of one pod per step (cores, NaN without a sample);
    ``mem_pod``/``mem_step``/``mem_bytes``: working-set samples ordered by pod, then time;
    ``oom_pod``/``oom_step``: recorded OOM kills; ``aligned``: one CPU sample per step, in
    order (``cpu_step`` is ``0 … steps − 1``, so a per-step array needs no gather).
    """

    name: str
    cpu_step: IntArray
    cpu_cores: FloatArray
    cpu_mean: FloatArray
    mem_pod: IntArray
    mem_step: IntArray
    mem_bytes: FloatArray
    oom_pod: IntArray
    oom_step: IntArray
    aligned: bool = False


@dataclass(frozen=True, slots=True)
class ReplaySeries:
    """A workload's history on one grid: ``steps`` steps of ``step_s`` from ``start_s``.

    ``replicas``: recorded replicas per step (float, >= 1 where any pod ran, carried over gaps);
    ``containers``: per container name, its ``ContainerSeries``.
    """

    start_s: float
    step_s: float
    steps: int
    replicas: FloatArray
    containers: Mapping[str, ContainerSeries]
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    """Results already computed on this series (replica paths by the values they depend on):
    every candidate of one workload shares them."""

    @property
    def times_s(self) -> FloatArray:
        """Unix seconds of each step."""
        return self.start_s + self.step_s * np.arange(self.steps, dtype=np.float64)

    @property
    def window_s(self) -> float:
        """Seconds the grid covers."""
        return self.steps * self.step_s

    def demand(self, container: str, resource: Resource = "cpu") -> FloatArray:
        """Total usage of ``container`` over its pods per step (cores or bytes; NaN unknown):
        the mean of one pod times the recorded replicas. Computed once per series (read
        only)."""
        key = ("demand", container, resource)
        known: FloatArray | None = self.memo.get(key)
        if known is None:
            known = self.memo[key] = self._demand(container, resource)
            known.flags.writeable = False
        return known

    def walk_area(self) -> WalkArea:
        """Where the HPA walks over this series work (``controller.WalkArea``): made on the
        first walk and kept in ``memo`` under ``("walk area",)``, one per series, sized by
        ``steps``; every walk overwrites it."""
        known: WalkArea | None = self.memo.get(("walk area",))
        if known is None:
            known = self.memo[("walk area",)] = WalkArea.of(self.steps)
        return known

    def _demand(self, container: str, resource: Resource) -> FloatArray:
        series = self.containers.get(container)
        if series is None:
            return np.full(self.steps, np.nan)
        if resource == "cpu":
            mean = series.cpu_mean
        else:
            counts = np.bincount(series.mem_step, minlength=self.steps)
            sums = np.bincount(series.mem_step, weights=series.mem_bytes, minlength=self.steps)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        out: FloatArray = mean * self.replicas
        return out

    @classmethod
    def build(
        cls,
        history: WorkloadHistory,
        containers: tuple[str, ...],
        *,
        now_s: float,
        excluded: tuple[tuple[float, float], ...] = (),
    ) -> ReplaySeries | None:
        """The grid of ``history`` for ``containers``; None without any CPU sample."""
        keeps = _Kept(now_s, excluded)
        keep_r = keeps.mask(history.replicas_t, history.replicas)
        rep_t = keeps.select(history.replicas_t, keep_r)
        rep_v = keeps.select(history.replicas, keep_r)
        kept: dict[str, tuple[ContainerHistory, KeptMask, KeptMask, np.ndarray]] = {}
        firsts, lasts = [], []
        for name in containers:
            ch = history.containers.get(name)
            if ch is None:
                continue
            cpu = keeps.mask(ch.cpu_t, ch.cpu_cores)
            mem = keeps.mask(ch.mem_t, ch.mem_bytes)
            oom = _kept(ch.oom_t, now_s, excluded)
            kept[name] = (ch, cpu, mem, oom)
            cpu_t = keeps.select(ch.cpu_t, cpu)
            if cpu_t.size:
                firsts.append(float(cpu_t.min()))
                lasts.append(float(cpu_t.max()))
        if not firsts:
            return None
        if rep_t.size:
            firsts.append(float(rep_t.min()))
            lasts.append(float(rep_t.max()))
        start, end = min(firsts), max(lasts)
        first = next(iter(kept.values()))
        steps_seen = [
            s
            for s in (
                _step_of(rep_t),
                _step_of(keeps.select(first[0].cpu_t, first[1])),
            )
            if s is not None
        ]
        step = min(steps_seen) if steps_seen else DEFAULT_STEP_S
        steps = int(np.floor((end - start) / step + 0.5)) + 1
        if steps > MAX_STEPS:
            step = (end - start) / (MAX_STEPS - 1)
            steps = MAX_STEPS

        indexed: list[tuple[FloatArray, IntArray]] = []

        def index(times: FloatArray) -> IntArray:
            """The step of each time; times equal to ones already indexed (CPU and memory
            scraped together, containers of one pod) share their steps (read only)."""
            for seen, at in indexed:
                if times is seen or (times.size == seen.size and np.array_equal(times, seen)):
                    return at
            out: IntArray = np.clip(np.rint((times - start) / step), 0, steps - 1).astype(np.int32)
            if times.size > 1:
                indexed.append((times, out))
            return out

        # per array of steps (``index`` shares them): one sample in each step, in order; the
        # samples in each step
        aligned_steps = _PerArray(lambda at: _one_per_step(at, steps))
        pods_per_step = _PerArray(lambda at: np.bincount(at, minlength=steps))

        series: dict[str, ContainerSeries] = {}
        first_steps: tuple[IntArray, bool] | None = None
        """The first container's CPU steps and whether they are aligned: the pods per step
        when no replica count was recorded."""
        for name, (ch, cpu, mem, oom) in kept.items():
            cpu_step = index(keeps.select(ch.cpu_t, cpu))
            cpu_cores = keeps.select(ch.cpu_cores, cpu)
            aligned = aligned_steps(cpu_step)
            if aligned:  # the mean of one sample is that sample
                mean = np.asarray(cpu_cores, dtype=np.float64)
            else:
                counts = pods_per_step(cpu_step)
                sums = np.bincount(cpu_step, weights=cpu_cores, minlength=steps)
                with np.errstate(invalid="ignore", divide="ignore"):
                    mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
            if first_steps is None:
                first_steps = (cpu_step, aligned)
            mem_pod = keeps.select(ch.mem_pod, mem)
            mem_step = index(keeps.select(ch.mem_t, mem))
            mem_bytes = keeps.select(ch.mem_bytes, mem)
            if (
                mem_pod.size > 1
                and not (  # one sample per step, in order: ordered by pod when pods never fall
                    (mem_step is cpu_step and aligned) and bool((mem_pod[1:] >= mem_pod[:-1]).all())
                )
                and not bool(
                    np.all(
                        (mem_pod[1:] > mem_pod[:-1])
                        | ((mem_pod[1:] == mem_pod[:-1]) & (mem_step[1:] >= mem_step[:-1]))
                    )
                )
            ):
                order = np.lexsort((keeps.select(ch.mem_t, mem), mem_pod))
                mem_pod, mem_step, mem_bytes = mem_pod[order], mem_step[order], mem_bytes[order]
            series[name] = ContainerSeries(
                name,
                cpu_step,
                cpu_cores,
                mean,
                mem_pod.astype(np.int32, copy=False),
                mem_step,
                mem_bytes,
                ch.oom_pod[oom].astype(np.int32),
                index(ch.oom_t[oom]),
                aligned,
            )
        if rep_t.size:
            at = index(rep_t)
            if aligned_steps(at):
                replicas = np.asarray(rep_v, dtype=np.float64)  # ``_carried`` copies
            else:
                replicas = np.full(steps, np.nan)
                replicas[at] = rep_v
        elif first_steps is not None:
            cpu_step, aligned = first_steps
            pods = pods_per_step(cpu_step) if not aligned else np.ones(steps)
            replicas = np.where(pods > 0, pods.astype(np.float64), np.nan)
        else:
            replicas = np.full(steps, np.nan)
        replicas = _carried(replicas)
        return cls(start, float(step), steps, replicas, series)


def _one_per_step(at: IntArray, steps: int) -> bool:
    """Whether ``at`` is exactly ``0, 1, …, steps − 1``: one sample in every step, in order."""
    if at.size != steps or not steps:
        return False
    return bool(at[0] == 0 and at[-1] == steps - 1 and (np.diff(at) == 1).all())


def _carried(values: FloatArray) -> FloatArray:
    """NaN steps take the last known value (the first known before it); all-NaN: ones."""
    known = np.isfinite(values)
    if known.all():
        out: FloatArray = np.maximum(values, 0.0)
        return out
    if not known.any():
        return np.ones(values.size)
    idx = np.where(known, np.arange(values.size), 0)
    np.maximum.accumulate(idx, out=idx)
    first = int(np.argmax(known))
    idx[:first] = first
    out = np.maximum(values[idx], 0.0)
    return out
