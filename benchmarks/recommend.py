"""The engine at fleet scale: 3,000 containers × 14 days × 1-minute samples.

Run: ``.venv/bin/python -m benchmarks.recommend`` (``--containers N --days D --profile
--processes N --no-replay``).

About 60 million CPU samples plus as many memory samples and 1-minute replica counts go through
``bot.recommend.engine.recommend``, one workload (three containers) at a time as the pipeline
calls it. Data is generated per workload outside the timed region. The floor is the same
samples through a bare ``numpy.bincount`` over (container, bucket) indices, which is the least
any histogram-based engine must do; its indices go into arrays kept across workloads, so it
times the arithmetic and not the mapping of fresh memory (``floor_bincount``). Prints wall time, peak memory, samples per second, the
ratio to the floor and, with ``--profile``, where the time goes. ``--processes N`` runs the
workloads in N worker processes (``bot.worker_pool``), each making its workloads' data from the
generator state one process would have reached, so the numbers are the same; the whole run's
wall time (data, floor and engine) compares one process with N. ``--no-replay`` runs the engine
with no replay context (nothing replayed or gated).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.measure import peak_rss_mib, report, timed
from bot.config.recommend import RecommendSettings
from bot.model import (
    ContainerHistory,
    DeclaredHPA,
    HpaTarget,
    ResourceValues,
    WorkloadHistory,
    WorkloadRef,
)
from bot.recommend import engine
from bot.recommend.engine import recommend
from bot.recommend.inputs import ContainerInput, WorkloadInput
from bot.recommend.replay.context import ReplayContext
from bot.worker_pool import OrderedPool

DAY_S = 86400.0
NOW_S = 1_700_006_400.0
CONTAINERS_PER_WORKLOAD = 3
"""app, sidecar, exporter: one workload's containers."""


def _workload(i: int, days: float, rng: np.random.Generator, t: np.ndarray) -> WorkloadInput:
    ref = WorkloadRef("Deployment", f"ns-{i % 50}", f"svc-{i}")
    daily = 1.0 + 0.5 * np.sin(2 * np.pi * (t % DAY_S) / DAY_S)
    pods = np.zeros(t.size, dtype=np.int32)
    histories = {}
    containers = []
    names = ("app", "sidecar", "exporter")[:CONTAINERS_PER_WORKLOAD]
    for name in names:
        level = rng.uniform(0.02, 2.0)
        cpu = level * daily * rng.lognormal(0.0, 0.3, t.size)
        mem = rng.uniform(100e6, 2e9) * (0.9 + 0.1 * daily)
        histories[name] = ContainerHistory(name, t, pods, cpu, t, pods, mem)
        containers.append(
            ContainerInput(
                name,
                ResourceValues(round(level * 1.5, 3), int(mem[0] * 1.3)),
                ResourceValues(round(level * 3, 3), int(mem[0] * 2)),
                "horizontal" if name == "app" else "vertical",
                "vertical",
            )
        )
    replicas = np.round(6 + 4 * daily)
    hist = WorkloadHistory(ref, NOW_S - days * DAY_S, NOW_S, ("pod-0",), histories, t, replicas)
    hpa = DeclaredHPA("hpa", 3, 30, (HpaTarget("cpu", 70, "app"),))
    return WorkloadInput(ref, tuple(containers), hist, hpa=hpa)


_FLOOR_BUFFERS: dict[int, tuple[np.ndarray, np.ndarray]] = {}
"""Per series length, the floor's two whole-series arrays, made once per process."""


def floor_bincount(inp: WorkloadInput) -> None:
    """The same samples through one bare bincount over (container, bucket) indices.

    The bucket indices are computed into two arrays kept from one workload to the next, so the
    floor times the arithmetic, not fresh memory: a new array of a series' length is mapped
    page by page or not, depending on what the process freed just before, which made the floor
    of one run up to a third slower than the same floor in another (0.51 CPU-s within a run
    with the replay, 0.65–0.71 within a run without it)."""
    for j, ch in enumerate(inp.history.containers.values()):
        for values, scale in ((ch.cpu_cores, 50.0), (ch.mem_bytes, 1e-8)):
            scaled, idx = _FLOOR_BUFFERS.get(values.size) or _FLOOR_BUFFERS.setdefault(
                values.size, (np.empty(values.size), np.empty(values.size, dtype=np.intp))
            )
            np.multiply(values, scale, out=scaled)
            np.copyto(idx, scaled, casting="unsafe")  # as ``astype(np.intp)``: truncation
            np.minimum(idx, 175, out=idx)
            idx += j * 176
            np.bincount(idx, weights=values, minlength=CONTAINERS_PER_WORKLOAD * 176)


class _ReplayClock:
    """Seconds spent in the engine's replay steps (context, replica bounds, targets, gate),
    measured by wrapping them for the run."""

    def __init__(self) -> None:
        self.by_step: dict[str, float] = {}
        self.cpu_s = 0.0
        """CPU seconds of the same steps."""

    @property
    def seconds(self) -> float:
        return sum(self.by_step.values())

    def wrap(self, function: Any, step: str) -> Any:
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                cpu0 = time.process_time()
                return function(*args, **kwargs)
            finally:
                self.cpu_s += time.process_time() - cpu0
                elapsed = time.perf_counter() - start
                self.by_step[step] = self.by_step.get(step, 0.0) + elapsed

        return timed_call

    def install(self) -> None:
        clock = self
        build = ReplayContext.build

        class TimedContext(ReplayContext):
            @classmethod
            def build(cls, *args: Any, **kwargs: Any) -> Any:
                return clock.wrap(build, "grid and current values")(*args, **kwargs)

        setattr(engine, "ReplayContext", TimedContext)  # noqa: B010
        for name, step in (
            ("replayed_targets", "HPA targets"),
            ("replayed_bounds", "replica bounds"),
            ("gate", "proposed values and gate"),
            ("apply_budget", "budget"),
        ):
            setattr(engine, name, self.wrap(getattr(engine, name), step))


@dataclass
class Tally:
    """Seconds and outcomes of a run of workloads (one process's share, or the sum)."""

    engine_s: float = 0.0
    engine_cpu_s: float = 0.0
    floor_cpu_s: float = 0.0
    replay_cpu_s: float = 0.0
    floor_s: float = 0.0
    replay_by_step: dict[str, float] = field(default_factory=dict)
    held: int = 0
    statuses: dict[str, int] = field(default_factory=dict)

    def add(self, other: Tally) -> None:
        self.engine_s += other.engine_s
        self.engine_cpu_s += other.engine_cpu_s
        self.floor_cpu_s += other.floor_cpu_s
        self.replay_cpu_s += other.replay_cpu_s
        self.floor_s += other.floor_s
        self.held += other.held
        for step, seconds in other.replay_by_step.items():
            self.replay_by_step[step] = self.replay_by_step.get(step, 0.0) + seconds
        for status, count in other.statuses.items():
            self.statuses[status] = self.statuses.get(status, 0) + count

    @property
    def replay_s(self) -> float:
        return sum(self.replay_by_step.values())


def _without_replay() -> None:
    """The engine as it would run without its replay: no context, so nothing is replayed."""

    class NoContext(ReplayContext):
        @classmethod
        def build(cls, *args: Any, **kwargs: Any) -> Any:
            return None

    setattr(engine, "ReplayContext", NoContext)  # noqa: B010


def _one(
    inp: WorkloadInput,
    settings: RecommendSettings,
    clock: _ReplayClock,
    profiler: cProfile.Profile | None = None,
) -> Tally:
    """The floor and the engine on one workload, each timed (wall and CPU)."""
    floor_cpu0 = time.process_time()
    with timed() as tf:
        floor_bincount(inp)
    floor_cpu_s = time.process_time() - floor_cpu0
    before, replay_cpu0 = dict(clock.by_step), clock.cpu_s
    if profiler:
        profiler.enable()
    cpu0 = time.process_time()
    with timed() as te:
        rec = recommend(inp, settings, now_s=NOW_S)
    cpu_s = time.process_time() - cpu0
    if profiler:
        profiler.disable()
    return Tally(
        engine_s=te.seconds,
        engine_cpu_s=cpu_s,
        floor_s=tf.seconds,
        floor_cpu_s=floor_cpu_s,
        replay_cpu_s=clock.cpu_s - replay_cpu0,
        replay_by_step={k: v - before.get(k, 0.0) for k, v in clock.by_step.items()},
        held=int(bool(rec.replay and rec.replay.findings)),
        statuses={rec.status: 1},
    )


_WORKER: dict[str, Any] = {}
"""A worker process's replay clock and settings, made on its first workload."""


def _in_worker(i: int, days: float, state: dict[str, Any], replay: bool) -> Tally:
    """Workload ``i`` made from the generator state it starts at, then ``_one`` on it."""
    if not _WORKER:
        _WORKER["clock"] = _ReplayClock()
        _WORKER["clock"].install()
        if not replay:
            _without_replay()
        _WORKER["settings"] = RecommendSettings()
    rng = np.random.default_rng(0)
    rng.bit_generator.state = state
    t = NOW_S - days * DAY_S + 60.0 * np.arange(int(days * 1440), dtype=np.float64)
    return _one(_workload(i, days, rng, t), _WORKER["settings"], _WORKER["clock"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--containers", type=int, default=3000)
    parser.add_argument("--days", type=float, default=14.0)
    parser.add_argument("--profile", action="store_true", help="print where the time goes")
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="worker processes (``bot.worker_pool``, as ``run.processes``); each makes its "
        "workloads' data and runs the floor and the engine on them",
    )
    parser.add_argument(
        "--no-replay", action="store_true", help="the engine without its replay (no context)"
    )
    args = parser.parse_args()
    workloads = args.containers // CONTAINERS_PER_WORKLOAD
    t = NOW_S - args.days * DAY_S + 60.0 * np.arange(int(args.days * 1440), dtype=np.float64)
    rng = np.random.default_rng(7)
    settings = RecommendSettings()
    total = Tally()
    profiler = cProfile.Profile() if args.profile else None
    replay_clock = _ReplayClock()
    replay_clock.install()
    if args.no_replay:
        _without_replay()
    if args.processes > 1:
        states = []
        for i in range(workloads):  # the data each workload starts from, as in one process
            states.append(rng.bit_generator.state)
            _workload(i, args.days, rng, t)
        with (
            timed() as run,
            OrderedPool[Tally](
                args.processes, done=lambda _, tally: total.add(tally), lost=_lost
            ) as pool,
        ):
            for i, state in enumerate(states):
                pool.submit(i, _in_worker, i, args.days, state, not args.no_replay)
            pool.finish()
    else:
        with timed() as run:
            for i in range(workloads):
                total.add(_one(_workload(i, args.days, rng, t), settings, replay_clock, profiler))
    engine_s, floor_s = total.engine_s, total.floor_s
    samples = workloads * CONTAINERS_PER_WORKLOAD * t.size
    where = f"in {args.processes} worker processes, " if args.processes > 1 else ""
    report(
        f"recommend: {workloads * CONTAINERS_PER_WORKLOAD} containers × {args.days:g} days × 1 min"
        + (", the engine without its replay" if args.no_replay else ""),
        [
            (
                "CPU samples",
                f"{samples:,} (plus {samples:,} memory, {workloads * t.size:,} replica)",
            ),
            ("engine wall time", f"{engine_s:.2f} s ({where}summed over the workloads)"),
            (
                "of which the replay",
                f"{total.replay_s:.2f} s ({total.replay_s / engine_s:.0%}: "
                + ", ".join(
                    f"{step} {seconds / engine_s:.0%}"
                    for step, seconds in total.replay_by_step.items()
                )
                + ")",
            ),
            ("proposals the gate held back", f"{total.held} of {workloads}"),
            (
                "engine without the replay",
                f"{engine_s - total.replay_s:.2f} s "
                f"({(engine_s - total.replay_s) / floor_s:.1f}× the floor)",
            ),
            (
                "engine CPU time",
                f"{total.engine_cpu_s:.2f} s (differs from wall on a busy machine), "
                f"{total.engine_cpu_s / total.floor_cpu_s:.1f}× the floor's "
                f"{total.floor_cpu_s:.2f} CPU-s",
            ),
            (
                "without the replay, CPU",
                f"{total.engine_cpu_s - total.replay_cpu_s:.2f} s "
                f"({(total.engine_cpu_s - total.replay_cpu_s) / total.floor_cpu_s:.1f}× "
                "the floor's CPU)",
            ),
            ("per workload", f"{engine_s / workloads * 1000:.2f} ms"),
            ("throughput", f"{2 * samples / engine_s / 1e6:.1f} M samples/s"),
            ("bincount floor", f"{floor_s:.2f} s"),
            ("engine / floor", f"{engine_s / floor_s:.1f}×"),
            (
                "whole run wall time",
                f"{run.seconds:.2f} s (making the data, the floor and the engine, "
                + (f"{args.processes} processes)" if args.processes > 1 else "one process)"),
            ),
            ("peak RSS", f"{peak_rss_mib():.0f} MiB" + (" (this process)" if where else "")),
            ("statuses", ", ".join(f"{k} {v}" for k, v in sorted(total.statuses.items()))),
        ],
    )
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
        print(out.getvalue())


def _lost(key: int, exc: Exception) -> Tally:
    raise SystemExit(f"workload {key}: its worker process ended ({exc})")


if __name__ == "__main__":
    main()
