"""CronJobs and bare Jobs: sized on the peaks of their runs, not on time.

A run is one pod life (a Job's pod from its first sample to its last). Between runs there are
no samples at all: nothing is added to the VPA's decaying histograms there (they weigh samples
by their own time, so a gap is absence, not zero usage) and the replay has no step there. What
a run needs is its busy part, so the request is sized on the runs' peaks:

- each run's peak is its highest CPU sample (cores, one per step) and its highest working-set
  sample (bytes) in the window, per container;
- the estimate's target becomes ``p`` (``jobs.peak_percentile``, default 95; numpy's linear
  percentile) of those peaks; the rest of the engine (buffer,
  hysteresis, OOM floor, rounding, minChange, limits) runs on it unchanged, without the
  CPU forecast (a CronJob's runs come at fixed hours: no time-of-week cycle to project);
- fewer than ``jobs.min_runs`` runs in the window (default 3): gathering-data,
  "N runs in the window; needs ≥ 3".

Reasons that name the "VPA target" name the runs' peak percentile instead, and the inputs
``rec`` and ``vpa_target`` are given as the runs' peak with its percentile and the number of
runs ("from runs' p95 peak 817m, runs 12, …"; ``run_reasons``).
A ``job-runs`` note states what the sizes rest on, with the numbers:
"CronJob nightly-report: sized on 12 runs (p95 of runs' peaks: report cpu 612.1m, memory 1Gi)"
(``units.amount``: millicores to 0.1, MiB or GiB to 0.1). The VPA's own estimate is not diluted
either (its histograms only hold the runs' samples); the peaks replace it because a run's
request must cover the run's busiest minutes, where the VPA's p90 of every sample would
count a run's start-up minutes as much as its busy ones.
"""

from __future__ import annotations

import dataclasses
from typing import Final

import numpy as np

from bot.config.recommend import RecommendSettings
from bot.model import (
    RESOURCES,
    ContainerRecommendation,
    Explained,
    FloatArray,
    IntArray,
    Note,
    Number,
    Resource,
    ResourceRecommendation,
)
from bot.recommend.estimate import ContainerEstimate, ResourceEstimate
from bot.recommend.inputs import WorkloadInput
from bot.recommend.units import amount
from bot.recommend.window import Window

RUN_KINDS: Final = frozenset({"CronJob", "Job"})
"""Workload kinds sized on their runs."""

RUN_SIZED_INPUTS: Final = frozenset({"rec", "vpa_target"})
"""Inputs that hold the runs' peak percentile for a run kind (``run_reasons``)."""


def run_peaks(t: FloatArray, pod: IntArray, values: FloatArray, window: Window) -> FloatArray:
    """The highest value of each run (pod) with a sample in ``window``, in pod order."""
    keep = window.keep(t)
    pod, values = pod[keep], values[keep]
    if not pod.size:
        return np.empty(0, dtype=np.float64)
    runs, where = np.unique(pod, return_inverse=True)
    peaks = np.full(runs.size, -np.inf)
    np.maximum.at(peaks, where, values)
    return peaks


def runs_in_window(inp: WorkloadInput, window: Window) -> int:
    """Runs (pods) with a CPU or memory sample of any container in ``window``."""
    pods: set[int] = set()
    for history in inp.history.containers.values():
        for t, pod in ((history.cpu_t, history.cpu_pod), (history.mem_t, history.mem_pod)):
            pods.update(np.unique(pod[window.keep(t)]).tolist())
    return len(pods)


def too_few_runs(inp: WorkloadInput, settings: RecommendSettings, window: Window) -> str | None:
    """Why a CronJob or Job is still gathering data (too few runs), or None."""
    if inp.ref.kind not in RUN_KINDS:
        return None
    runs, needed = runs_in_window(inp, window), settings.jobs.min_runs
    if runs >= needed:
        return None
    return f"{runs} run{'s' if runs != 1 else ''} in the window; needs ≥ {needed}"


def sized_on_runs(
    inp: WorkloadInput,
    estimates: dict[str, ContainerEstimate],
    settings: RecommendSettings,
    window: Window,
) -> tuple[dict[str, ContainerEstimate], tuple[Note, ...]]:
    """``estimates`` with each target set to the runs' peak percentile (see the module doc), and
    the ``job-runs`` note; unchanged for other kinds."""
    if inp.ref.kind not in RUN_KINDS:
        return estimates, ()
    q = settings.jobs.peak_percentile
    out: dict[str, ContainerEstimate] = {}
    parts = []
    for name, est in estimates.items():
        history = inp.history.containers[name]
        per: dict[Resource, ResourceEstimate] = {}
        shown = []
        for resource in RESOURCES:
            series = (
                (history.cpu_t, history.cpu_pod, history.cpu_cores)
                if resource == "cpu"
                else (history.mem_t, history.mem_pod, history.mem_bytes)
            )
            peaks = run_peaks(*series, window)
            current = est[resource]
            if not peaks.size:
                per[resource] = current
                continue
            value = float(np.percentile(peaks, q))
            per[resource] = dataclasses.replace(
                current,
                vpa=dataclasses.replace(
                    current.vpa,
                    target=value,
                    uncapped_target=value,
                    lower_bound=min(current.vpa.lower_bound, value),
                    upper_bound=max(current.vpa.upper_bound, value),
                ),
                rec=value,
                rec_unfloored=value,
                target_unfloored=value,
                forecast=None,  # runs at fixed hours are no time-of-week cycle to forecast
            )
            shown.append(f"{resource} {amount(value, resource)}")
        out[name] = ContainerEstimate(cpu=per["cpu"], memory=per["memory"])
        if shown:
            parts.append(f"{name} {', '.join(shown)}")
    runs = runs_in_window(inp, window)
    message = (
        f"{inp.ref.kind} {inp.ref.name}: sized on {runs} runs "
        f"(p{q:g} of runs' peaks: {'; '.join(parts)})"
    )
    return out, (Note("job-runs", message),)


def run_reasons(
    inp: WorkloadInput,
    containers: list[ContainerRecommendation],
    settings: RecommendSettings,
    window: Window,
) -> list[ContainerRecommendation]:
    """A CronJob's or Job's containers with "VPA target" in each reason read as what it is, the
    runs' peak percentile ("runs' p95 peak 817m"), and the inputs ``rec`` and ``vpa_target``
    (both the runs' peak here) given as ``runs_peak`` with ``peak_percentile`` and
    ``run_count``, so the numbers say what they are; other kinds' unchanged."""
    if inp.ref.kind not in RUN_KINDS:
        return containers
    q = settings.jobs.peak_percentile
    said = f"runs' p{q:g} peak"
    runs = runs_in_window(inp, window)

    def explained(x: Explained) -> Explained:
        inputs: dict[str, Number | str | None] = {}
        for key, value in x.inputs.items():
            if key not in RUN_SIZED_INPUTS:
                inputs[key] = value
            elif "runs_peak" not in inputs:
                inputs |= {"runs_peak": value, "peak_percentile": q, "run_count": runs}
        return dataclasses.replace(x, reason=x.reason.replace("VPA target", said), inputs=inputs)

    def resource(r: ResourceRecommendation) -> ResourceRecommendation:
        return dataclasses.replace(r, request=explained(r.request), limit=explained(r.limit))

    return [
        dataclasses.replace(c, cpu=resource(c.cpu), memory=resource(c.memory)) for c in containers
    ]
