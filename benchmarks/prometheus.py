"""Full history fetch from a real Prometheus, against robusta-dev/krr's query pattern.

    .venv/bin/python -m benchmarks.prometheus                    # 50 workloads / 150 containers
    .venv/bin/python -m benchmarks.prometheus --workloads 1000   # the 3,000-container set-up
    .venv/bin/python -m benchmarks.prometheus --workloads 1000 --workdir /tmp/w1000  # keep the TSDB
    .venv/bin/python -m benchmarks.prometheus --workloads 1000 --workdir /tmp/w1000 --plan 3 --no-fetch

Set-up (reported apart): the simulator generates ``--workloads`` Deployments with one pod each
and three containers (app, istio-proxy, log-shipper) over ``--days`` at ``--step-s``; the
OpenMetrics text is written in time windows and backfilled by promtool in parallel
(``--max-block-duration=1000h``); Prometheus starts on 127.0.0.1 with 100y retention. Only the
families the fetch reads are written (usage, owners, replicas): the restart and OOM queries are
still sent and answered (empty), so the query pattern and count are the real ones.

Measured, each in a fresh process so peak memory is the fetch's own:

- ``PrometheusSource.iter_fetch`` of every container over the window, consumed namespace by
  namespace (``fetch`` is the same queries, all results kept): HTTP queries, bytes received,
  wall time, the client's and Prometheus' CPU seconds, peak RSS; once with the default
  ``raw_api: auto`` (remote read) and once through the JSON query API (``--no-query-api``
  skips it);
- the krr pattern (``robusta_krr/core/integrations/prometheus``): per workload the owner
  look-ups through ``kube_replicaset_owner`` and ``kube_pod_owner`` and a running-pods check,
  then per container and per batch of 50 pods four instant subqueries over the window
  (``quantile_over_time(0.95, max(rate(cpu[75s])) by (container, pod, job)[W:75s])``,
  ``max_over_time(max(memory) by (...)[W:75s])`` and two ``count_over_time``), 10 in parallel;
- with ``--plan N``, N times the whole ``tortoise-bot plan --format json`` (a child process:
  discovery of one manifest per simulated workload, the streamed fetch, the engine, the report)
  over the same Prometheus: wall time, CPU seconds, peak RSS, workloads per status.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal

import requests

from benchmarks.measure import peak_rss_mib, report, timed
from bot.config.metrics import PrometheusConfig
from bot.metrics import HistoryRequest, PrometheusSource
from bot.sim import ClusterSpec, ContainerSpec, simulate, write_manifests, write_openmetrics
from bot.sim.cluster import SimulatedCluster
from tests.support.prometheus import _promtool, start_prometheus

FAMILIES = (
    "container_cpu_usage_seconds_total",
    "container_memory_working_set_bytes",
    "kube_pod_owner",
    "kube_replicaset_owner",
    "kube_deployment_status_replicas",
)
"""What the set-up writes: everything the fetch reads except restarts and OOM reasons."""

KRR_BATCH_PODS = 50
"""krr's pods per ``pod=~`` regex (``BatchedRequestMixin``)."""

KRR_PARALLEL = 10
"""krr's requests in flight (``max_workers``)."""

KRR_STEP = "75s"
"""krr's subquery resolution in the issue's example."""


def bench_spec(workloads: int, days: float, step_s: int) -> ClusterSpec:
    """``workloads`` Deployments, one pod each, three containers each."""
    base = ClusterSpec.generate(
        seed=42,
        services=workloads,
        namespaces=max(1, workloads // 25),
        days=days,
        step_s=step_s,
        sidecar_fraction=1.0,
        statefulset_fraction=0.0,
    )
    shipper = ContainerSpec("log-shipper", 0.05, 64 * 1024 * 1024, 0.05, cpu_floor_cores=0.002)
    services = []
    for s in base.services:
        containers = s.containers if len(s.containers) == 2 else (*s.containers, s.containers[0])
        services.append(replace(s, containers=(*containers[:2], shipper), hpa=None, replicas=1))
    return replace(base, services=tuple(services))


def set_up(
    cluster: SimulatedCluster, workdir: Path, workers: int
) -> tuple[str, Any, dict[str, float]]:
    """Write windows, backfill them in parallel, start Prometheus; return (url, server, times)."""
    times: dict[str, float] = {}
    n = len(cluster.t_s)
    windows = max(workers, round(cluster.spec.days))
    bounds = [round(i * n / windows) for i in range(windows + 1)]
    data = workdir / "data"
    data.mkdir(parents=True)
    lock = threading.Lock()
    samples = [0]

    def one(i: int) -> int:
        path = workdir / f"w{i}.om"
        with lock, path.open("w") as out:  # the writer holds the GIL: one at a time
            samples[0] += write_openmetrics(
                cluster, out, window=(bounds[i], bounds[i + 1]), families=FAMILIES
            )
        out_dir = workdir / f"blocks{i}"
        stored = _promtool(path, out_dir)
        path.unlink()
        for block in out_dir.iterdir():
            shutil.move(str(block), str(data / block.name))
        out_dir.rmdir()
        return stored

    with timed() as t, ThreadPoolExecutor(workers) as pool:
        stored = sum(pool.map(one, range(windows)))
    times["write + backfill s"] = t.seconds
    if stored != samples[0]:
        raise SystemExit(f"promtool stored {stored} samples of {samples[0]} written")
    times["samples"] = stored
    with timed() as t:
        server = start_prometheus(data, workdir=workdir)
    times["start s"] = t.seconds
    return server.url, server, times


def _requests(cluster: SimulatedCluster) -> list[HistoryRequest]:
    return [
        HistoryRequest(s.ref, tuple(c.name for c in s.spec.containers)) for s in cluster.services
    ]


def fetch_ours(
    url: str,
    reqs: list[HistoryRequest],
    start: float,
    end: float,
    concurrency: int,
    gzip: bool,
    memory_step_s: int | None,
    raw_api: Literal["auto", "remote_read", "query"] = "auto",
) -> dict[str, Any]:
    """Stream the fetch namespace batch by namespace batch, as a pipeline would, keeping counts."""
    config = PrometheusConfig(
        url=url,
        gzip=gzip,
        concurrency=concurrency,
        memory_step_s=memory_step_s,
        raw_api=raw_api,
    )
    source = PrometheusSource(config)
    queries = received = samples = errors = 0
    began, cpu = time.perf_counter(), time.process_time()
    for part in source.iter_fetch(reqs, start_s=start, end_s=end):
        queries += part.stats.queries
        received += part.stats.bytes_received
        errors += len(part.errors)
        samples += sum(
            len(c.cpu_t) + len(c.mem_t)
            for h in part.histories.values()
            for c in h.containers.values()
        )
    return {
        "queries": queries,
        "bytes": received,
        "seconds": time.perf_counter() - began,
        "client_cpu_s": time.process_time() - cpu,
        "peak_rss_mib": _own_peak_rss_mib(),
        "samples": samples,
        "errors": errors,
    }


def fetch_krr(url: str, workloads: list[Workload], start: float, end: float) -> dict[str, Any]:
    window = f"{round(end - start)}s"
    session = requests.Session()
    counters = {"queries": 0, "bytes": 0}
    lock = threading.Lock()

    def instant(query: str) -> list[Any]:
        response = session.post(
            url + "/api/v1/query",
            data={"query": query, "time": f"{end:.3f}"},
            headers={"Accept-Encoding": "identity"},
            timeout=600,
        )
        with lock:
            counters["queries"] += 1
            counters["bytes"] += len(response.content)
        response.raise_for_status()
        result: list[Any] = response.json()["data"]["result"]
        return result

    def workload(item: Workload) -> None:
        ns, name, containers, known_pods = item
        owners = instant(
            f'kube_replicaset_owner{{namespace="{ns}", owner_kind="Deployment", owner_name="{name}"}}'
        )
        replicasets = "|".join(r["metric"]["replicaset"] for r in owners) or "none"
        pods = instant(
            f'kube_pod_owner{{namespace="{ns}", owner_name=~"{replicasets}", owner_kind="ReplicaSet"}}'
        )
        pod_names = sorted({p["metric"]["pod"] for p in pods} | set(known_pods))
        instant(
            f'count by (pod) (container_cpu_usage_seconds_total{{namespace="{ns}", pod=~"{"|".join(pod_names)}"}})'
        )
        for container in containers:
            for i in range(0, len(pod_names), KRR_BATCH_PODS):
                batch = "|".join(pod_names[i : i + KRR_BATCH_PODS])
                sel = f'namespace="{ns}", pod=~"{batch}", container="{container}"'
                cpu = f"max(rate(container_cpu_usage_seconds_total{{{sel}}}[{KRR_STEP}])) by (container, pod, job)"
                mem = f"max(container_memory_working_set_bytes{{{sel}}}) by (container, pod, job)"
                instant(f"quantile_over_time(0.95, {cpu}[{window}:{KRR_STEP}])")
                instant(f"count_over_time({cpu}[{window}:{KRR_STEP}])")
                instant(f"max_over_time({mem}[{window}:{KRR_STEP}])")
                instant(f"count_over_time({mem}[{window}:{KRR_STEP}])")

    began, cpu = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(KRR_PARALLEL) as pool:
        list(pool.map(workload, workloads))
    return {
        "queries": counters["queries"],
        "bytes": counters["bytes"],
        "seconds": time.perf_counter() - began,
        "client_cpu_s": time.process_time() - cpu,
        "peak_rss_mib": _own_peak_rss_mib(),
    }


Workload = tuple[str, str, tuple[str, ...], tuple[str, ...]]
"""(namespace, name, containers, pod names) as krr learns them from the Kubernetes API."""


def _own_peak_rss_mib() -> float:
    """Peak RSS of this process image (``VmHWM``): ``ru_maxrss`` keeps the forking parent's peak."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return peak_rss_mib()


def _process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _in_child(server_pid: int, fn: Any, *args: Any) -> dict[str, Any]:
    """``fn(*args)`` in a fresh process (its own peak RSS), plus the server's CPU seconds."""
    ctx = multiprocessing.get_context("spawn")
    before = _process_cpu_s(server_pid)
    with ctx.Pool(1) as pool:
        result: dict[str, Any] = pool.apply(fn, args)
    result["server_cpu_s"] = _process_cpu_s(server_pid) - before
    return result


def _cpu(result: dict[str, Any]) -> str:
    return f"{result['client_cpu_s']:.1f} s / {result['server_cpu_s']:.1f} s"


def _report_ours(title: str, ours: dict[str, Any]) -> None:
    report(
        title,
        [
            ("HTTP queries", f"{ours['queries']:,}"),
            ("bytes received", f"{ours['bytes'] / 1e6:,.1f} MB"),
            ("wall time", f"{ours['seconds']:.1f} s"),
            ("CPU: client / Prometheus", _cpu(ours)),
            ("peak RSS (process)", f"{ours['peak_rss_mib']:,.0f} MiB"),
            ("samples returned", f"{ours['samples']:,}"),
            ("workload errors", str(ours["errors"])),
        ],
    )


PEAK_WRAPPER = """
import atexit, os, runpy, sys

def peak():
    with open("/proc/self/status") as status:
        hwm = next(line for line in status if line.startswith("VmHWM:"))
    with open(os.environ["BENCH_PEAK_FILE"], "w") as out:
        out.write(hwm.split()[1])

atexit.register(peak)
runpy.run_module("bot", run_name="__main__", alter_sys=True)
"""
"""Runs ``python -m bot`` and writes its own peak RSS (``VmHWM``, KiB) to ``$BENCH_PEAK_FILE``
at exit: a forked child's ``ru_maxrss`` starts from its parent's, which holds the simulation."""


def _tree_rss_kib(root: int) -> int:
    """Resident memory (KiB) of process ``root`` and every descendant now (``/proc``): the plan
    and the worker processes ``run.processes`` starts (pages they share are counted in each, so
    the sum is an upper bound)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21]) * page_kib
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo += children.get(pid, [])
    return total


class TreePeak:
    """The largest ``_tree_rss_kib`` of a process seen every ``every_s`` while it runs."""

    def __init__(self, pid: int, every_s: float = 0.1) -> None:
        self.pid, self.every_s, self.peak_kib = pid, every_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(self.every_s):
            self.peak_kib = max(self.peak_kib, _tree_rss_kib(self.pid))

    def stop(self) -> float:
        """Stop watching; the peak in MiB."""
        self._stop.set()
        self._thread.join()
        return self.peak_kib / 1024


def run_plan(
    repo: Path, url: str, end: float, output: Path, server_pid: int | None = None
) -> dict[str, Any]:
    """``tortoise-bot plan --format json`` over ``repo`` at ``end`` in a child process (its
    JSON written to ``output``): wall seconds, its CPU seconds (with the worker processes it
    waited for), its own peak RSS and the peak of it and its workers together (sampled every
    0.1 s); with ``server_pid``, the CPU seconds Prometheus spent meanwhile (serving its
    queries)."""
    now = datetime.fromtimestamp(end, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    command = [sys.executable, "-c", PEAK_WRAPPER, "plan", "--repo", str(repo)]
    command += ["--prometheus", url, "--now", now, "--format", "json", "--log-level", "INFO"]
    peak = output.with_suffix(".peak")
    server_before = _process_cpu_s(server_pid) if server_pid else 0.0
    began = time.perf_counter()
    with output.open("wb") as out, tempfile.TemporaryFile() as err:
        env = {**os.environ, "BENCH_PEAK_FILE": str(peak)}
        child = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        tree = TreePeak(child.pid)
        _, status, usage = os.wait4(child.pid, 0)
        tree_peak_mib = tree.stop()
        child.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - began
        server_cpu_s = _process_cpu_s(server_pid) - server_before if server_pid else 0.0
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    if child.returncode not in (0, 1):  # 1: some workload in error, still a whole plan
        raise SystemExit(f"plan failed ({child.returncode}):\n{stderr[-3000:]}")
    statuses = Counter(w["status"] for w in json.loads(output.read_bytes())["workloads"])
    return {
        **_phases(stderr),
        "seconds": seconds,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "server_cpu_s": server_cpu_s,
        "peak_rss_mib": int(peak.read_text()) / 1024,
        "tree_peak_rss_mib": max(tree_peak_mib, int(peak.read_text()) / 1024),
        "statuses": dict(sorted(statuses.items())),
    }


PHASES = re.compile(
    r"in (?P<total>[\d.]+) s: discovery (?P<discovery>[\d.]+) s, history and recommendations "
    r"(?P<streamed>[\d.]+) s \(waiting for the history (?P<waiting>[\d.]+) s; the engine with its "
    r"replay (?P<engine_cpu>[\d.]+) CPU-s\), edit (?P<edit>[\d.]+) s"
)
"""The plan's own account of its time (``bot.pipeline.timings``, logged at INFO)."""


def _phases(stderr: str) -> dict[str, float]:
    found = PHASES.search(stderr)
    if found is None:
        raise SystemExit(f"plan logged no timings:\n{stderr[-3000:]}")
    return {name: float(value) for name, value in found.groupdict().items()}


def _spread(values: list[float], fmt: str) -> str:
    """``min / median / max`` of ``values`` (one value when there is one)."""
    ordered = sorted(values)
    picked = [ordered[0], ordered[len(ordered) // 2], ordered[-1]] if len(ordered) > 1 else ordered
    return " / ".join(format(v, fmt) for v in picked)


def _report_plans(runs: list[dict[str, Any]], load: str) -> None:
    report(
        f"tortoise-bot plan --format json (whole pipeline), {len(runs)} run(s): min / median / max",
        [
            ("wall time s", _spread([r["seconds"] for r in runs], ".1f")),
            ("CPU s (plan process)", _spread([r["cpu_s"] for r in runs], ".1f")),
            ("Prometheus CPU s meanwhile", _spread([r["server_cpu_s"] for r in runs], ".1f")),
            (
                "bot CPU / Prometheus CPU",
                _spread([r["cpu_s"] / max(r["server_cpu_s"], 1e-9) for r in runs], ".1f"),
            ),
            ("discovery s", _spread([r["discovery"] for r in runs], ".1f")),
            (
                "history and recommendations s (streamed together)",
                _spread([r["streamed"] for r in runs], ".1f"),
            ),
            ("  of which waiting for the history s", _spread([r["waiting"] for r in runs], ".1f")),
            (
                "the engine with its replay, CPU s (all workers)",
                _spread([r["engine_cpu"] for r in runs], ".1f"),
            ),
            ("edit s", _spread([r["edit"] for r in runs], ".1f")),
            (
                "the rest: start-up, report, output s",
                _spread([r["seconds"] - r["total"] for r in runs], ".1f"),
            ),
            ("peak RSS MiB (plan process)", _spread([r["peak_rss_mib"] for r in runs], ",.0f")),
            (
                "peak RSS MiB (with its workers)",
                _spread([r["tree_peak_rss_mib"] for r in runs], ",.0f"),
            ),
            ("workloads per status", str(runs[-1]["statuses"])),
            ("load average (before)", load),
        ],
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workloads", type=int, default=50, help="Deployments (3 containers each)")
    parser.add_argument("--days", type=float, default=14.0)
    parser.add_argument("--step-s", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=4, help="our queries in flight")
    parser.add_argument("--gzip", action="store_true", help="ask for gzip (slower on loopback)")
    parser.add_argument(
        "--memory-step-s",
        type=int,
        default=0,
        help="also fetch with this memory_step_s, e.g. 300 (default 0: skip the variant)",
    )
    parser.add_argument("--backfill-workers", type=int, default=2)
    parser.add_argument("--no-krr", action="store_true", help="skip the krr-pattern comparison")
    parser.add_argument(
        "--plan",
        type=int,
        default=0,
        metavar="N",
        help="also run the whole `tortoise-bot plan` N times over manifests of the workloads",
    )
    parser.add_argument(
        "--no-fetch", action="store_true", help="skip the fetch-only measurement (with --plan)"
    )
    parser.add_argument(
        "--no-query-api", action="store_true", help="skip the fetch through the JSON query API"
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="keep the TSDB here; reused when it exists (same --workloads/--days/--step-s)",
    )
    args = parser.parse_args(argv)
    spec = bench_spec(args.workloads, args.days, args.step_s)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tortoise-bench-"))
    with timed() as t:
        cluster = simulate(spec)
    containers = sum(len(s.spec.containers) for s in cluster.services)
    setup_rows = [
        ("workloads / containers", f"{args.workloads} / {containers}"),
        ("simulate s", f"{t.seconds:.1f}"),
    ]
    if args.workdir is not None and (workdir / "data").is_dir():
        with timed() as t:  # a TSDB kept by an earlier run of the same size: no backfill
            server = start_prometheus(workdir / "data", workdir=workdir)
        url, times = server.url, {"start (kept TSDB) s": t.seconds}
    else:
        url, server, times = set_up(cluster, workdir, args.backfill_workers)
    reqs = _requests(cluster)
    repo = workdir / "repo"
    if args.plan and not repo.is_dir():
        write_manifests(spec, repo)
    start, end = float(cluster.t_s[0]), float(cluster.t_s[-1])
    workloads: list[Workload] = [
        (
            s.spec.namespace,
            s.spec.name,
            tuple(c.name for c in s.spec.containers),
            tuple(p.name for p in s.pods),
        )
        for s in cluster.services
    ]
    del cluster
    setup_rows += [(k, f"{v:,.1f}" if isinstance(v, float) else f"{v:,}") for k, v in times.items()]
    report(f"set-up ({args.days:g} days at {args.step_s} s)", setup_rows)
    try:
        fetch = partial(
            _in_child, server.process.pid, fetch_ours, url, reqs, start, end, args.concurrency
        )
        if args.plan:
            load = " ".join(Path("/proc/loadavg").read_text().split(" ")[:3])
            runs = [
                run_plan(repo, url, end, workdir / "plan.json", server.process.pid)
                for _ in range(args.plan)
            ]
            _report_plans(runs, load)
        if not args.no_fetch:
            ours = fetch(args.gzip, None)
            title = "PrometheusSource.iter_fetch (tortoise-bot, exact samples, remote read)"
            _report_ours(title, ours)
        if not args.no_query_api:
            _report_ours(
                "same through the JSON query API (raw_api: query)", fetch(args.gzip, None, "query")
            )
        if args.memory_step_s:
            coarse = fetch(args.gzip, args.memory_step_s)
            _report_ours(f"same with memory_step_s={args.memory_step_s} (peaks kept)", coarse)
        if not args.no_krr:
            krr = _in_child(server.process.pid, fetch_krr, url, workloads, start, end)
            report(
                "krr query pattern (aggregates only, for comparison)",
                [
                    ("HTTP queries", f"{krr['queries']:,}"),
                    ("bytes received", f"{krr['bytes'] / 1e6:,.1f} MB"),
                    ("wall time", f"{krr['seconds']:.1f} s"),
                    ("CPU: client / Prometheus", _cpu(krr)),
                    ("peak RSS (process)", f"{krr['peak_rss_mib']:,.0f} MiB"),
                    ("speed-up of tortoise-bot", f"{krr['seconds'] / ours['seconds']:.1f}x"),
                ],
            )
    finally:
        server.stop()
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
