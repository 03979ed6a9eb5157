"""Kustomize overlays: per-overlay inventory as kubectl renders it, edits into the right file."""

from __future__ import annotations

import textwrap

from bot.config.repo import RepoConfig
from bot.manifests import PATCH_FILE, discover
from tests.conftest import require_binary
from tests.manifests.conftest import changed_lines, edit, snapshot, workload

BASE_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: api
        image: api:1
        resources:
          requests:
            cpu: 100m # base
            memory: 128Mi
          limits:
            memory: 256Mi
"""
BASE_HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: api
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: api
  minReplicas: 2
  maxReplicas: 5
  metrics:
  - type: Resource
    resource:
      name: cpu
      target:
        type: Utilization
        averageUtilization: 80
"""
PROD_PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
      - name: api
        resources:
          requests:
            cpu: 500m # prod needs more
"""

INLINE_PATCH = "resources:\n- ../../base\npatches:\n- patch: |-\n" + textwrap.indent(
    PROD_PATCH.replace(
        "requests:\n            cpu: 500m # prod needs more", "limits:\n            memory: 1Gi"
    ),
    "    ",
)
"""An overlay whose only patch is written inline: the base's limits.memory set to 1Gi."""


def layout(extra: dict[str, str | bytes] | None = None) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {
        "base/kustomization.yaml": "resources:\n- deployment.yaml\n- hpa.yaml\n",
        "base/deployment.yaml": BASE_DEPLOYMENT,
        "base/hpa.yaml": BASE_HPA,
        "overlays/prod/kustomization.yaml": (
            "namespace: prod\nnamePrefix: prod-\nresources:\n- ../../base\npatches:\n- path: api.yaml\n"
        ),
        "overlays/prod/api.yaml": PROD_PATCH,
        "overlays/dev/kustomization.yaml": (
            "# dev\nnamespace: dev\nresources:\n  - ../../base\nreplicas:\n  - name: api\n    count: 2\n"
        ),
    }
    files.update(extra or {})
    return files


def test_inventory_per_overlay_matches_the_render(repo):
    require_binary("kubectl")
    root = repo(layout())
    inventory = discover(root, RepoConfig()).inventory
    assert inventory.environments == ("overlays/dev", "overlays/prod")
    assert not inventory.errors, inventory.errors
    prod = workload(inventory, "prod-api", "overlays/prod")
    assert prod.ref.namespace == "prod"
    api = prod.container("api")
    assert api is not None
    assert api.requests.cpu_cores == 0.5 and api.requests.memory_bytes == 128 * 2**20
    assert api.locations["requests.cpu"].file == "overlays/prod/api.yaml"
    assert api.locations["requests.cpu"].line == 12
    assert api.locations["requests.memory"].file == "base/deployment.yaml"
    assert prod.hpa is not None and prod.hpa.name == "prod-api" and prod.hpa.max_replicas == 5
    assert "overlays/prod/api.yaml" in prod.files and "base/hpa.yaml" in prod.files
    dev = workload(inventory, "api", "overlays/dev")
    assert dev.replicas == 2
    assert dev.locations["replicas"].file == "overlays/dev/kustomization.yaml"
    assert dev.locations["replicas"].line == 7


def test_value_the_overlay_sets_is_changed_in_the_overlay_patch(repo):
    require_binary("kubectl")
    root = repo(layout())
    result = edit(root, [("prod-api", "requests.cpu", 0.75, "api")], environment="overlays/prod")
    assert not result.errors, result.errors
    assert [f.path for f in result.files] == ["overlays/prod/api.yaml"]
    assert changed_lines(result.diff) == (
        ["            cpu: 500m # prod needs more"],
        ["            cpu: 750m # prod needs more"],
    )


def test_value_of_a_shared_base_goes_into_a_new_overlay_patch(repo):
    require_binary("kubectl")
    root = repo(layout())
    before = snapshot(root)
    result = edit(
        root,
        [("api", "requests.memory", 300 * 2**20, "api"), ("api", "hpa.maxReplicas", 8, None)],
        environment="overlays/dev",
    )
    assert not result.errors, result.errors
    assert sorted(f.path for f in result.files) == [
        "overlays/dev/kustomization.yaml",
        f"overlays/dev/{PATCH_FILE}",
    ]
    assert (root / "base/deployment.yaml").read_bytes() == before["base/deployment.yaml"]
    assert (root / "overlays/dev/kustomization.yaml").read_text() == before[
        "overlays/dev/kustomization.yaml"
    ].decode() + f"patches:\n  - path: {PATCH_FILE}\n"
    assert any(
        "instead of changing the shared base base/deployment.yaml" in n.message
        for n in result.notes
    )
    inventory = discover(root, RepoConfig()).inventory
    dev = workload(inventory, "api", "overlays/dev")
    prod = workload(inventory, "prod-api", "overlays/prod")
    assert dev.container("api").requests.memory_bytes == 300 * 2**20
    assert dev.hpa.max_replicas == 8
    assert prod.container("api").requests.memory_bytes == 128 * 2**20
    assert prod.hpa.max_replicas == 5
    # a second change extends the patch the editor wrote, in place
    second = edit(
        root,
        [("api", "requests.memory", 400 * 2**20, "api"), ("api", "limits.memory", 2**29, "api")],
        environment="overlays/dev",
    )
    assert not second.errors, second.errors
    assert [f.path for f in second.files] == [f"overlays/dev/{PATCH_FILE}"]
    removed, added = changed_lines(second.diff)
    assert removed == ["              memory: 300Mi"]
    assert added == [
        "              memory: 400Mi",
        "            limits:",
        "              memory: 512Mi",
    ]


def test_base_used_by_one_overlay_only_keeps_its_own_render(repo):
    # ``kubectl kustomize base2`` is a render of its own: the value goes into the overlay
    require_binary("kubectl")
    files = layout()
    files["overlays/dev/kustomization.yaml"] = "resources:\n- ../../base2\n"
    files["base2/kustomization.yaml"] = "resources:\n- deployment.yaml\n"
    files["base2/deployment.yaml"] = BASE_DEPLOYMENT
    root = repo(files)
    result = edit(root, [("api", "requests.cpu", 0.2, "api")], environment="overlays/dev")
    assert not result.errors, result.errors
    assert [f.path for f in result.files] == [
        "overlays/dev/kustomization.yaml",
        f"overlays/dev/{PATCH_FILE}",
    ]
    assert [n.message.split("(also read by ")[1] for n in result.notes] == [
        "base2 (a kustomization other ones include))"
    ]


def test_inline_and_json6902_patches_are_edited_inside_the_kustomization(repo):
    require_binary("kubectl")
    kustomization = (
        INLINE_PATCH
        + """\
- target:
    kind: HorizontalPodAutoscaler
    name: api
  patch: |-
    - op: replace
      path: /spec/maxReplicas
      value: 9
"""
    )
    root = repo(layout({"overlays/dev/kustomization.yaml": kustomization}))
    inventory = discover(root, RepoConfig()).inventory
    dev = workload(inventory, "api", "overlays/dev")
    assert dev.container("api").limits.memory_bytes == 2**30
    assert dev.container("api").locations["limits.memory"].line == 16
    assert dev.hpa.locations["maxReplicas"].line == 23
    result = edit(
        root,
        [("api", "limits.memory", 2**31, "api"), ("api", "hpa.maxReplicas", 12, None)],
        environment="overlays/dev",
    )
    assert not result.errors, result.errors
    assert (root / "overlays/dev/kustomization.yaml").read_text() == kustomization.replace(
        "memory: 1Gi", "memory: 2Gi"
    ).replace("value: 9", "value: 12")


def test_components_patch_is_the_winning_location(repo):
    require_binary("kubectl")
    component = """\
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
patches:
- path: bigger.yaml
"""
    bigger = PROD_PATCH.replace("cpu: 500m # prod needs more", "cpu: 2")
    root = repo(
        layout(
            {
                "components/bigger/kustomization.yaml": component,
                "components/bigger/bigger.yaml": bigger,
                "overlays/dev/kustomization.yaml": "resources:\n- ../../base\ncomponents:\n- ../../components/bigger\n",
            }
        )
    )
    inventory = discover(root, RepoConfig()).inventory
    assert inventory.environments == ("overlays/dev", "overlays/prod")
    dev = workload(inventory, "api", "overlays/dev")
    assert dev.container("api").requests.cpu_cores == 2.0
    assert dev.container("api").locations["requests.cpu"].file == "components/bigger/bigger.yaml"
    result = edit(root, [("api", "requests.cpu", 1.5, "api")], environment="overlays/dev")
    assert not result.errors, result.errors
    assert [f.path for f in result.files] == ["components/bigger/bigger.yaml"]
    assert (root / "components/bigger/bigger.yaml").read_text() == bigger.replace(
        "cpu: 2", "cpu: 1.5"
    )


def test_configured_environments_replace_automatic_overlays(repo):
    require_binary("kubectl")
    root = repo(layout())
    config = RepoConfig.model_validate(
        {
            "environments": [
                {"name": "production", "path": "overlays/prod", "selector": {"cluster": "prod"}}
            ]
        }
    )
    inventory = discover(root, config).inventory
    assert inventory.environments == ("production",)
    assert workload(inventory, "prod-api").ref.environment == "production"


def test_hpa_target_in_a_shared_base_is_patched_with_the_whole_metrics_list(repo):
    require_binary("kubectl")
    hpa = (
        BASE_HPA
        + """\
  - type: Resource
    resource:
      name: memory
      target:
        type: Utilization
        averageUtilization: 90
"""
    )
    root = repo(layout({"base/hpa.yaml": hpa}))
    result = edit(
        root,
        [("api", "hpa.target.cpu", 65, None), ("api", "hpa.target.memory", 85, None)],
        environment="overlays/dev",
    )
    assert not result.errors, result.errors
    patch = (root / "overlays/dev" / PATCH_FILE).read_text()
    assert "averageUtilization: 65" in patch and "averageUtilization: 85" in patch
    dev = workload(discover(root, RepoConfig()).inventory, "api", "overlays/dev")
    assert sorted((t.resource, t.utilization_percent) for t in dev.hpa.targets) == [
        ("cpu", 65),
        ("memory", 85),
    ]
    assert "overlays/dev/kustomization.yaml" in dev.files and "base/kustomization.yaml" in dev.files


def test_existing_overlay_patch_is_extended_under_a_name_prefix_and_namespace(repo):
    require_binary("kubectl")
    root = repo(layout())
    result = edit(
        root,
        [("prod-api", "limits.memory", 2**30, "api"), ("prod-api", "replicas", 4, None)],
        environment="overlays/prod",
    )
    assert not result.errors, result.errors
    assert [f.path for f in result.files] == ["overlays/prod/api.yaml"]
    assert (root / "overlays/prod/api.yaml").read_text() == PROD_PATCH.replace(
        "spec:\n  template:", "spec:\n  template:"
    ).replace(
        "            cpu: 500m # prod needs more\n",
        "            cpu: 500m # prod needs more\n          limits:\n            memory: 1Gi\n",
    ) + "  replicas: 4\n"
    prod = workload(discover(root, RepoConfig()).inventory, "prod-api", "overlays/prod")
    assert prod.replicas == 4 and prod.container("api").limits.memory_bytes == 2**30
    assert prod.container("api").locations["limits.memory"].file == "overlays/prod/api.yaml"


def test_new_patch_added_to_an_existing_patches_list(repo):
    require_binary("kubectl")
    root = repo(layout())
    result = edit(root, [("prod-api", "hpa.minReplicas", 3, None)], environment="overlays/prod")
    assert not result.errors, result.errors
    assert (
        (root / "overlays/prod/kustomization.yaml")
        .read_text()
        .endswith(f"patches:\n- path: api.yaml\n- path: {PATCH_FILE}\n")
    )
    patch = (root / "overlays/prod" / PATCH_FILE).read_text()
    assert patch == (
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: api\n"
        "spec:\n  minReplicas: 3\n"
    )
    inventory = discover(root, RepoConfig()).inventory
    assert workload(inventory, "prod-api", "overlays/prod").hpa.min_replicas == 3
    assert workload(inventory, "api", "overlays/dev").hpa.min_replicas == 2


def test_legacy_patch_fields_and_name_suffix(repo):
    require_binary("kubectl")
    json_patch = "- op: replace\n  path: /spec/template/spec/containers/0/resources/limits/memory\n  value: 768Mi\n"
    kustomization = """\
nameSuffix: -v2
resources:
- ../../base
patchesStrategicMerge:
- api.yaml
patchesJson6902:
- target: {group: apps, version: v1, kind: Deployment, name: api}
  path: memory.yaml
"""
    root = repo(
        layout(
            {
                "overlays/dev/kustomization.yaml": kustomization,
                "overlays/dev/api.yaml": PROD_PATCH,
                "overlays/dev/memory.yaml": json_patch,
            }
        )
    )
    inventory = discover(root, RepoConfig()).inventory
    assert not inventory.errors, inventory.errors
    dev = workload(inventory, "api-v2", "overlays/dev")
    api = dev.container("api")
    assert api.requests.cpu_cores == 0.5 and api.limits.memory_bytes == 768 * 2**20
    assert api.locations["requests.cpu"].file == "overlays/dev/api.yaml"
    assert (api.locations["limits.memory"].file, api.locations["limits.memory"].line) == (
        "overlays/dev/memory.yaml",
        3,
    )
    assert dev.hpa is not None and dev.hpa.name == "api-v2"
    result = edit(
        root,
        [("api-v2", "limits.memory", 2**30, "api"), ("api-v2", "requests.cpu", 0.25, "api")],
        environment="overlays/dev",
    )
    assert not result.errors, result.errors
    assert (root / "overlays/dev/memory.yaml").read_text() == json_patch.replace("768Mi", "1Gi")
    assert sorted(f.path for f in result.files) == [
        "overlays/dev/api.yaml",
        "overlays/dev/memory.yaml",
    ]


def test_inline_patch_in_a_crlf_kustomization(repo):
    require_binary("kubectl")
    kustomization = (
        "resources:\n- ../../base\npatches:\n- patch: |\n    apiVersion: apps/v1\n    kind: Deployment\n"
        "    metadata:\n      name: api\n    spec:\n      replicas: 3 # dev\n"
    ).replace("\n", "\r\n")
    root = repo(layout({"overlays/dev/kustomization.yaml": kustomization.encode()}))
    inventory = discover(root, RepoConfig()).inventory
    dev = workload(inventory, "api", "overlays/dev")
    assert dev.replicas == 3 and dev.locations["replicas"].line == 10
    result = edit(root, [("api", "replicas", 5, None)], environment="overlays/dev")
    assert not result.errors, result.errors
    assert (root / "overlays/dev/kustomization.yaml").read_bytes() == kustomization.replace(
        "replicas: 3 # dev", "replicas: 5 # dev"
    ).encode()


def test_a_base_shared_with_a_broken_overlay_is_not_edited_in_place(repo):
    require_binary("kubectl")
    root = repo(
        layout(
            {
                "overlays/prod/kustomization.yaml": (
                    "resources:\n- ../../base\n- missing.yaml\npatches:\n- path: api.yaml\n"
                ),
            }
        )
    )
    inventory = discover(root, RepoConfig()).inventory
    assert inventory.environments == ("overlays/dev",)
    result = edit(root, [("api", "requests.cpu", 0.2, "api")], environment="overlays/dev")
    assert not result.errors, result.errors
    assert f"overlays/dev/{PATCH_FILE}" in [f.path for f in result.files]
    assert "base/deployment.yaml" not in [f.path for f in result.files]


def test_keys_are_added_inside_an_inline_patch(repo):
    require_binary("kubectl")
    kustomization = INLINE_PATCH
    root = repo(layout({"overlays/dev/kustomization.yaml": kustomization}))
    result = edit(root, [("api", "limits.cpu", 2, "api")], environment="overlays/dev")
    assert not result.errors, result.errors
    assert [f.path for f in result.files] == ["overlays/dev/kustomization.yaml"]
    assert (root / "overlays/dev/kustomization.yaml").read_text() == kustomization.rstrip("\n") + (
        "\n                cpu: 2000m\n"
    )
