"""``tortoise-bot doctor`` and the plan's diagnosis, against a real Prometheus: a missing
family, relabelled labels and a ``cluster`` selector that matches nothing each get named with
their fix; a Prometheus that has everything exits 0."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.cli import main
from bot.sim import SimulatedCluster, write_manifests, write_openmetrics
from tests.support.prometheus import (
    TEST_LABELS,
    TEST_SPEC,
    RunningPrometheus,
    backfill,
    start_prometheus,
)

FAMILIES_BUT_MEMORY = (
    "container_cpu_usage_seconds_total",
    "kube_pod_container_status_restarts_total",
    "kube_pod_container_status_last_terminated_reason",
    "kube_pod_container_resource_requests",
    "kube_pod_owner",
    "kube_replicaset_owner",
    "kube_deployment_status_replicas",
    "kube_statefulset_status_replicas",
)
"""What the broken Prometheus serves: no working set."""


def _iso(unix_s: float) -> str:
    return datetime.fromtimestamp(unix_s, UTC).isoformat()


@pytest.fixture(scope="module")
def broken_prometheus(
    sim_cluster: SimulatedCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningPrometheus]:
    """The simulated cluster without ``container_memory_working_set_bytes``, and with cAdvisor's
    ``container`` label relabelled to ``container_name`` (as before Kubernetes 1.16)."""
    work = tmp_path_factory.mktemp("broken")
    om = work / "broken.om"
    with om.open("w", encoding="utf-8") as out:
        written = write_openmetrics(
            sim_cluster, out, labels=TEST_LABELS, families=FAMILIES_BUT_MEMORY
        )
    cpu = "container_cpu_usage_seconds_total{"
    lines = om.read_text().splitlines(keepends=True)
    renamed = [
        line.replace('container="', 'container_name="') if line.startswith(cpu) else line
        for line in lines
    ]
    assert renamed != lines
    om.write_text("".join(renamed))
    backfill([om], work / "data", expected_samples=written)
    with start_prometheus(work / "data", workdir=work) as prom:
        yield prom


@pytest.fixture
def repo(tmp_path: Path):
    """The simulated cluster's manifests with an opt-in file whose one environment selects
    ``selector``; None: no opt-in file."""

    def make(selector: dict[str, str] | None = None) -> Path:
        root = tmp_path / "repo"
        write_manifests(TEST_SPEC, root)
        if selector is not None:
            pairs = ", ".join(f"{k}: {v}" for k, v in selector.items())
            (root / ".tortoise-bot.yaml").write_text(
                f"environments:\n  - name: default\n    selector: {{{pairs}}}\n"
            )
        return root

    return make


@pytest.fixture
def doctor(sim_cluster, capsys):
    """``tortoise-bot doctor ARGS --now <end of the history>``: (exit code, stdout, stderr)."""

    def run(*args: str, now_s: float | None = None) -> tuple[int, str, str]:
        now = now_s if now_s is not None else float(sim_cluster.t_s[-1])
        code = main(["doctor", *args, "--now", _iso(now)])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def _json(out: str) -> dict:
    return json.loads(out)


def test_everything_present_exits_0_with_each_family_and_its_scrape_interval(
    sim_prometheus, repo, doctor
):
    code, out, _ = doctor(
        "--repo", str(repo({"cluster": "sim"})), "--prometheus", sim_prometheus.url
    )
    assert code == 0, out
    assert "every metric the bot reads is there" in out
    assert all(len(line) <= 80 for line in out.splitlines()), out
    code, out, _ = doctor(
        "--repo", str(repo({"cluster": "sim"})), "--prometheus", sim_prometheus.url,
        "--format", "json",
    )  # fmt: skip
    document = _json(out)
    assert code == 0 and document["ok"] is True
    by_metric = {f["metric"]: f for f in document["families"]}
    cpu = by_metric["container_cpu_usage_seconds_total"]
    assert cpu["status"] == "ok" and cpu["scrape_interval_s"] == TEST_SPEC.step_s
    assert cpu["environments"] == {"default": cpu["series"]} and cpu["series"] > 0
    assert {"namespace", "pod", "container"} <= set(cpu["labels_seen"])
    assert "kube_statefulset_status_replicas" in by_metric  # the repository has StatefulSets


def test_a_selector_that_matches_no_cluster_names_the_clusters_seen(sim_prometheus, repo, doctor):
    code, out, _ = doctor(
        "--repo", str(repo({"cluster": "prod"})), "--prometheus", sim_prometheus.url
    )
    assert code == 1
    assert all(len(line) <= 80 for line in out.splitlines()), out
    flat = " ".join(out.split())
    assert 'error [default]: cluster="prod" matches 0 series; cluster values seen: sim' in flat
    assert "environments[].selector" in flat
    document = _json(
        doctor(
            "--repo", str(repo({"cluster": "prod"})), "--prometheus", sim_prometheus.url,
            "--format", "json",
        )[1]
    )  # fmt: skip
    cpu = next(f for f in document["families"] if f["metric"].startswith("container_cpu"))
    assert cpu["status"] == "error" and cpu["environments"] == {"default": 0}


def test_a_missing_family_and_a_relabelled_label_are_named_with_their_fix(
    broken_prometheus, repo, doctor
):
    code, out, _ = doctor("--repo", str(repo()), "--prometheus", broken_prometheus.url)
    assert code == 1
    flat = " ".join(out.split())
    assert "container_memory_working_set_bytes" in flat and "no series (memory)" in flat
    assert "series carry `container_name`, not `container`" in flat
    assert "prometheus.labels.container: container_name" in flat
    document = _json(
        doctor("--repo", str(repo()), "--prometheus", broken_prometheus.url, "--format", "json")[1]
    )
    by_metric = {f["metric"]: f for f in document["families"]}
    memory = by_metric["container_memory_working_set_bytes"]
    assert memory["status"] == "error" and memory["series"] == 0
    cpu = by_metric["container_cpu_usage_seconds_total"]
    assert cpu["status"] == "error" and "container_name" in cpu["labels_seen"]
    assert by_metric["kube_pod_owner"]["status"] == "ok"  # the rest is fine


def test_no_series_at_all_and_a_stopped_scrape_are_told_apart(sim_prometheus, sim_cluster, doctor):
    end = float(sim_cluster.t_s[-1])
    code, out, _ = doctor("--prometheus", sim_prometheus.url, now_s=end + 3 * 86400)
    assert code == 1
    assert "series in the last 14 days but none in the last 1 h" in " ".join(out.split())
    code, out, _ = doctor("--prometheus", sim_prometheus.url, now_s=end + 60 * 86400)
    assert code == 1
    flat = " ".join(out.split())
    assert "holds no series of any metric the bot reads" in flat and "X-Scope-OrgID" in flat


def test_no_answer_exits_1_with_one_line(doctor, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = tmp_path / "bot.yaml"
    settings.write_text("prometheus:\n  retries: 0\n  connect_timeout_s: 1\n")
    code, out, err = doctor("--config", str(settings), "--prometheus", f"http://127.0.0.1:{port}")
    assert code == 1 and out == ""
    assert f"no answer from http://127.0.0.1:{port}" in err


def test_plan_prints_the_diagnosis_when_every_workload_lacks_data(
    sim_prometheus, sim_cluster, repo, capsys
):
    now = _iso(float(sim_cluster.t_s[-1]))
    root = repo({"cluster": "prod"})
    code = main(["plan", "--repo", str(root), "--prometheus", sim_prometheus.url, "--now", now])
    out, err = capsys.readouterr()
    assert "gathering-data" in out
    flat = " ".join(err.split())
    assert "every workload lacks data" in flat
    assert 'cluster="prod" matches 0 series; cluster values seen: sim' in flat
    assert code in (0, 1)
    root = repo({"cluster": "sim"})
    main(["plan", "--repo", str(root), "--prometheus", sim_prometheus.url, "--now", now])
    assert "tortoise-bot doctor" not in capsys.readouterr().err
