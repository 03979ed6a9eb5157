"""Worker processes (``run.processes``): the plan is byte-identical to a serial one, in the same
order, and a worker that dies loses only the calls it held."""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from bot.config.bot import BotSettings, RunConfig, load_bot_settings
from bot.metrics.snapshot import SnapshotSource
from bot.outcome_view import plan_document
from bot.pipeline.plan import repository_outcome
from bot.pipeline.proposals import build_proposals
from bot.report import render_pull_request
from bot.worker_pool import OrderedPool, forkserver_socket_fits, usable_cores
from tests.test_pipeline import DEMO, OneBrokenWorkload


def _plan(tmp_path: Path, source: OneBrokenWorkload, settings: BotSettings, processes: int):
    root = tmp_path / f"shop-{processes}"
    shutil.copytree(DEMO / "repo", root)
    run = settings.run.model_copy(update={"processes": processes})
    seen: list[str] = []
    plan = repository_outcome(
        root,
        source,
        settings.model_copy(update={"run": run}),
        now_s=source.inner.end_s,
        on_workload=lambda ref: seen.append(ref.key),
    )
    document = json.dumps(plan_document(plan, repository="shop"), indent=2)
    bodies = [render_pull_request(p, prices=plan.prices)[1] for p in build_proposals(plan)]
    return document, bodies, seen


def test_the_plan_is_byte_identical_serial_and_in_worker_processes(tmp_path):
    source = OneBrokenWorkload(SnapshotSource(DEMO / "snapshot.zip"), "cart")  # an error too
    settings = load_bot_settings(DEMO / "bot.yaml")
    serial, serial_bodies, serial_seen = _plan(tmp_path, source, settings, 1)
    pooled, pooled_bodies, pooled_seen = _plan(tmp_path, source, settings, 2)
    assert '"status": "changes"' in serial and "query timed out" in serial
    assert pooled == serial
    assert pooled_bodies == serial_bodies and serial_bodies
    assert pooled_seen == serial_seen


def _square_or_die(x: int) -> int:
    if x == 3:
        os._exit(9)  # the worker ends without answering, as when killed
    return x * x


def test_a_dead_worker_loses_only_the_calls_out_with_it_and_order_holds():
    done: list[tuple[int, int]] = []
    with OrderedPool[int](
        2, done=lambda k, r: done.append((k, r)), lost=lambda k, e: -1, in_flight=1
    ) as pool:
        for x in range(6):
            pool.submit(x, _square_or_die, x)
        pool.finish()
    assert done == [(0, 0), (1, 1), (2, 4), (3, -1), (4, 16), (5, 25)]


def _shared_and_sum(a: np.ndarray, b: np.ndarray) -> tuple[bool, float]:
    return a is b, float(a.sum() + b.sum())


def test_arrays_reach_the_worker_whole_and_shared_and_an_unpicklable_call_fails_at_submit():
    """One array passed twice arrives as one array (pickled once); a call that cannot be
    pickled raises from ``submit``, before any worker sees it."""
    done: list[tuple[int, tuple[bool, float]]] = []
    axis = np.arange(20_000, dtype=np.float64)
    with OrderedPool[tuple[bool, float]](
        2, done=lambda k, r: done.append((k, r)), lost=lambda k, e: (False, -1.0)
    ) as pool:
        pool.submit(0, _shared_and_sum, axis, axis)
        with pytest.raises((AttributeError, TypeError, pickle.PicklingError)):
            pool.submit(1, _shared_and_sum, axis, lambda: None)
        pool.finish()
    assert done == [(0, (True, 2 * float(axis.sum())))]


def test_auto_is_serial_for_a_small_repository_and_every_core_for_a_large_one():
    auto = RunConfig()
    assert auto.processes_for(99, 8) == 1
    assert auto.processes_for(100, 8) == 8
    assert RunConfig(processes=3).processes_for(5, 8) == 3


def test_a_cgroup_cpu_quota_bounds_the_cores(tmp_path):
    cpu_max = tmp_path / "cpu.max"
    cpu_max.write_text("150000 100000\n")
    assert usable_cores(cpu_max) == min(2, len(os.sched_getaffinity(0)))
    cpu_max.write_text("max 100000\n")
    assert usable_cores(cpu_max) == len(os.sched_getaffinity(0))
    assert usable_cores(tmp_path / "absent") == len(os.sched_getaffinity(0))


def test_a_temporary_directory_too_long_for_a_socket_runs_the_work_in_this_process(
    tmp_path, monkeypatch, caplog
):
    long = tmp_path / ("d" * 90)
    long.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(long))
    assert not forkserver_socket_fits()
    done: list[tuple[int, int]] = []
    with caplog.at_level(logging.WARNING, logger="bot.worker_pool"):
        pool: OrderedPool[int] = OrderedPool(2, done=lambda k, r: done.append((k, r)), lost=_no)
    assert pool.processes == 1
    assert "too long a path" in caplog.text and "TMPDIR" in caplog.text
    pool.submit(0, abs, -3)
    assert done == [(0, 3)]
    monkeypatch.setattr(tempfile, "tempdir", "/tmp")
    assert forkserver_socket_fits()


def _no(key: int, exc: Exception) -> int:
    raise AssertionError((key, exc))


def test_started_workers_are_up_before_the_first_call_and_take_the_calls():
    done: list[tuple[int, int]] = []
    with OrderedPool[int](2, done=lambda k, r: done.append((k, r)), lost=_no) as pool:
        pool.start()
        executor = pool._executor
        assert executor is not None
        started = set(executor._processes)  # the workers, before any call of ours
        assert len(started) == 2
        pool.start()  # a second start changes nothing
        for x in range(5):
            pool.submit(x, abs, -x)
        pool.finish()
        assert pool._executor is executor and set(executor._processes) == started
    assert done == [(x, x) for x in range(5)]
    serial: OrderedPool[int] = OrderedPool(1, done=lambda k, r: None, lost=_no)
    serial.start()
    assert serial._executor is None
