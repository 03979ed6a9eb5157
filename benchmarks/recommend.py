"""The engine at fleet scale: 3,000 containers × 14 days × 1-minute samples.

Run: ``.venv/bin/python -m benchmarks.recommend`` (``--containers N --days D --profile``).

About 60 million CPU samples plus as many memory samples and 1-minute replica counts go through
``bot.recommend.engine.recommend``, one workload (three containers) at a time as the pipeline
calls it. Data is generated per workload outside the timed region. The floor is the same
samples through a bare ``numpy.bincount`` over (container, bucket) indices, which is the least
any histogram-based engine must do. Prints wall time, peak memory, samples per second, the
ratio to the floor and, with ``--profile``, where the time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
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
from bot.recommend.replay.gate import ReplayContext

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


def floor_bincount(inp: WorkloadInput) -> None:
    """The same samples through one bare bincount over (container, bucket) indices."""
    for j, ch in enumerate(inp.history.containers.values()):
        idx = j * 176 + np.minimum((ch.cpu_cores * 50).astype(np.intp), 175)
        np.bincount(idx, weights=ch.cpu_cores, minlength=CONTAINERS_PER_WORKLOAD * 176)
        mdx = j * 176 + np.minimum((ch.mem_bytes * 1e-8).astype(np.intp), 175)
        np.bincount(mdx, weights=ch.mem_bytes, minlength=CONTAINERS_PER_WORKLOAD * 176)


class _ReplayClock:
    """Seconds spent in the engine's replay steps (context, replica bounds, targets, gate),
    measured by wrapping them for the run."""

    def __init__(self) -> None:
        self.by_step: dict[str, float] = {}

    @property
    def seconds(self) -> float:
        return sum(self.by_step.values())

    def wrap(self, function: Any, step: str) -> Any:
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
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
            ("_gated", "proposed values and gate"),
        ):
            setattr(engine, name, self.wrap(getattr(engine, name), step))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--containers", type=int, default=3000)
    parser.add_argument("--days", type=float, default=14.0)
    parser.add_argument("--profile", action="store_true", help="print where the time goes")
    args = parser.parse_args()
    workloads = args.containers // CONTAINERS_PER_WORKLOAD
    t = NOW_S - args.days * DAY_S + 60.0 * np.arange(int(args.days * 1440), dtype=np.float64)
    rng = np.random.default_rng(7)
    settings = RecommendSettings()
    engine_s = floor_s = engine_cpu_s = 0.0
    held = 0
    statuses: dict[str, int] = {}
    profiler = cProfile.Profile() if args.profile else None
    replay_clock = _ReplayClock()
    replay_clock.install()
    for i in range(workloads):
        inp = _workload(i, args.days, rng, t)
        with timed() as tf:
            floor_bincount(inp)
        floor_s += tf.seconds
        if profiler:
            profiler.enable()
        cpu0 = time.process_time()
        with timed() as te:
            rec = recommend(inp, settings, now_s=NOW_S)
        engine_cpu_s += time.process_time() - cpu0
        if profiler:
            profiler.disable()
        engine_s += te.seconds
        statuses[rec.status] = statuses.get(rec.status, 0) + 1
        held += bool(rec.replay and rec.replay.findings)
    samples = workloads * CONTAINERS_PER_WORKLOAD * t.size
    report(
        f"recommend: {workloads * CONTAINERS_PER_WORKLOAD} containers × {args.days:g} days × 1 min",
        [
            (
                "CPU samples",
                f"{samples:,} (plus {samples:,} memory, {workloads * t.size:,} replica)",
            ),
            ("engine wall time", f"{engine_s:.2f} s"),
            (
                "of which the replay",
                f"{replay_clock.seconds:.2f} s ({replay_clock.seconds / engine_s:.0%}: "
                + ", ".join(
                    f"{step} {seconds / engine_s:.0%}"
                    for step, seconds in replay_clock.by_step.items()
                )
                + ")",
            ),
            ("proposals the gate held back", f"{held} of {workloads}"),
            ("engine without the replay", f"{engine_s - replay_clock.seconds:.2f} s"),
            ("engine CPU time", f"{engine_cpu_s:.2f} s (differs from wall on a busy machine)"),
            ("per workload", f"{engine_s / workloads * 1000:.2f} ms"),
            ("throughput", f"{2 * samples / engine_s / 1e6:.1f} M samples/s"),
            ("bincount floor", f"{floor_s:.2f} s"),
            ("engine / floor", f"{engine_s / floor_s:.1f}×"),
            ("peak RSS", f"{peak_rss_mib():.0f} MiB"),
            ("statuses", ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))),
        ],
    )
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
        print(out.getvalue())


if __name__ == "__main__":
    main()
