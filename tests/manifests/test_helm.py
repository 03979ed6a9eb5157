"""Helm values files, ``helm create`` conventions, mappings, HelmRelease and Application values."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.config.manifests import HelmWorkloadMapping
from bot.config.repo import RepoConfig
from bot.manifests import discover
from tests.manifests.conftest import changed_lines, edit, workload

CHART = "apiVersion: v2\nname: shop\nversion: 1.0.0\n"
VALUES = """\
# Default values for shop.
replicaCount: 1

resources:
  # We usually recommend not to specify default resources.
  limits:
    memory: 256Mi
  requests:
    cpu: 100m
    memory: 128Mi

autoscaling:
  enabled: true
  minReplicas: 1
  maxReplicas: 100
  targetCPUUtilizationPercentage: 80
  # targetMemoryUtilizationPercentage: 80
"""
PROD = """\
replicaCount: 3
resources:
  requests:
    memory: 1Gi # prod data set
"""


def test_helm_create_conventions_and_values_only_chart(repo):
    root = repo({"chart/Chart.yaml": CHART, "chart/values.yaml": VALUES})
    inventory = discover(root, RepoConfig()).inventory
    assert inventory.environments == ("default",)
    shop = workload(inventory, "shop")
    assert shop.replicas == 1
    c = shop.container("shop")
    assert c.requests.cpu_cores == 0.1 and c.limits.memory_bytes == 256 * 2**20
    assert (
        c.locations["requests.cpu"].file == "chart/values.yaml"
        and c.locations["requests.cpu"].line == 9
    )
    assert shop.hpa is not None and (shop.hpa.min_replicas, shop.hpa.max_replicas) == (1, 100)
    assert [(t.resource, t.utilization_percent) for t in shop.hpa.targets] == [("cpu", 80)]
    result = edit(
        root,
        [
            ("shop", "requests.cpu", 0.25, "shop"),
            ("shop", "hpa.maxReplicas", 10, None),
            ("shop", "hpa.target.memory", 70, "shop"),
        ],
    )
    assert not result.errors, result.errors
    assert changed_lines(result.diff) == (
        ["    cpu: 100m", "  maxReplicas: 100"],
        ["    cpu: 250m", "  maxReplicas: 10", "  targetMemoryUtilizationPercentage: 70"],
    )
    assert (
        (root / "chart/values.yaml")
        .read_text()
        .endswith(
            "  targetCPUUtilizationPercentage: 80\n  targetMemoryUtilizationPercentage: 70\n"
            "  # targetMemoryUtilizationPercentage: 80\n"
        )
    )


def test_environment_values_file_wins_and_receives_shared_values(repo):
    root = repo(
        {
            "chart/Chart.yaml": CHART,
            "chart/values.yaml": VALUES,
            "chart/values-prod.yaml": PROD,
            "chart/values-staging.yaml": "replicaCount: 2\n",
        }
    )
    config = RepoConfig.model_validate(
        {"environments": [{"name": "prod", "path": "chart/values-prod.yaml", "namespace": "shop"}]}
    )
    inventory = discover(root, config).inventory
    assert inventory.environments == ("chart/values-staging.yaml", "prod")
    prod = workload(inventory, "shop", "prod")
    assert prod.ref.namespace == "shop" and prod.replicas == 3
    c = prod.container("shop")
    assert c.requests.memory_bytes == 2**30 and c.requests.cpu_cores == 0.1
    assert c.locations["requests.memory"].file == "chart/values-prod.yaml"
    assert c.locations["requests.cpu"].file == "chart/values.yaml"
    result = edit(
        root,
        [
            ("shop", "requests.memory", 1.5 * 2**30, "shop"),
            ("shop", "requests.cpu", 0.5, "shop"),
            ("shop", "limits.cpu", 1, "shop"),
        ],
        environment="prod",
        config=config,
    )
    assert not result.errors, result.errors
    assert [f.path for f in result.files] == ["chart/values-prod.yaml"]
    assert (root / "chart/values-prod.yaml").read_text() == (
        "replicaCount: 3\nresources:\n  requests:\n    memory: 1536Mi # prod data set\n    cpu: 500m\n"
        "  limits:\n    cpu: 1000m\n"
    )
    assert any(
        "instead of changing the shared chart/values.yaml" in n.message for n in result.notes
    )
    staging = workload(discover(root, config).inventory, "shop", "chart/values-staging.yaml")
    assert staging.container("shop").requests.cpu_cores == 0.1


def test_explicit_mapping_for_other_layouts(repo):
    values = """\
adService:
  name: adservice
  resources:
    requests:
      cpu: 200m
      memory: 180Mi
web:
  replicas: 2
"""
    config = RepoConfig.model_validate(
        {
            "helm": [
                {
                    "chart": "charts/boutique",
                    "namespace": "boutique",
                    "workloads": [
                        {
                            "name": "adservice",
                            "container": "server",
                            "resources": "adService.resources",
                        },
                        {
                            "name": "web",
                            "replicas": "web.replicas",
                            "fields": {"requests.cpu": "web.cpu"},
                        },
                    ],
                }
            ]
        }
    )
    root = repo({"charts/boutique/Chart.yaml": CHART, "charts/boutique/values.yaml": values})
    inventory = discover(root, config).inventory
    ad = workload(inventory, "adservice")
    assert ad.ref.namespace == "boutique"
    assert ad.container("server").requests.memory_bytes == 180 * 2**20
    web = workload(inventory, "web")
    assert web.replicas == 2 and web.container("web").requests.cpu_cores is None
    result = edit(
        root,
        [("adservice", "limits.memory", 2**28, "server"), ("web", "requests.cpu", 0.1, "web")],
        config=config,
    )
    assert not result.errors, result.errors
    assert (root / "charts/boutique/values.yaml").read_text() == values.replace(
        "      memory: 180Mi\n", "      memory: 180Mi\n    limits:\n      memory: 256Mi\n"
    ).replace("  replicas: 2\n", "  replicas: 2\n  cpu: 100m\n")


HELMRELEASE = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
spec:
  chart:
    spec:
      chart: podinfo
  values:
    replicaCount: 2   # keep two
    resources:
      requests: {cpu: 100m}
"""


def test_flux_helmrelease_inline_values(repo):
    root = repo({"apps/podinfo.yaml": HELMRELEASE})
    inventory = discover(root, RepoConfig()).inventory
    pod = workload(inventory, "podinfo")
    assert pod.ref.namespace == "apps" and pod.replicas == 2
    assert pod.container("podinfo").locations["requests.cpu"].line == 13
    result = edit(
        root,
        [
            ("podinfo", "requests.cpu", 0.2, "podinfo"),
            ("podinfo", "requests.memory", 2**27, "podinfo"),
            ("podinfo", "replicas", 3, None),
        ],
    )
    assert not result.errors, result.errors
    assert (root / "apps/podinfo.yaml").read_text() == HELMRELEASE.replace(
        "{cpu: 100m}", "{cpu: 200m, memory: 128Mi}"
    ).replace("replicaCount: 2 ", "replicaCount: 3 ")


APPLICATION = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
spec:
  destination:
    namespace: web
  source:
    chart: web
    helm:
      values: |
        replicaCount: 2
        resources:
          requests:
            cpu: 300m
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: api
spec:
  destination:
    namespace: api
  source:
    path: charts/api
    helm:
      valuesObject:
        resources:
          limits:
            memory: 1Gi
"""


def test_argo_application_values_string_and_object(repo):
    root = repo({"argo/apps.yaml": APPLICATION})
    inventory = discover(root, RepoConfig()).inventory
    web = workload(inventory, "web")
    assert web.ref.namespace == "web" and web.replicas == 2
    assert web.container("web").requests.cpu_cores == 0.3
    assert web.container("web").locations["requests.cpu"].line == 15
    api = workload(inventory, "api")
    assert api.container("api").limits.memory_bytes == 2**30
    result = edit(
        root,
        [
            ("web", "requests.cpu", 0.35, "web"),
            ("web", "replicas", 4, None),
            ("api", "limits.memory", 2**31, "api"),
        ],
    )
    assert not result.errors, result.errors
    assert (root / "argo/apps.yaml").read_text() == APPLICATION.replace(
        "cpu: 300m", "cpu: 350m"
    ).replace("replicaCount: 2", "replicaCount: 4").replace("memory: 1Gi", "memory: 2Gi")


def test_a_key_without_value_is_filled_in_place(repo):
    values = VALUES.replace(
        "  # targetMemoryUtilizationPercentage: 80\n",
        "  targetMemoryUtilizationPercentage:   # unset\n",
    )
    root = repo({"chart/Chart.yaml": CHART, "chart/values.yaml": values})
    result = edit(root, [("shop", "hpa.target.memory", 75, "shop")])
    assert not result.errors, result.errors
    assert (root / "chart/values.yaml").read_text() == values.replace(
        "targetMemoryUtilizationPercentage:   # unset",
        "targetMemoryUtilizationPercentage: 75   # unset",
    )


def test_keys_are_added_inside_an_argo_values_string(repo):
    root = repo({"argo/apps.yaml": APPLICATION.replace("\n", "\r\n").encode()})
    result = edit(
        root, [("web", "limits.memory", 2**30, "web"), ("web", "requests.memory", 2**28, "web")]
    )
    assert not result.errors, result.errors
    assert (root / "argo/apps.yaml").read_bytes().decode() == APPLICATION.replace(
        "            cpu: 300m\n",
        "            cpu: 300m\n            memory: 256Mi\n          limits:\n            memory: 1Gi\n",
    ).replace("\n", "\r\n")
    web = workload(discover(root, RepoConfig()).inventory, "web")
    assert web.container("web").limits.memory_bytes == 2**30


def test_a_mapping_field_that_names_no_field_is_a_config_error():
    with pytest.raises(
        ValidationError, match=r"unknown field 'request\.cpu'; fields: hpa\.maxReplicas"
    ):
        HelmWorkloadMapping(name="web", fields={"request.cpu": "web.cpu"})
    assert HelmWorkloadMapping(name="web", fields={"limits.memory": "web.mem"}).fields
