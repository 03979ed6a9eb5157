"""Raw YAML discovery: workloads, init containers, HPA/VPA/Tortoise linking, locations."""

from __future__ import annotations

from bot.config.repo import RepoConfig
from bot.manifests import discover
from tests.manifests.conftest import edit, workload
from tests.manifests.test_editor import DEPLOYMENT

VPA = """\
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata: {name: web-vpa, namespace: shop}
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  updatePolicy: {updateMode: "Off"}
  resourcePolicy:
    containerPolicies:
      - containerName: app
        minAllowed: {cpu: 50m, memory: 64Mi}
        maxAllowed: {cpu: "2", memory: 4Gi}
        controlledResources: [cpu]
        controlledValues: RequestsOnly
      - containerName: "*"
        mode: "Off"
"""
TORTOISE = """\
apiVersion: autoscaling.mercari.com/v1beta3
kind: Tortoise
metadata: {{name: web, namespace: shop}}
spec:
  updateMode: {mode}
  targetRefs:
    scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: {name}}}
"""
STATEFULSET = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  replicas: 1
  template:
    spec:
      initContainers:
        - name: migrate
          resources: {requests: {cpu: "1", memory: 1G}}
      containers:
        - name: pg
          resources:
            limits: {memory: 2147483648}
"""


def test_workloads_containers_and_locations(repo):
    root = repo({"apps/web.yaml": DEPLOYMENT, "apps/db.yaml": STATEFULSET})
    inventory = discover(root, RepoConfig()).inventory
    assert inventory.environments == ("default",)
    assert not inventory.errors
    web = workload(inventory, "web")
    assert str(web.ref) == "Deployment/shop/web@default"
    assert web.replicas == 3 and web.locations["replicas"].line == 8
    app = web.container("app")
    assert app.requests.cpu_cores == 0.25 and app.requests.memory_bytes == 512 * 2**20
    assert app.limits.memory_bytes == 2**30 and app.limits.cpu_cores is None
    where = app.locations["requests.cpu"]
    assert (where.file, where.line, where.document) == ("apps/web.yaml", 16, 0)
    assert where.yaml_path == (
        "spec",
        "template",
        "spec",
        "containers",
        0,
        "resources",
        "requests",
        "cpu",
    )
    db = workload(inventory, "db")
    assert db.ref.kind == "StatefulSet"
    migrate, pg = db.containers
    assert (
        migrate.init
        and migrate.requests.cpu_cores == 1.0
        and migrate.requests.memory_bytes == 10**9
    )
    assert not pg.init and pg.limits.memory_bytes == 2**31
    assert db.files == ("apps/db.yaml",)


def test_vpa_and_tortoise_are_linked(repo):
    root = repo(
        {
            "web.yaml": DEPLOYMENT,
            "vpa.yaml": VPA,
            "tortoise.yaml": TORTOISE.format(mode="Auto", name="web"),
            "other.yaml": DEPLOYMENT.replace("name: web ", "name: calm "),
            "calm-tortoise.yaml": TORTOISE.format(mode="Off", name="calm").replace(
                "name: web,", "name: calm,"
            ),
        }
    )
    inventory = discover(root, RepoConfig()).inventory
    assert not inventory.errors, inventory.errors
    web = workload(inventory, "web")
    assert web.managed_by_tortoise
    assert not workload(inventory, "calm").managed_by_tortoise
    assert web.vpa is not None and web.vpa.name == "web-vpa" and web.vpa.update_mode == "Off"
    app, rest = web.vpa.container_policies
    assert app.container == "app" and app.controlled_resources == ("cpu",)
    assert app.min_allowed.cpu_cores == 0.05 and app.max_allowed.memory_bytes == 4 * 2**30
    assert app.controlled_values == "RequestsOnly"
    assert rest.container == "*" and rest.mode == "Off"
    assert web.vpa.locations["app.maxAllowed.memory"].file == "vpa.yaml"
    assert web.vpa.locations["app.maxAllowed.memory"].line == 11
    assert set(web.vpa.locations) == {
        "app.minAllowed.cpu",
        "app.minAllowed.memory",
        "app.maxAllowed.cpu",
        "app.maxAllowed.memory",
    }
    assert set(web.files) == {"web.yaml", "vpa.yaml", "tortoise.yaml"}


def test_invalid_quantity_is_reported_with_its_line(repo):
    root = repo({"web.yaml": DEPLOYMENT.replace("memory: 512Mi", "memory: lots")})
    inventory = discover(root, RepoConfig()).inventory
    web = workload(inventory, "web")
    assert web.container("app").requests.memory_bytes is None
    assert [(e.file, e.line) for e in inventory.errors] == [("web.yaml", 17)]
    assert "not a valid value: 'lots'" in inventory.errors[0].message


def test_excluded_paths_and_non_kubernetes_yaml(repo):
    root = repo(
        {
            "web.yaml": DEPLOYMENT,
            "vendor/web.yaml": DEPLOYMENT.replace("name: web ", "name: vendored "),
            ".github/workflows/ci.yml": "on: push\njobs: {}\n",
            "notes.txt": "not yaml: [",
        }
    )
    config = RepoConfig.model_validate({"paths": {"exclude": ["vendor/**"]}})
    inventory = discover(root, config).inventory
    assert [w.ref.name for w in inventory.workloads] == ["web"]
    assert not inventory.errors


def test_autoscaling_v1_hpa(repo):
    hpa = """\
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 6
  targetCPUUtilizationPercentage: 70 # old style
"""
    root = repo({"web.yaml": DEPLOYMENT, "hpa.yaml": hpa})
    web = workload(discover(root, RepoConfig()).inventory, "web")
    assert web.hpa is not None and web.hpa.min_replicas is None and web.hpa.max_replicas == 6
    assert [(t.resource, t.utilization_percent) for t in web.hpa.targets] == [("cpu", 70)]
    result = edit(root, [("web", "hpa.target.cpu", 60, "app"), ("web", "hpa.minReplicas", 2, None)])
    assert not result.errors, result.errors
    assert (root / "hpa.yaml").read_text() == hpa.replace(
        "70 # old", "60 # old"
    ) + "  minReplicas: 2\n"
