"""CronJobs and Jobs: sized on the peaks of their runs, never diluted by the idle time between
runs (no samples there); too few runs in the window is gathering-data."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bot.config.recommend import RecommendSettings, resolve
from bot.model import GIB, ContainerHistory, FieldId, WorkloadHistory, WorkloadRef
from bot.recommend.engine import recommend
from bot.recommend.runs import run_peaks, runs_in_window
from bot.recommend.units import amount
from bot.recommend.window import Window
from bot.report.summary import inputs_text
from tests.recommend.factories import DAY_S, NOW_S, container, workload

DEFAULT = RecommendSettings()
CRONJOB = WorkloadRef("CronJob", "shop", "nightly-report")
RUN_STEPS = 20
"""Samples (one a minute) in one run: 5 minutes of start-up, then 15 busy ones."""


def _runs(peaks_cores: list[float], every_s: float = 4 * 3600, *, mem_gib: float = 1.0):
    """A history of ``len(peaks_cores)`` runs ending at ``NOW_S``, one pod each, ``every_s``
    apart: 5 minutes at 0.05 cores, then ``peak`` cores (±2 %) for 15; memory rises to
    ``mem_gib`` GiB in each run."""
    t, pod, cpu, mem = [], [], [], []
    first = NOW_S - len(peaks_cores) * every_s
    for index, peak in enumerate(peaks_cores):
        times = first + index * every_s + 60.0 * np.arange(RUN_STEPS)
        busy = peak * (1 + 0.02 * np.sin(np.arange(RUN_STEPS)))
        t.append(times)
        pod.append(np.full(RUN_STEPS, index, dtype=np.int32))
        cpu.append(np.where(np.arange(RUN_STEPS) < 5, 0.05, busy))
        mem.append(np.linspace(0.2, 1.0, RUN_STEPS) * mem_gib * GIB)
    t_all, pod_all = np.concatenate(t), np.concatenate(pod)
    history = ContainerHistory(
        "report",
        cpu_t=t_all,
        cpu_pod=pod_all,
        cpu_cores=np.concatenate(cpu),
        mem_t=t_all.copy(),
        mem_pod=pod_all.copy(),
        mem_bytes=np.concatenate(mem),
        oom_t=np.zeros(0),
        oom_pod=np.zeros(0, dtype=np.int32),
        oom_request_bytes=np.zeros(0),
    )
    workload_history = WorkloadHistory(
        CRONJOB,
        first,
        NOW_S,
        pods=tuple(f"nightly-report-{i}-x2b4c" for i in range(len(peaks_cores))),
        containers={"report": history},
        replicas_t=np.zeros(0),
        replicas=np.zeros(0),
    )
    inp = workload(container("report", 1.0, 2 * GIB, mem_limit=3 * GIB), hist=workload_history)
    return replace(inp, ref=CRONJOB)


def test_sized_on_the_runs_busy_part_not_diluted_by_the_gaps():
    peaks = [0.6, 0.62, 0.58, 0.61, 0.6, 0.59, 0.63, 0.6, 0.61, 0.6, 0.62, 0.6]
    rec = recommend(_runs(peaks), DEFAULT, now_s=NOW_S)
    assert rec.status == "changes", rec.reasons
    cpu = rec.containers[0].cpu.request.proposed
    # a run's busy part uses ~0.6 cores; the mean over the day would be 0.6 × 15 / 240 ≈ 0.04
    assert cpu is not None and 0.6 <= cpu <= 0.8
    memory = rec.containers[0].memory.request.proposed
    assert memory is not None and GIB <= memory <= 1.3 * GIB  # was 2Gi
    (note,) = [n for n in rec.notes if n.code == "job-runs"]
    report = _runs(peaks).history.containers["report"]
    runs = run_peaks(report.cpu_t, report.cpu_pod, report.cpu_cores, Window(NOW_S))
    assert runs.size == 12 and runs.min() > 0.58  # each run's highest sample, never start-up
    p95 = float(np.percentile(runs, 95))
    assert note.message.startswith("CronJob nightly-report: sized on 12 runs (p95 of runs' peaks:")
    assert f"report cpu {amount(p95, 'cpu')}, memory 1Gi)" in note.message


def test_the_gap_between_runs_changes_nothing():
    """Every 4 hours or daily, the same runs give the same size: a gap is absence, not zero."""
    peaks = [0.4, 0.45, 0.5, 0.42, 0.47, 0.44, 0.46, 0.43]
    hourly = recommend(_runs(peaks, 4 * 3600), DEFAULT, now_s=NOW_S)
    daily = recommend(_runs(peaks, DAY_S), DEFAULT, now_s=NOW_S)
    for a, b in zip(hourly.containers, daily.containers, strict=True):
        assert a.cpu.request.proposed == b.cpu.request.proposed
        assert a.memory.request.proposed == b.memory.request.proposed


def test_the_percentile_is_a_setting():
    peaks = [0.2] * 9 + [1.0]
    high = recommend(_runs(peaks), DEFAULT, now_s=NOW_S)
    settings = resolve(DEFAULT, {"jobs": {"peak_percentile": 50}})
    median = recommend(_runs(peaks), settings, now_s=NOW_S)
    high_rec = high.containers[0].cpu.request.inputs["runs_peak"]
    median_rec = median.containers[0].cpu.request.inputs["runs_peak"]
    assert isinstance(high_rec, float) and isinstance(median_rec, float)
    assert high_rec > 3 * median_rec  # p95 reaches into the one busy run, p50 does not
    assert "p50 of runs' peaks" in " ".join(n.message for n in median.notes)
    # the replay still counts the busy run's minutes over the request: the budget raises it
    assert median.containers[0].cpu.request.rule == "replay.budget"


@pytest.mark.parametrize(("runs", "text"), [(1, "1 run in the window"), (2, "2 runs in the")])
def test_too_few_runs_is_gathering_data(runs, text):
    rec = recommend(_runs([0.5] * runs, DAY_S), DEFAULT, now_s=NOW_S)
    assert rec.status == "gathering-data"
    assert rec.reasons == (f"{text}{' window' if runs == 2 else ''}; needs ≥ 3",)
    assert all(c.cpu.request.proposed is None for c in rec.containers)
    fewer = resolve(RecommendSettings(), {"jobs": {"min_runs": runs}})
    assert recommend(_runs([0.5] * runs, DAY_S), fewer, now_s=NOW_S).reasons != rec.reasons


def test_runs_are_counted_in_the_window_only():
    inp = _runs([0.5] * 5, DAY_S)
    assert runs_in_window(inp, Window(NOW_S)) == 5
    hist = inp.history.containers["report"]
    peaks = run_peaks(hist.cpu_t, hist.cpu_pod, hist.cpu_cores, Window(NOW_S - 2.5 * DAY_S))
    assert peaks.size == 3 and np.all(peaks > 0.5)


def test_other_kinds_are_not_sized_on_runs():
    inp = _runs([0.6] * 12)
    deployment = replace(inp, ref=replace(CRONJOB, kind="Deployment"))
    rec = recommend(deployment, DEFAULT, now_s=NOW_S)
    assert not [n for n in rec.notes if n.code == "job-runs"]
    # the VPA's histograms hold the runs' samples only: not diluted by the gaps either
    cpu = rec.containers[0].cpu.vpa
    assert cpu is not None and cpu.target >= 0.6


def test_the_inputs_are_the_runs_peak_with_its_numbers():
    peaks = [0.6, 0.62, 0.58, 0.61, 0.6, 0.59, 0.63, 0.6, 0.61, 0.6, 0.62, 0.6]
    rec = recommend(_runs(peaks), DEFAULT, now_s=NOW_S)
    report = _runs(peaks).history.containers["report"]
    runs = run_peaks(report.cpu_t, report.cpu_pod, report.cpu_cores, Window(NOW_S))
    inputs = rec.containers[0].cpu.request.inputs
    assert inputs["runs_peak"] == pytest.approx(float(np.percentile(runs, 95)))
    assert inputs["peak_percentile"] == 95 and inputs["run_count"] == 12
    assert "rec" not in inputs and "vpa_target" not in inputs
    text = inputs_text(FieldId.REQUESTS_CPU, inputs)
    assert text.startswith("runs' p95 peak ") and ", runs 12" in text, text
