"""Argo Rollouts, DaemonSets, KEDA ScaledObjects, CronJobs and Jobs end to end: the demo shop
plus a canary Rollout with its HPA, a Rollout running a Deployment's template, a DaemonSet, a
Deployment a ScaledObject scales on cpu, memory, prometheus and cron triggers and one scaled on
kafka alone (or a CronJob and a bare Job), simulated with kube-state-metrics' owner chains
(Rollout -> ReplicaSets -> pods, DaemonSet -> pods, KEDA's ``keda-hpa-<name>``, CronJob -> Jobs
-> pods), served by a real Prometheus, proposed by ``tortoise-bot run`` to the GitHub emulator
and listed on the dashboard."""

from __future__ import annotations

import dataclasses
import json
import shutil
from datetime import UTC, datetime

import pytest

from bot.demo.spec import DEMO_LABELS, demo_cluster, demo_spec
from bot.model import MIB
from bot.sim.spec import ClusterSpec, ContainerSpec, HpaMetric, HpaSpec, JobRuns, ServiceSpec
from tests.e2e.test_run import DEMO_REPO, TOKEN, _bot_config, _files, _run
from tests.support.prometheus import prometheus_from_cluster

KINDS = DEMO_REPO.parents[2] / "tests" / "manifests" / "kinds" / "base"
KEDA = DEMO_REPO.parents[2] / "tests" / "manifests" / "keda" / "base"
JOBS = DEMO_REPO.parents[2] / "tests" / "manifests" / "jobs" / "base"


def _container(name: str, cpu: float, memory_mib: int, limit_mib: int) -> ContainerSpec:
    return ContainerSpec(
        name=name,
        cpu_request_cores=cpu,
        memory_request_bytes=memory_mib * MIB,
        cpu_share_fraction=1.0,
        cpu_floor_cores=0.005,
        memory_base_bytes=memory_mib * MIB // 3,
        memory_load_bytes=20 * MIB,
        memory_limit_bytes=limit_mib * MIB,
    )


def _spec() -> ClusterSpec:
    """The demo cluster with the services of ``tests/manifests/kinds/base`` (``checkout``
    renamed ``payments``, the demo has a ``checkout``), all over-provisioned."""
    payments = ServiceSpec(
        "payments",
        "shop",
        "Rollout",
        (_container("payments", 0.5, 512, 1024),),
        3,
        hpa=HpaSpec(3, 12, 70),
        peak_cores=0.9,
        rollouts_per_week=5.0,
    )
    catalog = ServiceSpec(
        "catalog", "shop", "Rollout", (_container("catalog", 0.25, 256, 512),), 4, peak_cores=0.3
    )
    shipper = ServiceSpec(
        "log-shipper",
        "shop",
        "DaemonSet",
        (_container("shipper", 0.2, 128, 256),),
        3,
        peak_cores=0.15,
        rollouts_per_week=2.0,
    )
    web = ServiceSpec(
        "web",
        "shop",
        "Deployment",
        (_container("web", 0.5, 256, 512), _container("proxy", 0.1, 64, 128)),
        2,
        hpa=HpaSpec(2, 20, 60, (HpaMetric(60),), keda="web-scaler"),
        peak_cores=2.0,
    )
    worker = ServiceSpec(
        "worker", "shop", "Deployment", (_container("worker", 0.25, 128, 256),), 1, peak_cores=0.1
    )
    spec = demo_spec()
    services = (*spec.services, payments, catalog, shipper, web, worker)
    return dataclasses.replace(spec, services=services)


@pytest.fixture(scope="module")
def kinds_prometheus(tmp_path_factory):
    spec = _spec()
    with prometheus_from_cluster(
        demo_cluster(spec), tmp_path_factory.mktemp("prom"), labels=DEMO_LABELS
    ) as prom:
        prom.extra["now"] = datetime.fromtimestamp(spec.end_s, UTC).isoformat()
        yield prom


def test_run_proposes_for_rollouts_and_daemonsets(cli, tmp_path, kinds_prometheus, github_emulator):
    files = _files(DEMO_REPO)
    for name in ("rollout-canary", "rollout-ref", "daemonset"):
        text = (KINDS / f"{name}.yaml").read_text().replace("checkout", "payments")
        files[f"apps/raw/{name}.yaml"] = text.encode()
    for name in ("web", "worker"):
        files[f"apps/raw/{name}.yaml"] = (KEDA / f"{name}.yaml").read_bytes()
    opt_in = files[".tortoise-bot.yaml"].decode()  # one pull request per new workload
    files[".tortoise-bot.yaml"] = opt_in.replace(
        "  grouping: workload\n", "  grouping: workload\n  max_new_per_run: 10\n"
    ).encode()
    gh = github_emulator
    gh.create_repository("octo", "shop", files)
    gh.add_token(TOKEN, "tortoise-bot")
    config = _bot_config(tmp_path / "bot.yaml", kinds_prometheus.url, gh.api_url)
    now = kinds_prometheus.extra["now"]

    local = tmp_path / "local"
    shutil.copytree(DEMO_REPO, local)
    for path, content in files.items():
        (local / path).write_bytes(content)
    planned = cli(
        "plan", "--repo", str(local), "--config", str(config), "--now", now,
        "--format", "json", "--write",
    )  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    plan = {w["name"]: w for w in json.loads(planned.stdout)["workloads"]}
    for name, kind in (
        ("payments", "Rollout"),
        ("catalog", "Rollout"),
        ("log-shipper", "DaemonSet"),
        ("web", "Deployment"),
        ("worker", "Deployment"),
    ):
        workload = plan[name]
        assert workload["kind"] == kind
        assert workload["status"] == "changes", workload["reasons"]
        codes = {n["code"] for n in workload["notes"]}
        # every pod found through its owners, replicas counted from the pods
        assert not codes & {"no-data", "owner-fallback", "no-replicas", "silent-pods"}, workload[
            "notes"
        ]

    run = _run(cli, config, now)
    assert run.returncode == 0, run.stdout + run.stderr
    pulls = {
        p.pull.head.rsplit("/", 1)[-1]: p for p in gh.pulls("octo/shop", state="open") if p.pull
    }
    bare = gh.repository("octo/shop").git
    for name in ("payments", "catalog", "log-shipper"):
        pull = pulls[name]
        assert pull.pull is not None
        for path in plan[name]["files"]:
            assert bare.read_file(pull.pull.head, path) == (local / path).read_bytes()
    catalog_pull = pulls["catalog"]
    assert catalog_pull.pull is not None
    ref = bare.read_file(catalog_pull.pull.head, "apps/raw/rollout-ref.yaml").decode()
    assert "replicas: 0 # scaled down by Argo Rollouts" in ref  # the Deployment's left alone
    assert r"pods \(one per node\) mean" in (pulls["log-shipper"].body or "")  # the replay
    web_cpu = next(c for c in plan["web"]["containers"] if c["name"] == "web")["cpu"]["request"]
    assert web_cpu["rule"].startswith("tortoise.horizontal")  # moves with its trigger only
    web_body = " ".join((pulls["web"].body or "").split())
    assert "KEDA ScaledObject web-scaler" in web_body
    assert r"also scaled by\: cron, prometheus" in web_body  # Markdown-escaped
    worker_notes = {n["code"]: n["message"] for n in plan["worker"]["notes"]}
    assert "scales it on external triggers (kafka)" in worker_notes["keda-external"]
    assert plan["worker"]["hpa"] is None
    (dashboard,) = gh.issues("octo/shop")
    body = dashboard.body or ""
    for shown in (
        "Rollout/shop/payments",
        "Rollout/shop/catalog",
        "DaemonSet/shop/log-shipper",
        "Deployment/shop/web",
    ):
        assert shown in body
    gh.assert_valid()


def _jobs_spec() -> ClusterSpec:
    """The demo cluster with the CronJob and the Job of ``tests/manifests/jobs/base``, both
    over-provisioned: a 20-minute run every 4 hours, and a Job a generator re-creates every
    8 hours (``reindex-<n>``)."""
    report = ServiceSpec(
        "nightly-report",
        "shop",
        "CronJob",
        (_container("report", 1.0, 2048, 3072),),
        1,
        peak_cores=0.5,
        runs=JobRuns(4 * 3600, 1200),
    )
    reindex = ServiceSpec(
        "reindex",
        "shop",
        "Job",
        (_container("reindex", 0.5, 512, 1024),),
        1,
        peak_cores=0.2,
        runs=JobRuns(8 * 3600, 900),
    )
    spec = demo_spec()
    return dataclasses.replace(spec, services=(*spec.services, report, reindex))


@pytest.fixture(scope="module")
def jobs_prometheus(tmp_path_factory):
    spec = _jobs_spec()
    with prometheus_from_cluster(
        demo_cluster(spec), tmp_path_factory.mktemp("prom"), labels=DEMO_LABELS
    ) as prom:
        prom.extra["now"] = datetime.fromtimestamp(spec.end_s, UTC).isoformat()
        yield prom


def test_run_proposes_for_a_cronjob_and_a_job(cli, tmp_path, jobs_prometheus, github_emulator):
    files = _files(DEMO_REPO)
    for name in ("cronjob", "job"):
        files[f"apps/raw/{name}.yaml"] = (JOBS / f"{name}.yaml").read_bytes()
    gh = github_emulator
    gh.create_repository("octo", "shop", files)
    gh.add_token(TOKEN, "tortoise-bot")
    config = _bot_config(tmp_path / "bot.yaml", jobs_prometheus.url, gh.api_url)
    now = jobs_prometheus.extra["now"]

    local = tmp_path / "local"
    shutil.copytree(DEMO_REPO, local)
    for path, content in files.items():
        (local / path).write_bytes(content)
    planned = cli(
        "plan", "--repo", str(local), "--config", str(config), "--now", now,
        "--format", "json", "--write",
    )  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    plan = {w["name"]: w for w in json.loads(planned.stdout)["workloads"]}
    for name, kind in (("nightly-report", "CronJob"), ("reindex", "Job")):
        workload = plan[name]
        assert workload["kind"] == kind
        assert workload["status"] == "changes", workload["reasons"]
        codes = {n["code"] for n in workload["notes"]}
        # every run found through its owners (pod -> Job -> CronJob), none by name
        assert not codes & {"no-data", "owner-fallback", "no-replicas", "silent-pods"}, codes
        assert "job-runs" in codes
    cronjob = (local / "apps/raw/cronjob.yaml").read_text()
    assert "concurrencyPolicy: Forbid" in cronjob and "# sized for the month-end run" in cronjob

    run = _run(cli, config, now)
    assert run.returncode == 0, run.stdout + run.stderr
    pulls = {
        p.pull.head.rsplit("/", 1)[-1]: p for p in gh.pulls("octo/shop", state="open") if p.pull
    }
    bare = gh.repository("octo/shop").git
    for name in ("nightly-report", "reindex"):
        pull = pulls[name]
        assert pull.pull is not None
        for path in plan[name]["files"]:
            assert bare.read_file(pull.pull.head, path) == (local / path).read_bytes()
    body = pulls["nightly-report"].body or ""
    # the demo's 8 days, a run every 4 hours (Markdown-escaped in the body)
    assert r"CronJob nightly-report\: sized on 48 runs \(p95 of runs' peaks\: report cpu" in body
    assert "| CPU request | 1 → " in body and "runs' p95 peak" in body
    assert "CPU minutes over request, in the runs" in body and "replicas mean" not in body
    (dashboard,) = gh.issues("octo/shop")
    for shown in ("CronJob/shop/nightly-report", "Job/shop/reindex"):
        assert shown in (dashboard.body or "")
    gh.assert_valid()
