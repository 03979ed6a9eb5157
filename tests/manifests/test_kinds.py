"""Argo Rollouts and DaemonSets: discovered in raw YAML, Kustomize and Helm values, edited where
they are written (a Rollout's ``workloadRef`` Deployment's template), checked by rendering."""

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

KINDS = Path(__file__).parent / "kinds"
"""Hand-made manifests: a canary Rollout with its HPA, a Rollout with ``workloadRef`` and its
Deployment, a DaemonSet (``base/``), and an overlay patching the DaemonSet
(``overlays/prod``)."""


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    """The hand-made manifests as raw YAML (the base directory alone)."""
    return raw_base(KINDS, tmp_path)


@pytest.fixture
def overlay(tmp_path: Path) -> Path:
    """The hand-made manifests as a Kustomize base and a prod overlay."""
    return kustomize_tree(KINDS, tmp_path)


def test_raw_yaml_lists_rollouts_and_daemonsets(raw):
    inventory = discover(raw, RepoConfig()).inventory
    assert not inventory.errors
    kinds = {w.ref.name: w.ref.kind for w in inventory.workloads}
    assert kinds == {"checkout": "Rollout", "catalog": "Rollout", "log-shipper": "DaemonSet"}
    checkout = workload(inventory, "checkout")
    assert checkout.replicas == 3
    assert checkout.hpa is not None and checkout.hpa.max_replicas == 12
    assert checkout.container("checkout").requests.cpu_cores == 0.5
    shipper = workload(inventory, "log-shipper")
    assert shipper.replicas is None and shipper.hpa is None
    assert FieldId.REPLICAS not in shipper.locations


def test_workload_ref_reads_the_deployment_template_and_the_rollout_replicas(raw):
    inventory = discover(raw, RepoConfig()).inventory
    catalog = workload(inventory, "catalog")
    assert catalog.ref.kind == "Rollout"
    assert catalog.replicas == 4  # the Rollout's, not the Deployment's 0
    assert catalog.container("catalog").requests.cpu_cores == 0.25
    assert catalog.container("catalog").locations[FieldId.REQUESTS_CPU].line == 41
    assert not [w for w in inventory.workloads if w.ref.kind == "Deployment"]
    (note,) = inventory.notes
    assert (note.file, note.line) == ("rollout-ref.yaml", 21)
    assert "workloadRef of Rollout catalog" in note.message


def test_edits_go_to_the_rollout_and_to_the_referenced_template(raw):
    result = edit(
        raw,
        [
            ("catalog", "requests.cpu", 0.4, "catalog"),
            ("catalog", "replicas", 5, None),
            ("checkout", "hpa.maxReplicas", 15, None),
            ("log-shipper", "requests.memory", 200 * 2**20, "shipper"),
        ],
    )
    assert not result.errors, result.errors
    removed, added = changed_lines(result.diff)
    assert "              cpu: 400m # edited for the Rollout" in added
    assert "  replicas: 5 # the Rollout's replicas, not the Deployment's" in added
    assert "  maxReplicas: 15" in added
    assert "              memory: 200Mi # per node" in added
    assert "  replicas: 0 # scaled down by Argo Rollouts" not in removed
    text = (raw / "rollout-ref.yaml").read_text()
    assert "replicas: 0 # scaled down by Argo Rollouts" in text
    assert workload(discover(raw, RepoConfig()).inventory, "catalog").replicas == 5


def test_hpa_on_a_daemonset_is_an_error_at_its_line(raw):
    (raw / "hpa.yaml").write_text(
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n"
        "  name: log-shipper\n  namespace: shop\nspec:\n  scaleTargetRef:\n"
        "    apiVersion: apps/v1\n    kind: DaemonSet\n    name: log-shipper\n"
        "  maxReplicas: 3\n"
    )
    inventory = discover(raw, RepoConfig()).inventory
    (error,) = inventory.errors
    assert (error.file, error.line) == ("hpa.yaml", 9)
    assert "one pod per node" in error.message
    assert workload(inventory, "log-shipper").hpa is None


def test_workload_ref_to_nothing_is_an_error_and_nothing_else_is_lost(raw):
    path = raw / "rollout-ref.yaml"
    path.write_text(
        path.read_text().replace(
            "    name: catalog\n    scaleDown", "    name: gone\n    scaleDown"
        )
    )
    inventory = discover(raw, RepoConfig()).inventory
    (error,) = inventory.errors
    assert error.file == "rollout-ref.yaml" and error.line == 15
    assert "Deployment shop/gone" in error.message
    names = {w.ref.name: w.ref.kind for w in inventory.workloads}
    # the Deployment is a workload of its own again; the Rollout is left out
    assert names == {"checkout": "Rollout", "catalog": "Deployment", "log-shipper": "DaemonSet"}


def test_kustomize_overlay_edits_rollouts_through_patches(overlay):
    inventory = discover(overlay, RepoConfig()).inventory
    assert not inventory.errors
    shipper = workload(inventory, "log-shipper", "overlays/prod")
    assert shipper.container("shipper").requests.cpu_cores == 0.3
    result = edit(
        overlay,
        [
            ("checkout", "requests.memory", 700 * 2**20, "checkout"),
            ("catalog", "requests.cpu", 0.4, "catalog"),
            ("log-shipper", "requests.cpu", 0.35, "shipper"),
        ],
        environment="overlays/prod",
    )
    assert not result.errors, result.errors
    patch = (overlay / "overlays/prod/tortoise-bot-patch.yaml").read_text()
    # a Rollout is merged as a JSON merge patch: its container list is written whole
    assert 'image: "shop/checkout:1.4.2"' in patch and "memory: 700Mi" in patch
    assert "kind: Deployment\nmetadata:\n  name: catalog" in patch  # the workloadRef template
    assert (
        "cpu: 350m # prod nodes are busier" in (overlay / "overlays/prod/shipper.yaml").read_text()
    )
    after = discover(overlay, RepoConfig()).inventory
    checkout = workload(after, "checkout", "overlays/prod").container("checkout")
    assert checkout.requests.memory_bytes == 700 * 2**20
    assert checkout.limits.memory_bytes == 2**30
    assert (
        workload(after, "catalog", "overlays/prod").container("catalog").requests.cpu_cores == 0.4
    )


def test_helm_mapping_kinds(tmp_path):
    assert (
        HelmWorkloadMapping(kind="Rollout", name="web", replicas="web.replicas").kind == "Rollout"
    )
    with pytest.raises(ConfigError) as caught:
        parse_model(
            "kind: DaemonSet\nname: agent\nresources: agent.resources\nhpa_max_replicas: agent.max\n",
            HelmWorkloadMapping,
            file=".tortoise-bot.yaml",
        )
    assert "one pod per node" in str(caught.value)
    assert "hpa_max_replicas" in str(caught.value)


def test_helm_values_declare_a_rollout_and_a_daemonset(tmp_path):
    chart = tmp_path / "repo" / "charts" / "shop"
    chart.mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: shop\nversion: 1.0.0\n")
    (chart / "values.yaml").write_text(
        "web:\n  replicas: 3\n  resources:\n    requests:\n      cpu: 250m\n"
        "agent:\n  resources:\n    requests:\n      cpu: 100m # per node\n"
    )
    (tmp_path / "repo" / ".tortoise-bot.yaml").write_text(
        "helm:\n  - chart: charts/shop\n    namespace: shop\n    workloads:\n"
        "      - {kind: Rollout, name: web, resources: web.resources, replicas: web.replicas}\n"
        "      - {kind: DaemonSet, name: agent, resources: agent.resources}\n"
    )
    root = tmp_path / "repo"
    config = load_repo_config(root)
    inventory = discover(root, config).inventory
    assert not inventory.errors
    web, agent = workload(inventory, "web"), workload(inventory, "agent")
    assert (web.ref.kind, web.replicas) == ("Rollout", 3)
    assert (agent.ref.kind, agent.replicas, agent.hpa) == ("DaemonSet", None, None)
    result = edit(root, [("agent", "requests.cpu", 0.15, "agent")], config=config)
    assert not result.errors
    assert "      cpu: 150m # per node" in changed_lines(result.diff)[1]
