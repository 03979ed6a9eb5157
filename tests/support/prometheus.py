"""A real Prometheus for tests: backfill OpenMetrics with promtool, serve it on 127.0.0.1.

Plain functions and a context manager, so any test suite (or a benchmark) can use them::

    with prometheus_from_cluster(simulate(spec), tmp_path) as prom:
        requests.get(prom.url + "/api/v1/query", params={"query": "up"})

- ``backfill(files, data_dir)`` runs ``promtool tsdb create-blocks-from openmetrics
  --max-block-duration=1000h`` per file (in parallel), moves the blocks into ``data_dir`` and
  checks promtool's sample count against ``expected_samples`` (promtool drops out-of-order and
  duplicate samples without a word);
- ``start_prometheus(data_dir)`` starts ``prometheus`` on ``127.0.0.1`` with an OS-chosen port,
  ``--storage.tsdb.retention.time=100y`` (retention counts back from the newest block) and waits
  for ``/-/ready``; the result is a context manager that stops the server;
- ``prometheus_from_cluster(cluster, workdir)`` does both for a simulated cluster (with
  ``scrapes``, once per kube-state-metrics scrape interval, labelled apart, in one server);
- the ``sim_prometheus`` fixture (session scope) serves a small simulated cluster.

A missing binary is a failure, never a skip (``scripts/setup`` installs the Debian package).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import pytest
import requests

from bot.sim import ClusterSpec, KsmScrape, SimulatedCluster, simulate, write_openmetrics

READY_TIMEOUT_S = 30.0
"""How long to wait for ``/-/ready`` (measured start-up: about 0.3 s)."""

PROMETHEUS_CONFIG = "global:\n  scrape_interval: 1h\nscrape_configs: []\n"
"""A configuration that scrapes nothing: the server only serves the backfilled blocks."""

TEST_SPEC = ClusterSpec.generate(seed=7, services=4, namespaces=2, days=2, step_s=60)
"""The small simulated cluster behind ``sim_prometheus`` (a few containers, 2 days, 60 s)."""

TEST_LABELS = {"cluster": "sim"}
"""Extra labels written on every series of ``sim_prometheus`` (like an external label)."""


def _binary(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} not found: run scripts/setup (the README's test command installs it)"
    return path


class BackfillError(AssertionError):
    """promtool failed, or stored a different number of samples than were written."""


def _promtool(file: Path, out_dir: Path) -> int:
    proc = subprocess.run(
        [
            _binary("promtool"),
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            "--max-block-duration=1000h",
            str(file),
            str(out_dir),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise BackfillError(f"promtool failed on {file} ({proc.returncode}): {proc.stderr[-2000:]}")
    samples = 0
    for line in proc.stdout.splitlines():
        cells = line.split()
        if len(cells) >= 8 and re.fullmatch(r"[0-9A-Z]{26}", cells[0]):
            samples += int(cells[-4])
    return samples


def backfill(
    files: Sequence[Path], data_dir: Path, *, expected_samples: int | None = None, workers: int = 2
) -> int:
    """Turn OpenMetrics ``files`` into TSDB blocks inside ``data_dir``; return samples stored."""
    data_dir.mkdir(parents=True, exist_ok=True)
    outs = [data_dir.parent / f".blocks-{i}-{file.name}" for i, file in enumerate(files)]
    for out in outs:
        shutil.rmtree(out, ignore_errors=True)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        counts = list(pool.map(_promtool, files, outs))
    for out in outs:
        for block in out.iterdir():
            shutil.move(str(block), str(data_dir / block.name))
        out.rmdir()
    stored = sum(counts)
    if expected_samples is not None and stored != expected_samples:
        raise BackfillError(f"promtool stored {stored} samples, {expected_samples} were written")
    return stored


@dataclass
class RunningPrometheus:
    """A Prometheus server started by ``start_prometheus``; ``url`` has no trailing slash."""

    url: str
    process: subprocess.Popen[bytes]
    data_dir: Path
    log_path: Path
    extra: dict[str, object] = field(default_factory=dict)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def __enter__(self) -> RunningPrometheus:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_prometheus(data_dir: Path, *, workdir: Path | None = None) -> RunningPrometheus:
    """Start ``prometheus`` on 127.0.0.1 (OS-chosen port) over ``data_dir``; wait until ready."""
    workdir = workdir or data_dir.parent
    config = workdir / "prometheus.yml"
    config.write_text(PROMETHEUS_CONFIG)
    log_path = workdir / "prometheus.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        [
            _binary("prometheus"),
            f"--config.file={config}",
            f"--storage.tsdb.path={data_dir}",
            "--storage.tsdb.retention.time=100y",
            "--web.listen-address=127.0.0.1:0",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    deadline = time.monotonic() + READY_TIMEOUT_S
    url = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"prometheus exited early:\n{log_path.read_text()[-3000:]}")
        if url is None:
            found = re.search(
                r'msg="Listening on" address=(127\.0\.0\.1:\d+)', log_path.read_text()
            )
            url = f"http://{found.group(1)}" if found else None
        if url is not None:
            try:
                if requests.get(url + "/-/ready", timeout=2).status_code == 200:
                    return RunningPrometheus(url, process, data_dir, log_path)
            except requests.ConnectionError:
                pass
        time.sleep(0.05)
    process.kill()
    raise AssertionError(f"prometheus not ready in {READY_TIMEOUT_S} s:\n{log_path.read_text()}")


@contextmanager
def prometheus_from_cluster(
    cluster: SimulatedCluster,
    workdir: Path,
    *,
    labels: Mapping[str, str] | None = None,
    scrapes: Mapping[str, KsmScrape] | None = None,
) -> Iterator[RunningPrometheus]:
    """Write ``cluster`` as OpenMetrics, backfill it and serve it; stop the server on exit.

    With ``scrapes``, the cluster is written once per entry, labelled ``cluster=<name>`` and with
    kube-state-metrics scraped as the entry says, all served by the one server.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    parts = (
        {"history": (dict(labels or {}), None)}
        if scrapes is None
        else {name: ({**(labels or {}), "cluster": name}, ksm) for name, ksm in scrapes.items()}
    )
    files, written = [], 0
    for name, (extra, ksm) in parts.items():
        om = workdir / f"{name}.om"
        with om.open("w", encoding="utf-8") as out:
            written += write_openmetrics(cluster, out, labels=extra, ksm=ksm)
        files.append(om)
    backfill(files, workdir / "data", expected_samples=written)
    for om in files:
        om.unlink()
    with start_prometheus(workdir / "data", workdir=workdir) as prom:
        prom.extra["samples"] = written
        yield prom


@pytest.fixture(scope="session")
def sim_cluster() -> SimulatedCluster:
    """The simulated cluster of ``TEST_SPEC``."""
    return simulate(TEST_SPEC)


@pytest.fixture(scope="session")
def sim_prometheus(
    sim_cluster: SimulatedCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningPrometheus]:
    """A real Prometheus serving ``sim_cluster`` with ``TEST_LABELS`` on every series."""
    with prometheus_from_cluster(
        sim_cluster, tmp_path_factory.mktemp("prometheus"), labels=TEST_LABELS
    ) as prom:
        yield prom
