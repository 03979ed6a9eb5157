"""Flux ``Kustomization``s and ``HelmRelease``s decide which overlays and values files are deployed,
to which cluster (the bootstrap path, a ``kubeConfig``) and namespace."""

from __future__ import annotations

from bot.config.repo import RepoConfig
from bot.manifests import discover
from tests.manifests.conftest import workload
from tests.manifests.gitops_repos import HELM_RELEASE, deployment_of, flux_bank


def test_flux_kustomizations_and_a_helm_release_decide_the_environments(repo):
    inventory = discover(flux_bank(repo), RepoConfig()).inventory
    production = deployment_of(inventory, "apps/production")
    assert (production.cluster, production.namespace) == ("production", "bank")
    assert workload(inventory, "ledger", "apps/production").ref.namespace == "bank"
    staging = deployment_of(inventory, "apps/staging")
    assert (staging.cluster, staging.namespace) == ("staging", "bank")
    # same namespace and workload, other clusters: both proposed for
    assert workload(inventory, "ledger", "apps/staging").ref not in inventory.not_proposed
    assert workload(inventory, "ledger", "apps/production").ref not in inventory.not_proposed
    assert not deployment_of(inventory, "apps/preview").proposed
    chart = deployment_of(inventory, "charts/vault/values-production.yaml")
    assert chart.deployed_by == ("HelmRelease vault (clusters/production/vault.yaml:2)",)
    assert (chart.cluster, chart.namespace) == ("production", "bank")
    assert not deployment_of(inventory, "charts/vault/values-staging.yaml").proposed
    notes = [n.message for n in inventory.notes]
    # the GitRepository is in the checkout and names this repository: nothing assumed
    assert not any("GitRepository flux-system is not in this repository" in m for m in notes)


def test_a_helm_release_in_a_base_two_clusters_include_deploys_to_both(repo):
    root = flux_bank(repo)
    (root / "clusters/production/vault.yaml").unlink()
    (root / "base/vault.yaml").write_text(HELM_RELEASE)
    (root / "base/kustomization.yaml").write_text(
        "resources: [ledger.yaml, teller.yaml, vault.yaml]\n"
    )
    inventory = discover(root, RepoConfig()).inventory
    chart = deployment_of(inventory, "charts/vault/values-production.yaml")
    assert chart.deployed_by == ("HelmRelease vault (base/vault.yaml:2)",)
    # deployed to production and staging (the first gives the selector)
    assert chart.clusters == ("production", "staging")
    assert (chart.cluster, dict(chart.selector)) == ("production", {"cluster": "production"})
    assert not deployment_of(inventory, "charts/vault/values-staging.yaml").proposed
