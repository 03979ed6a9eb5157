"""The runs of a simulated CronJob or Job: when a run's pod is alive, and the Job it belongs to
(``ServiceSpec.runs``; ``bot.sim.cluster`` and ``bot.sim.continuous`` run one pod per run)."""

from __future__ import annotations

import numpy as np

from bot.model import FloatArray, IntArray
from bot.sim.spec import JobRuns, ServiceSpec


def run_mask(service: ServiceSpec, t_s: FloatArray) -> IntArray:
    """1 while a run of a CronJob or Job is alive, else 0 (``ServiceSpec.runs``)."""
    runs = service.runs or JobRuns()
    since = t_s - t_s[0]
    if service.kind != "Job" or runs.generated:
        since = since % runs.every_s
    alive: IntArray = (since < runs.duration_s).astype(np.int32)
    return alive


def job_name(service: ServiceSpec, start_s: float, index: int) -> str:
    """The Job of one run: ``<cronjob>-<scheduled minute>`` (the CronJob controller's name),
    ``<job>-<revision>`` for a generated bare Job, else the Job's own name."""
    if service.kind == "CronJob":
        return f"{service.name}-{int(start_s // 60)}"
    if (service.runs or JobRuns()).generated:
        return f"{service.name}-{index + 1}"
    return service.name
