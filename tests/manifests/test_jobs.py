"""CronJobs and bare Jobs: discovered in raw YAML, Kustomize and Helm values, their containers
(in a CronJob's ``spec.jobTemplate.spec.template``) edited where written, comments kept;
vertical only (no replicas, an HPA on one is an error at its line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config.errors import ConfigError
from bot.config.load import parse_model
from bot.config.manifests import HelmWorkloadMapping
from bot.config.repo import RepoConfig, load_repo_config
from bot.manifests import discover
from bot.model import FieldId
from tests.manifests.conftest import changed_lines, edit, kustomize_tree, raw_base, workload

JOBS = Path(__file__).parent / "jobs"
"""Hand-made manifests: a public-style CronJob (``concurrencyPolicy``, history limits, an init
container, comments on its resources) and a bare Job (``base/``), and an ``init-db`` overlay
adding three Jobs and patching the CronJob's ``jobTemplate`` containers."""


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    """The hand-made manifests as raw YAML (the base directory alone)."""
    return raw_base(JOBS, tmp_path)


@pytest.fixture
def overlay(tmp_path: Path) -> Path:
    """The hand-made manifests as a Kustomize base and the ``init-db`` overlay."""
    return kustomize_tree(JOBS, tmp_path)


def test_raw_yaml_lists_a_cronjob_and_a_job_without_replicas(raw):
    inventory = discover(raw, RepoConfig()).inventory
    assert not inventory.errors
    assert {w.ref.name: w.ref.kind for w in inventory.workloads} == {
        "nightly-report": "CronJob",
        "reindex": "Job",
    }
    report = workload(inventory, "nightly-report")
    assert (report.replicas, report.hpa) == (None, None)
    assert FieldId.REPLICAS not in report.locations
    main = report.container("report")
    assert (main.requests.cpu_cores, main.requests.memory_bytes) == (1.0, 2 * 2**30)
    assert main.limits.memory_bytes == 3 * 2**30
    assert main.locations[FieldId.REQUESTS_CPU].line == 36
    fetch = report.container("fetch")
    assert fetch.init and fetch.requests.cpu_cores == 0.05
    assert workload(inventory, "reindex").container("reindex").requests.cpu_cores == 0.5


def test_edits_land_in_the_job_template_with_comments_kept(raw):
    result = edit(
        raw,
        [
            ("nightly-report", "requests.cpu", 0.6, "report"),
            ("nightly-report", "limits.memory", 2 * 2**30, "report"),
            ("reindex", "requests.memory", 768 * 2**20, "reindex"),
        ],
    )
    assert not result.errors, result.errors
    removed, added = changed_lines(result.diff)
    # the value's style (a quoted number of cores) is kept
    assert '                  cpu: "0.6" # the aggregation is single-threaded' in added
    assert "                  memory: 2Gi # the CSV export buffers everything" in added
    assert "              memory: 768Mi" in added
    assert len(removed) == len(added) == 3
    text = (raw / "cronjob.yaml").read_text()
    assert "# sized for the month-end run" in text and "concurrencyPolicy: Forbid" in text
    after = discover(raw, RepoConfig()).inventory
    assert workload(after, "nightly-report").container("report").requests.cpu_cores == 0.6


@pytest.mark.parametrize(
    ("kind", "name", "line"),
    [("CronJob", "nightly-report", 9), ("Job", "reindex", 9)],
)
def test_hpa_on_a_job_kind_is_an_error_at_its_line(raw, kind, name, line):
    (raw / "hpa.yaml").write_text(
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n"
        f"  name: {name}\n  namespace: shop\nspec:\n  scaleTargetRef:\n"
        f"    apiVersion: batch/v1\n    kind: {kind}\n    name: {name}\n"
        "  maxReplicas: 3\n"
    )
    inventory = discover(raw, RepoConfig()).inventory
    (error,) = inventory.errors
    assert (error.file, error.line) == ("hpa.yaml", line)
    assert f"a {kind} runs pods to completion" in error.message
    assert workload(inventory, name).hpa is None
    assert len(inventory.workloads) == 2


def test_a_cronjob_of_another_api_group_is_not_a_workload(raw):
    (raw / "other.yaml").write_text(
        "apiVersion: example.com/v1\nkind: CronJob\nmetadata:\n  name: x\nspec: {}\n"
    )
    assert len(discover(raw, RepoConfig()).inventory.workloads) == 2


def test_kustomize_overlay_with_three_jobs_and_a_job_template_patch(overlay):
    inventory = discover(overlay, RepoConfig()).inventory
    assert not inventory.errors
    env = "overlays/init-db"
    kinds = {w.ref.name: w.ref.kind for w in inventory.workloads if w.ref.environment == env}
    assert kinds == {
        "nightly-report": "CronJob",
        "reindex": "Job",
        "init-db-schema": "Job",
        "init-db-seed": "Job",
        "init-db-grants": "Job",
    }
    report = workload(inventory, "nightly-report", env).container("report")
    assert report.requests.memory_bytes == 4 * 2**30  # the overlay's patch
    assert report.requests.cpu_cores == 1.0  # the base's
    result = edit(
        overlay,
        [
            ("nightly-report", "requests.memory", 3 * 2**30, "report"),
            ("nightly-report", "requests.cpu", 0.7, "report"),
            ("init-db-seed", "requests.cpu", 0.5, "seed"),
        ],
        environment=env,
    )
    assert not result.errors, result.errors
    patch = (overlay / "overlays/init-db/report.yaml").read_text()
    assert "memory: 3Gi # a fresh database has no summary tables yet" in patch
    assert "cpu: 500m # loads the fixtures" in (overlay / "overlays/init-db/jobs.yaml").read_text()
    assert 'cpu: "1" # the aggregation' in (overlay / "base/cronjob.yaml").read_text()
    after = discover(overlay, RepoConfig()).inventory
    edited = workload(after, "nightly-report", env).container("report")
    assert (edited.requests.cpu_cores, edited.requests.memory_bytes) == (0.7, 3 * 2**30)


def test_helm_mapping_of_a_cronjob_refuses_replica_paths():
    assert HelmWorkloadMapping(kind="CronJob", name="report").kind == "CronJob"
    with pytest.raises(ConfigError) as caught:
        parse_model(
            "kind: CronJob\nname: report\nresources: report.resources\nreplicas: report.n\n",
            HelmWorkloadMapping,
            file=".tortoise-bot.yaml",
        )
    assert "a CronJob runs pods to completion" in str(caught.value)
    assert "replicas" in str(caught.value)


def test_helm_values_declare_a_cronjob_and_a_job(tmp_path):
    chart = tmp_path / "repo" / "charts" / "shop"
    chart.mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: shop\nversion: 1.0.0\n")
    (chart / "values.yaml").write_text(
        "report:\n  schedule: '0 3 * * *'\n  resources:\n    requests:\n"
        "      cpu: 400m # nightly\n      memory: 1Gi\n"
        "migrate:\n  resources:\n    requests:\n      cpu: 100m\n"
    )
    (tmp_path / "repo" / ".tortoise-bot.yaml").write_text(
        "helm:\n  - chart: charts/shop\n    namespace: shop\n    workloads:\n"
        "      - {kind: CronJob, name: report, resources: report.resources}\n"
        "      - {kind: Job, name: migrate, resources: migrate.resources}\n"
    )
    root = tmp_path / "repo"
    config = load_repo_config(root)
    inventory = discover(root, config).inventory
    assert not inventory.errors
    report, migrate = workload(inventory, "report"), workload(inventory, "migrate")
    assert (report.ref.kind, report.replicas, report.hpa) == ("CronJob", None, None)
    assert migrate.ref.kind == "Job"
    result = edit(root, [("report", "requests.cpu", 0.25, "report")], config=config)
    assert not result.errors
    assert "      cpu: 250m # nightly" in changed_lines(result.diff)[1]


def test_a_jobs_labels_are_read_for_grouping_its_runs(raw):
    """A Job's metadata labels with its pod template's over them (``job_grouping_labels``)."""
    job = raw / "job.yaml"
    text = job.read_text().replace(
        "  namespace: shop\n",
        "  namespace: shop\n  labels: {app: search, team: search, replicas: 3}\n",
    )
    job.write_text(
        text.replace("    spec:\n", "    metadata:\n      labels: {app: reindex}\n    spec:\n", 1)
    )
    inventory = discover(raw, RepoConfig()).inventory
    assert not inventory.errors
    assert workload(inventory, "reindex").labels == {"app": "reindex", "team": "search"}
