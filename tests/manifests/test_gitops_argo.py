"""Argo CD ``Application``s and ``ApplicationSet``s decide which overlays and values files are
deployed, to which cluster and namespace; only those of this repository count."""

from __future__ import annotations

import subprocess

from bot.config.repo import RepoConfig
from bot.manifests import discover
from bot.manifests.gitops import normalize_url
from tests.manifests.conftest import workload
from tests.manifests.gitops_repos import (
    BASE,
    CHART,
    URL,
    argo_bank,
    deployment_of,
    gitops_config,
    overlay,
)


def test_argo_applications_decide_cluster_namespace_and_what_is_proposed(repo):
    inventory = discover(argo_bank(repo), gitops_config()).inventory
    production = deployment_of(inventory, "overlays/production")
    assert production.cluster == "prod-eu"
    assert production.namespace == "bank"
    assert dict(production.selector) == {"cluster": "prod-eu"}
    assert production.deployed_by == (
        "Application bank-production (argocd/apps/production.yaml:2)",
    )
    assert production.proposed
    staging = deployment_of(inventory, "overlays/staging")
    assert (staging.cluster, dict(staging.selector)) == ("staging", {"cluster": "staging"})
    # overlays/dev is deployed only by an Application of another repository: listed, not proposed
    for name in ("overlays/dev", "overlays/sandbox"):
        dep = deployment_of(inventory, name)
        assert not dep.proposed and "no Argo CD or Flux object" in dep.reason
        assert workload(inventory, "ledger", name).ref in inventory.not_proposed
    assert "overlays/dev" in inventory.environments  # still listed
    notes = [n.message for n in inventory.notes]
    assert any("deploys git@github.com:example/payments, another repository" in m for m in notes)
    assert workload(inventory, "ledger", "overlays/production").ref not in inventory.not_proposed


def test_undeployed_overlays_are_proposed_when_the_opt_in_file_says_so(repo):
    inventory = discover(argo_bank(repo), gitops_config(undeployed=True)).inventory
    assert deployment_of(inventory, "overlays/dev").proposed
    # dev and sandbox read the same pods (no cluster known, same selector and namespace)
    ledger_dev = workload(inventory, "ledger", "overlays/dev")
    ledger_sandbox = workload(inventory, "ledger", "overlays/sandbox")
    assert ledger_dev.ref not in inventory.not_proposed
    assert "same pods as environment 'overlays/dev'" in inventory.not_proposed[ledger_sandbox.ref]
    assert deployment_of(inventory, "overlays/dev").merged == ("overlays/sandbox",)


def test_an_unknown_repository_url_is_assumed_and_said(repo):
    root = argo_bank(repo)
    inventory = discover(root, RepoConfig()).inventory
    notes = [n.message for n in inventory.notes]
    assert any("this repository's URL is unknown" in m for m in notes)
    # without a known URL the other repository's Application (its path exists here) counts
    assert deployment_of(inventory, "overlays/dev").proposed


def test_the_checkout_remote_is_this_repository(repo):
    root = argo_bank(repo)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(
        ["git", "-C", str(root), "remote", "add", "origin", "git@github.com:Example/bank.git"],
        check=True,
    )
    inventory = discover(root, RepoConfig()).inventory
    assert deployment_of(inventory, "overlays/production").proposed
    assert not deployment_of(inventory, "overlays/dev").proposed


def test_normalize_url_reads_ssh_and_https_alike():
    forms = [
        "https://github.com/Example/Bank.git",
        "git@github.com:example/bank.git",
        "ssh://git@github.com/example/bank",
        "https://user@github.com/example/bank/",
    ]
    assert {normalize_url(f) for f in forms} == {"github.com/example/bank"}


APPSET = f"""\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: bank
spec:
  goTemplate: true
  generators:
    - list:
        elements:
          - env: production
            cluster: prod-eu
    - git:
        repoURL: {URL}
        revision: main
        directories:
          - path: overlays/*
          - path: overlays/production
            exclude: true
    - clusters: {{}}
  template:
    metadata:
      name: 'bank-{{{{.path.basename}}}}'
    spec:
      source:
        repoURL: {URL}
        path: '{{{{.path.path}}}}'
      destination:
        name: '{{{{.cluster}}}}'
        namespace: bank
"""


def test_an_application_set_expands_its_list_and_git_directory_generators(repo):
    appset = APPSET.replace("'{{.path.path}}'", "'{{.path.path}}'")
    root = repo(
        {
            **BASE,
            "overlays/production/kustomization.yaml": overlay("bank"),
            "overlays/staging/kustomization.yaml": overlay("bank"),
            "argocd/bank.yaml": appset,
        }
    )
    inventory = discover(root, gitops_config()).inventory
    staging = deployment_of(inventory, "overlays/staging")
    assert staging.deployed_by and "ApplicationSet bank" in staging.deployed_by[0]
    # the list element has no path: its Application names nothing; production is excluded
    assert not deployment_of(inventory, "overlays/production").proposed
    notes = [n.message for n in inventory.notes]
    assert any("generator clusters is not understood" in m for m in notes)


def test_a_list_generator_fills_the_template_and_helm_value_files_come_through_a_ref(repo):
    appset = f"""\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: bank
spec:
  generators:
    - list:
        elements:
          - env: staging
            cluster: staging-eu
  template:
    metadata:
      name: 'bank-{{{{env}}}}'
    spec:
      source:
        repoURL: {URL}
        path: 'overlays/{{{{env}}}}'
      destination:
        name: '{{{{cluster}}}}'
        namespace: 'bank-{{{{env}}}}'
"""
    vault = f"""\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: vault
spec:
  sources:
    - repoURL: {URL}
      path: charts/vault
      helm:
        valueFiles: [$values/charts/vault/values-production.yaml]
    - repoURL: {URL}
      ref: values
  destination:
    server: https://kubernetes.default.svc
    namespace: vault
"""
    root = repo(
        {
            **BASE,
            **CHART,
            "overlays/staging/kustomization.yaml": overlay("bank-staging"),
            "overlays/production/kustomization.yaml": overlay("bank"),
            "argocd/bank.yaml": appset,
            "argocd/vault.yaml": vault,
        }
    )
    inventory = discover(root, gitops_config()).inventory
    staging = deployment_of(inventory, "overlays/staging")
    assert staging.deployed_by == (
        "Application bank-staging of ApplicationSet bank (argocd/bank.yaml:2)",
    )
    assert (staging.cluster, staging.namespace) == ("staging-eu", "bank-staging")
    assert not deployment_of(inventory, "overlays/production").proposed
    chart = deployment_of(inventory, "charts/vault/values-production.yaml")
    # the cluster Argo CD runs in: no selector
    assert (chart.cluster, chart.namespace, dict(chart.selector)) == ("", "vault", {})
    assert workload(inventory, "vault", "charts/vault/values-production.yaml").ref.namespace == (
        "vault"
    )
    assert not deployment_of(inventory, "charts/vault/values-staging.yaml").proposed
