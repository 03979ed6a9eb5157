"""``tortoise-bot serve`` for a sustained period while Prometheus and GitHub misbehave.

The service runs on a short interval (``tests/reliability/serving.py``) against the real
Prometheus behind a fault proxy and the GitHub emulator, for ``RUNS`` scheduled runs over one
repository. Seeded faults: Prometheus answers some requests with a 500, a 429, a 503 page, a
cut JSON body, or later than ``timeout_s``; GitHub answers some calls with 500, 502, 429 or a
secondary rate limit. Runs may fail; the service must keep its schedule with runs that never
overlap, resident memory, open files and threads flat, never publish a duplicate, and stop on
SIGTERM in the middle of a run that writes (SIGTERM comes right after its git push) with that
run finished: its pull requests opened and the dashboard telling them.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import signal
import statistics
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import PROJECT
from tests.metrics.faults import FaultProxy, Reply, Seen
from tests.reliability.fleet import bot_env, github_state, open_pulls, python_module
from tests.reliability.hostile import bot_config, serve_repositories, sim_repository
from tests.support.github import Call, GitHubEmulator
from tests.support.prometheus import TEST_LABELS, TEST_SPEC

pytestmark = [pytest.mark.github, pytest.mark.prometheus]

SEED = 200
RUNS = 80
"""Scheduled runs to wait for."""
INTERVAL_S = 0.02
"""Time between two triggers: far shorter than a run, so most triggers find a run going."""
WARM_UP = 20
"""Runs before memory is taken as the baseline (imports, caches and pools filled)."""
DEADLINE_S = 480
"""Longest wait for ``RUNS`` runs (about 55 s on an idle machine)."""
MEMORY_SLOPE_KIB = 20.0
"""Largest rise of resident memory per run after warm-up (least-squares slope over the runs):
a leak of 40 KiB a run breaks it; 8.5 KiB a run was measured over runs 20 to 80, falling
(4 KiB over runs 20 to 200, the allocator filling its arenas), with 27 KiB of scatter."""
MAX_FDS = 48
"""Open file descriptors allowed after a run (7 to 22 seen): one kept per run would pass it."""
TIMEOUT_S = 0.5
"""Prometheus ``timeout_s``: a late answer comes ``LATE_S`` after the question."""
LATE_S = 0.8
PROMETHEUS_FAULT_RATE = 0.08
GITHUB_FAULTS = [
    ("GET", r"^/repos/octo/[a-z]+$", 500),
    ("GET", r"/pulls$", 502),
    ("GET", r"/issues$", 429),
    ("GET", r"/issues$", 403),
]
"""(method, path, status) GitHub faults are drawn from; 403 is a secondary rate limit. Each
is a call every run makes, so a fault is used by the next run."""
REPOSITORY = "octo/shop"
"""The repository served: the manifests of ``ns-0`` of ``sim_prometheus``'s cluster (two
workloads), ``ns-1`` (two more) pushed before SIGTERM."""
WINDOW_DAYS = 0.25
"""Six hours of history (``recommend.min_history_s`` one hour): little work per run."""


class PrometheusFaults:
    """A seeded fault proxy rule, counting what it injected; ``active`` turns it off."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.injected: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.active = True

    def __call__(self, n: int, seen: Seen) -> Reply | None:
        with self.lock:
            if not self.active or self.rng.random() >= PROMETHEUS_FAULT_RATE:
                return None
            kind = self.rng.choice(["500", "429", "503 page", "cut body", "late"])
            self.injected[kind] += 1
        json_type = {"Content-Type": "application/json"}
        return {
            "500": Reply(
                500, b'{"status":"error","errorType":"internal","error":"boom"}', json_type
            ),
            "429": Reply(429, b"slow down", {"Retry-After": "0"}),
            "503 page": Reply(503, b"<html><body>503 Service Unavailable</body></html>"),
            "cut body": Reply(200, b'{"status":"success","data":{"resultType":', json_type),
            "late": Reply(200, b"{}", json_type, delay_s=LATE_S),
        }[kind]


def _readyz(log: Path) -> str:
    """The service's readiness URL, from the port it printed."""
    port = re.search(r"health on port (\d+)", log.read_text())
    assert port, log.read_text()[-3000:]
    return f"http://127.0.0.1:{port[1]}/readyz"


def _records(path: Path) -> tuple[list[float], list[dict[str, Any]]]:
    starts, ends = [], []
    lines = path.read_text().splitlines() if path.exists() else []
    for line in lines:
        row = json.loads(line)
        if "start" in row:
            starts.append(row["start"])
        else:
            ends.append(row)
    return starts, ends


def test_serve_under_faults_stays_flat_never_overlaps_and_stops_cleanly(
    github_emulator: GitHubEmulator, sim_prometheus, tmp_path
):
    gh = github_emulator
    serve_repositories(gh, {REPOSITORY: sim_repository("ns-0", tmp_path / "ns-0")})
    rule = PrometheusFaults(SEED)
    record, workdir, log = tmp_path / "runs.jsonl", tmp_path / "tmp", tmp_path / "serve.log"
    workdir.mkdir()
    rng = random.Random(SEED)
    github_faults = 0
    with FaultProxy(sim_prometheus.url, rule) as proxy, log.open("wb") as output:
        prometheus = {
            "url": proxy.url,
            "window_days": WINDOW_DAYS,
            "step_s": 600,
            "retries": 1,
            "backoff_s": 0.01,
            "timeout_s": TIMEOUT_S,
            "matchers": [{"label": k, "value": v} for k, v in TEST_LABELS.items()],
        }
        config = bot_config(
            tmp_path / "bot.yaml",
            prometheus,
            gh.api_url,
            (REPOSITORY,),
            recommend={"min_history_s": 3600},
        )
        argv = python_module(
            "tests.reliability.serving",
            str(config),
            str(INTERVAL_S),
            str(TEST_SPEC.end_s),
            str(record),
        )
        env = {**bot_env(TMPDIR=str(workdir)), "PYTHONPATH": str(PROJECT)}
        proc = subprocess.Popen(argv, cwd=PROJECT, env=env, stdout=output, stderr=output)
        try:
            deadline = time.monotonic() + DEADLINE_S
            while len(_records(record)[1]) < RUNS:
                assert proc.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, "the service fell behind"
                with gh.lock:
                    if not gh.faults:  # one at a time: each fault is used before the next
                        method, path, status = rng.choice(GITHUB_FAULTS)
                        headers = {"Retry-After": "0"} if status in (403, 429) else None
                        gh.fail(method, path, status, headers=headers)
                        github_faults += 1
                time.sleep(0.05)
            with gh.lock:
                github_faults -= len(gh.faults)  # injected but never used
                gh.faults.clear()
            with rule.lock:
                rule.active = False
            served = github_state(gh, REPOSITORY)
            status = json.loads(requests.get(_readyz(log), timeout=10).text)

            # Two new workloads: the next run pushes branches, opens pull requests and updates
            # the dashboard; SIGTERM comes the moment its first push is done.
            stopping: list[float] = []

            def terminate(call: Call) -> None:
                stopping.append(time.monotonic())
                proc.send_signal(signal.SIGTERM)

            gh.after(lambda c: c.path.endswith(".git/git-receive-pack"), terminate)
            more = sim_repository("ns-1", tmp_path / "ns-1")
            gh.push(REPOSITORY, "main", {k: v for k, v in more.items() if isinstance(v, bytes)})
            proc.wait(120)
            stopped_after_s = time.monotonic() - stopping[0]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    out = log.read_text()
    assert proc.returncode == 0 and "tortoise-bot serve: stopped" in out, out[-3000:]

    # The schedule kept: triggers that found a run going were skipped, runs never overlapped.
    starts, ends = _records(record)
    assert len(starts) == len(ends) > RUNS  # the run under way when SIGTERM came was finished
    spans = sorted(zip(starts, (e["end"] for e in ends), strict=True))
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))
    assert status["runs"] >= RUNS and status["skipped_overlaps"] > status["runs"], status
    codes = Counter(e["code"] for e in ends)
    assert codes[0] > RUNS // 4 and codes[1] > RUNS // 20, codes  # faults failed some runs
    assert ends[-1]["code"] == 0  # the run SIGTERM came in, without faults

    # Flat: resident memory, open files and threads after warm-up.
    rss = [e["rss_kib"] for e in ends]
    slope = statistics.linear_regression(range(len(rss) - WARM_UP), rss[WARM_UP:]).slope
    assert slope < MEMORY_SLOPE_KIB, (slope, rss)
    baseline, last = statistics.median(rss[WARM_UP : WARM_UP + 20]), statistics.median(rss[-20:])
    fds, threads = [e["fds"] for e in ends], [e["threads"] for e in ends]
    assert max(fds) <= MAX_FDS, fds  # sockets the collector has not closed yet come and go
    assert max(threads[-20:]) <= max(threads[WARM_UP : WARM_UP + 20]), threads
    assert sorted(workdir.iterdir()) == []  # no checkout or temporary file left behind

    # Served through the faults: one open pull request per branch, one dashboard, nothing twice.
    ok_runs = len(re.findall(rf"^\s*ok\s+{REPOSITORY}\s", out, re.M))
    failed_runs = len(re.findall(rf"^\s*FAILED\s+{REPOSITORY}\s", out, re.M))
    assert ok_runs > RUNS // 4 and failed_runs > RUNS // 20, (ok_runs, failed_runs)
    assert open_pulls(served) == len(served["pulls"]) >= 1, served
    assert all(len(p) == 1 and p[0]["body names the head"] for p in served["pulls"].values())
    assert served["branches without pull request"] == []
    assert len(served["dashboards"]) == 1
    # The run SIGTERM came in finished its work: the new workloads' pull requests are open,
    # each body names its branch's head, and the one dashboard changed.
    after = github_state(gh, REPOSITORY)
    assert open_pulls(after) == len(after["pulls"]) > len(served["pulls"]), after
    assert all(len(p) == 1 and p[0]["body names the head"] for p in after["pulls"].values())
    assert after["branches without pull request"] == []
    assert len(after["dashboards"]) == 1 and after["dashboards"] != served["dashboards"]
    assert len(gh.issues(REPOSITORY)) == 1
    gh.assert_valid()

    longest = max(e["end"] - s for s, e in zip(starts, ends, strict=True))
    print(
        f"\nserve: {len(ends)} runs ({dict(codes)}), {status['skipped_overlaps']} triggers "
        f"skipped; {REPOSITORY} served in {ok_runs} runs, failed in {failed_runs}; Prometheus "
        f"faults {sum(rule.injected.values())} {dict(rule.injected)}, GitHub faults "
        f"{github_faults}; RSS {baseline / 1024:.1f} -> {last / 1024:.1f} MiB ({slope:.1f} KiB a "
        f"run); longest run "
        f"{longest:.2f} s; stopped {stopped_after_s:.2f} s after SIGTERM"
    )
