"""A fleet run: N repositories x 20 workloads, ``tortoise-bot run --shard i/4`` as 4 processes.

    .venv/bin/python -m benchmarks.fleet               # N = 100 repositories
    .venv/bin/python -m benchmarks.fleet --repos 500

Set-up (reported apart): the simulator draws one cluster of 20 services in 2 namespaces over
``--days`` at 600 s steps; repository ``fleet/rNNN`` declares those services in its own
namespaces (``rNNN-ns-0``, ``rNNN-ns-1``) with requests 4x the simulated ones, so every
workload needs a change (``tests/reliability/fleet.py``'s ``oversize``), and opts in with
``pull_requests.grouping: namespace`` (2 pull requests per repository). One real Prometheus
holds every repository's history: the cluster's OpenMetrics with the namespaces renamed the
same way, backfilled by promtool (``tests/support/prometheus.py``). The repositories live on
the GitHub emulator (``tests/support/github``; OpenAPI validation off unless ``--validate``,
so the emulator's own CPU stays small beside the bot's; git over smart HTTP as always).

Measured: the 4 shards started at once (``run --config F --shard i/4 --now END``), then the
same again with nothing changed. Per run: wall time until the last shard ends; per shard its
repositories, wall time, peak RSS (``wait4``) and exit code; REST calls per repository (reads
and writes, from the emulator's record), git pushes, pull requests opened, Prometheus queries
(``prometheus_http_requests_total`` of the ``/api/v1/`` handlers, before and after); and the
benchmark process's CPU (the emulator) apart. ``repositories per shard per hour`` is
N / (the 4 shards' wall times summed) x 3600 (the hash partition is uneven: shards of 22 to 32
repositories at N = 100). The aim of the second run: no write, no push.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import requests

from benchmarks.measure import report, timed
from bot.sim import ClusterSpec, simulate, write_openmetrics
from bot.sim.manifests import write_manifests
from tests.conftest import PROJECT, console_script
from tests.reliability.fleet import oversize
from tests.support.github import GitHubEmulator
from tests.support.prometheus import _promtool, start_prometheus

SHARDS = 4
WORKLOADS = 20
STEP_S = 900
REPOS_PER_BLOCK = 25
"""Repositories per OpenMetrics file handed to promtool (bounded temporary disk)."""

POLL_S = 0.05
"""How often each shard's peak RSS is read."""

OPT_IN = b"update_mode: auto\npull_requests:\n  grouping: namespace\n"


@dataclass(frozen=True)
class Shard:
    index: int
    repositories: int
    wall_s: float
    peak_rss_mib: float
    code: int
    output: str


def _rename(text: str, repo: str, *, quoted: str) -> str:
    """``text`` with every namespace ``ns-K`` as ``<repo>-ns-K`` (``quoted`` around names)."""
    return text.replace(f"{quoted}ns-", f"{quoted}{repo}-ns-")


def repo_name(i: int) -> str:
    return f"r{i:03d}"


def backfill_fleet(cluster_text: str, repos: int, data: Path, workdir: Path) -> int:
    """Every repository's history in ``data``; the samples promtool stored."""
    data.mkdir(parents=True)
    stored = 0
    for first in range(0, repos, REPOS_PER_BLOCK):
        path = workdir / f"block{first}.om"
        with path.open("w") as out:
            for i in range(first, min(repos, first + REPOS_PER_BLOCK)):
                out.write(_rename(cluster_text, repo_name(i), quoted='namespace="'))
            out.write("# EOF\n")
        out_dir = workdir / f"blocks{first}"
        stored += _promtool(path, out_dir)
        path.unlink()
        for block in out_dir.iterdir():
            block.rename(data / block.name)
        out_dir.rmdir()
    return stored


def prometheus_queries(url: str) -> int:
    """Requests Prometheus served on its ``/api/v1/`` handlers so far."""
    text = requests.get(url + "/metrics", timeout=10).text
    total = 0.0
    for line in text.splitlines():
        if line.startswith("prometheus_http_requests_total{") and 'handler="/api/v1/' in line:
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def _high_water_mib(pid: int) -> float | None:
    """``VmHWM`` of a running process (its peak RSS since exec), MiB; None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    return int(found.group(1)) / 1024 if found else None


def run_shards(config: Path, now: str, env: dict[str, str]) -> tuple[float, list[Shard]]:
    """The 4 shards at once: (wall time until the last ends, each shard).

    Peak RSS is each process's ``VmHWM`` read every ``POLL_S`` until it exits (``wait4``'s
    ``ru_maxrss`` would count the benchmark's own memory, inherited through fork)."""
    start = time.perf_counter()
    procs = {}
    for i in range(SHARDS):
        argv = [*console_script(), "run", "--config", str(config), "--shard", f"{i}/{SHARDS}"]
        out = tempfile.TemporaryFile()  # noqa: SIM115  (closed once the shard is read)
        proc = subprocess.Popen(
            [*argv, "--now", now], cwd=PROJECT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
        procs[proc.pid] = (i, out, time.perf_counter(), proc)
    peaks = dict.fromkeys(procs, 0.0)
    shards = []
    while procs:
        for pid in procs:
            peaks[pid] = max(peaks[pid], _high_water_mib(pid) or 0.0)
        for pid, (i, out, began, proc) in list(procs.items()):
            code = proc.poll()
            if code is None:
                continue
            del procs[pid]
            with out:
                out.seek(0)
                text = out.read().decode(errors="replace")
            served = sum(1 for line in text.splitlines() if re.match(r"^\s*(ok|FAILED)\s", line))
            shards.append(Shard(i, served, time.perf_counter() - began, peaks[pid], code, text))
        time.sleep(POLL_S)
    return time.perf_counter() - start, sorted(shards, key=lambda s: s.index)


def one_run(
    label: str, gh: GitHubEmulator, prom_url: str, config: Path, now: str, env: dict[str, str]
) -> tuple[list[tuple[str, str]], bool, bool]:
    """Rows of one fleet run, whether every shard exited 0, and whether it wrote nothing."""
    gh.reset_calls()
    queries = prometheus_queries(prom_url)
    own = resource.getrusage(resource.RUSAGE_SELF)
    wall, shards = run_shards(config, now, env)
    own_after = resource.getrusage(resource.RUSAGE_SELF)
    queries = prometheus_queries(prom_url) - queries
    per_repo: dict[str, int] = {}
    for call in gh.rest_calls():
        parts = call.path.split("/")
        if len(parts) > 3 and parts[1] == "repos":
            per_repo[parts[3]] = per_repo.get(parts[3], 0) + 1
    repos = len(gh.repos)
    counts = [per_repo.get(name.split("/")[1], 0) for name in gh.repos]
    reads, writes = len(gh.reads()), len(gh.writes())
    pushes = sum(1 for c in gh.git_calls() if "receive-pack" in c.path and c.method == "POST")
    opened = sum(1 for c in gh.writes() if c.method == "POST" and c.path.endswith("/pulls"))
    shard_hours = sum(s.wall_s for s in shards) / 3600
    rows = [
        (f"{label}: wall time (4 shards at once)", f"{wall:.1f} s"),
        (
            f"{label}: repositories per shard per hour",
            f"{repos / shard_hours:.0f} (N over the shards' wall times summed)",
        ),
    ]
    for s in shards:
        rows.append(
            (
                f"{label}: shard {s.index}/{SHARDS}",
                f"{s.repositories} repos, {s.wall_s:.1f} s, peak RSS {s.peak_rss_mib:.0f} MiB, "
                f"exit {s.code}",
            )
        )
    rows += [
        (
            f"{label}: REST calls per repository",
            f"mean {statistics.fmean(counts):.1f}, max {max(counts)} "
            f"({reads} reads + {writes} writes in all)",
        ),
        (f"{label}: git pushes", str(pushes)),
        (f"{label}: pull requests opened", str(opened)),
        (
            f"{label}: Prometheus queries",
            f"{queries} ({queries / repos:.1f} per repository)",
        ),
        (
            f"{label}: emulator CPU (this process)",
            f"{own_after.ru_utime + own_after.ru_stime - own.ru_utime - own.ru_stime:.1f} s",
        ),
    ]
    for s in shards:
        if s.code != 0 or os.environ.get("FLEET_SHOW_OUTPUT"):
            print(f"--- shard {s.index} exited {s.code}:\n{s.output[-3000:]}", file=sys.stderr)
    return rows, all(s.code == 0 for s in shards), writes == 0 and pushes == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repos", type=int, default=100, help="Repositories (default 100).")
    parser.add_argument("--days", type=float, default=1.25, help="History per workload, days.")
    parser.add_argument("--validate", action="store_true", help="Check every REST exchange.")
    args = parser.parse_args(argv)
    spec = ClusterSpec.generate(
        seed=5, services=WORKLOADS, namespaces=2, days=args.days, step_s=STEP_S
    )
    now = datetime.fromtimestamp(spec.end_s, UTC).isoformat()
    setup: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="fleet-") as tmp:
        work = Path(tmp)
        with timed() as t:
            cluster = simulate(spec)
            buffer = work / "cluster.om"
            with buffer.open("w") as out:
                per_repo = write_openmetrics(cluster, out)
            text = buffer.read_text().removesuffix("# EOF\n")
            buffer.unlink()
            stored = backfill_fleet(text, args.repos, work / "data", work)
        if stored != per_repo * args.repos:
            raise SystemExit(f"promtool stored {stored} samples of {per_repo * args.repos}")
        setup.append(("history: samples, write + backfill", f"{stored:,}, {t.seconds:.1f} s"))
        with (
            start_prometheus(work / "data", workdir=work) as prom,
            GitHubEmulator(work / "github") as gh,
        ):
            gh.validate = args.validate
            with timed() as t:
                template = work / "template"
                write_manifests(spec, template)
                files = {
                    p.relative_to(template).as_posix(): oversize(p.read_text())
                    for p in sorted(template.rglob("*.yaml"))
                }
                names = [repo_name(i) for i in range(args.repos)]
                for name in names:
                    repo_files: dict[str, bytes] = {
                        path: _rename(body, name, quoted='namespace: "').encode()
                        for path, body in files.items()
                    }
                    gh.create_repository(
                        "fleet", name, {".tortoise-bot.yaml": OPT_IN, **repo_files}
                    )
            setup.append(("repositories on the emulator", f"{args.repos}, {t.seconds:.1f} s"))
            config = work / "bot.json"
            config.write_text(
                json.dumps(
                    {
                        "repositories": [f"fleet/{n}" for n in names],
                        "prometheus": {"url": prom.url, "window_days": args.days, "step_s": STEP_S},
                        "github": {
                            "api_url": gh.api_url,
                            "seconds_between_requests": None,
                            "seconds_between_writes": None,
                            "retries": 1,
                            "backoff_factor": 0.01,
                        },
                    }
                )
            )
            env = {
                **os.environ,
                "GITHUB_TOKEN": gh.token,
                "NO_COLOR": "1",
                "PYTHONPATH": str(PROJECT),
            }
            env.pop("GITHUB_STEP_SUMMARY", None)
            report(f"fleet set-up: {args.repos} repositories x {WORKLOADS} workloads", setup)
            first, first_ok, _ = one_run("first run", gh, prom.url, config, now, env)
            report("first run", first)
            second, second_ok, quiet = one_run("second run", gh, prom.url, config, now, env)
            second.append(("second run: no write, no push (the aim)", "yes" if quiet else "NO"))
            report("second run, nothing changed", second)
            gh.assert_valid()
    with open("/proc/loadavg") as load:
        print(f"load average: {load.read().strip()}")
    return 0 if first_ok and second_ok and quiet else 1


if __name__ == "__main__":
    sys.exit(main())
