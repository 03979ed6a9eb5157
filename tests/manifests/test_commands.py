"""`tortoise-bot validate` and `tortoise-bot set` through the installed console script."""

from __future__ import annotations

import json

import jsonschema  # type: ignore[import-untyped]

from bot.commands.set_values import parse_assignment
from tests.conftest import PROJECT
from tests.manifests.conftest import snapshot
from tests.manifests.test_discover import TORTOISE, VPA
from tests.manifests.test_editor import DEPLOYMENT

SCHEMA = json.loads((PROJECT / "docs" / "schemas" / "inventory.schema.json").read_text())
HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics:
    - type: ContainerResource
      containerResource: {name: cpu, container: app, target: {type: Utilization, averageUtilization: 60}}
"""


def test_validate_json_matches_the_schema_on_the_corpus(cli, shared_manifests):
    done = cli("validate", str(shared_manifests), "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    jsonschema.validate(data, SCHEMA)
    assert "podinfo/deploy/overlays/production" in data["environments"]
    frontend = next(
        w
        for w in data["workloads"]
        if w["name"] == "frontend" and w["environment"] == "podinfo/deploy/overlays/production"
    )
    assert frontend["namespace"] == "production"
    assert frontend["containers"][0]["requests"] == {"cpu": 0.1, "memory": 32 * 2**20}
    assert frontend["containers"][0]["locations"]["requests.cpu"] == {
        "file": "podinfo/deploy/bases/frontend/deployment.yaml",
        "line": 72,
    }
    assert frontend["hpa"]["maxReplicas"] == 4


def test_validate_reports_every_error_with_file_and_line(cli, repo):
    root = repo(
        {
            "web.yaml": DEPLOYMENT,
            "broken.yaml": "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: [1, 2\n",
            ".tortoise-bot.yaml": "paths:\n  includ: ['**/*.yaml']\n",
        }
    )
    done = cli("validate", str(root), "--format", "json")
    assert done.returncode == 2
    data = json.loads(done.stdout)
    jsonschema.validate(data, SCHEMA)
    assert [w["name"] for w in data["workloads"]] == ["web"]
    errors = {(e["file"], e["line"]) for e in data["errors"]}
    assert (".tortoise-bot.yaml", 2) in errors
    assert any(f == "broken.yaml" and line >= 4 for f, line in errors)
    table = cli("validate", str(root))
    assert "warning: broken.yaml:" in table.stdout and "Deployment/shop/web@default" in table.stdout


def test_validate_checks_the_settings_whichever_workload_they_meet(cli, repo):
    opt_in = "workloads:\n  - match: no/such/workload\n    min_allocated: {app: {memory: plenty}}\n"
    root = repo({"web.yaml": DEPLOYMENT, ".tortoise-bot.yaml": opt_in})
    done = cli("validate", str(root))
    assert done.returncode == 2, done.stdout
    assert "error: .tortoise-bot.yaml:3: workloads.0.min_allocated.app.memory: " in done.stdout
    assert "Deployment/shop/web@default" in done.stdout  # the manifests are still listed


def test_set_prints_the_diff_and_writes(cli, repo):
    root = repo({"web.yaml": DEPLOYMENT, "hpa.yaml": HPA})
    done = cli(
        "set",
        "--repo",
        str(root),
        "--write",
        "deployment/shop/web",
        "app.requests.cpu=0.4",
        "app.limits.memory=2Gi",
        "hpa.maxReplicas=12",
        "hpa.app.cpu=75",
    )
    assert done.returncode == 0, done.stderr
    assert '+              cpu: "400m"     # measured 2024-05' in done.stdout
    assert "+              memory: '2Gi'" in done.stdout
    assert "+  maxReplicas: 12" in done.stdout
    assert (root / "hpa.yaml").read_text() == HPA.replace(
        "maxReplicas: 10", "maxReplicas: 12"
    ).replace("averageUtilization: 60", "averageUtilization: 75")
    assert sorted(line for line in done.stderr.splitlines() if line.startswith("wrote ")) == [
        "wrote hpa.yaml",
        "wrote web.yaml",
    ]


def test_set_writes_only_with_write(cli, repo):
    root = repo({"web.yaml": DEPLOYMENT})
    before = snapshot(root)
    done = cli("set", "--repo", str(root), "Deployment/web", "app.requests.memory=1Gi")
    assert done.returncode == 0, done.stderr
    assert "+              memory: 1Gi" in done.stdout
    assert snapshot(root) == before
    assert "nothing written (1 file would change): set writes only with --write" in done.stderr
    both = cli("set", "--repo", str(root), "--write", "--dry-run", "Deployment/web", "replicas=2")
    assert both.returncode == 2 and snapshot(root) == before


def test_set_dry_run_writes_nothing(cli, repo):
    root = repo({"web.yaml": DEPLOYMENT})
    before = snapshot(root)
    done = cli("set", "--repo", str(root), "--dry-run", "Deployment/web", "app.requests.memory=1Gi")
    assert done.returncode == 0, done.stderr
    assert "+              memory: 1Gi" in done.stdout
    assert snapshot(root) == before


def test_set_refuses_unknown_workload_container_and_hpa(cli, repo):
    root = repo({"web.yaml": DEPLOYMENT})
    before = snapshot(root)
    missing = cli("set", "--repo", str(root), "Deployment/shop/nope", "app.requests.cpu=1")
    assert missing.returncode == 1 and "no Deployment shop/nope" in missing.stderr
    container = cli("set", "--repo", str(root), "Deployment/web", "sidecar.requests.cpu=1")
    assert container.returncode == 1 and "no container 'sidecar'" in container.stderr
    hpa = cli("set", "--repo", str(root), "Deployment/web", "hpa.minReplicas=3")
    assert hpa.returncode == 1 and "no HorizontalPodAutoscaler" in hpa.stderr
    bad = cli("set", "--repo", str(root), "Deployment/web", "app.requests.cpu=lots")
    assert bad.returncode == 2 and "bad value" in bad.stderr
    assert snapshot(root) == before


def test_parse_assignment_table():
    assert parse_assignment("app.requests.cpu=250m") == ("requests.cpu", "app", 0.25)
    assert parse_assignment("my.app.limits.memory=1Gi") == ("limits.memory", "my.app", 2**30)
    assert parse_assignment("app.limits.cpu=none") == ("limits.cpu", "app", None)
    assert parse_assignment("hpa.minReplicas=3") == ("hpa.minReplicas", None, 3)
    assert parse_assignment("hpa.app.memory=80") == ("hpa.target.memory", "app", 80)
    assert parse_assignment("replicas=4") == ("replicas", None, 4)


def test_set_needs_the_environment_when_a_workload_is_in_several(cli, shared_manifests):
    done = cli(
        "set",
        "--repo",
        str(shared_manifests),
        "--dry-run",
        "Deployment/frontend",
        "frontend.requests.cpu=1",
    )
    assert done.returncode == 1
    assert "matches several workloads" in done.stderr and "pass --environment" in done.stderr
    one = cli(
        "set",
        "--repo",
        str(shared_manifests),
        "--dry-run",
        "--environment",
        "podinfo/deploy/overlays/staging",
        "Deployment/frontend",
        "frontend.requests.cpu=1",
    )
    assert one.returncode == 0, one.stderr
    assert "+++ b/podinfo/deploy/overlays/staging/tortoise-bot-patch.yaml" in one.stdout
    assert "note: " in one.stderr and "shared base" in one.stderr


def test_validate_json_with_vpa_and_tortoise_matches_the_schema(cli, repo):
    root = repo(
        {
            "web.yaml": DEPLOYMENT,
            "vpa.yaml": VPA,
            "t.yaml": TORTOISE.format(mode="Auto", name="web"),
        }
    )
    done = cli("validate", str(root), "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    jsonschema.validate(data, SCHEMA)
    (web,) = data["workloads"]
    assert web["managedByTortoise"] is True
    assert web["vpa"]["locations"]["app.minAllowed.cpu"] == {"file": "vpa.yaml", "line": 10}
