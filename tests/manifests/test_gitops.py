"""GitOps-aware environments: Argo CD and Flux objects of the repository decide which overlays
and values files are deployed, to which cluster and namespace; environments that read the same
pods are proposed for once (``bot.manifests.gitops``, ``bot.manifests.deployments``)."""

from __future__ import annotations

import json
import subprocess

import jsonschema  # type: ignore[import-untyped]

from bot.config.bot import BotSettings
from bot.config.repo import RepoConfig
from bot.manifests import discover
from bot.manifests.gitops import normalize_url
from bot.model import Inventory
from bot.pipeline.plan import history_requests
from bot.settings import RepositorySettings
from tests.manifests.conftest import workload
from tests.manifests.test_commands import SCHEMA

URL = "https://github.com/example/bank.git"

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: app
          image: example/{name}:1
          resources:
            requests: {{cpu: 250m, memory: 256Mi}}
"""
BASE = {
    "base/kustomization.yaml": "resources: [ledger.yaml, teller.yaml]\n",
    "base/ledger.yaml": DEPLOYMENT.format(name="ledger"),
    "base/teller.yaml": DEPLOYMENT.format(name="teller"),
}


def _overlay(namespace: str, cpu: str = "300m") -> str:
    return f"""\
namespace: {namespace}
resources: [../../base]
patches:
  - patch: |
      apiVersion: apps/v1
      kind: Deployment
      metadata: {{name: ledger}}
      spec:
        template:
          spec:
            containers:
              - name: app
                resources: {{requests: {{cpu: {cpu}}}}}
"""


def _application(name: str, path: str, cluster: str, namespace: str, url: str = URL) -> str:
    return f"""\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: {name}
  namespace: argocd
spec:
  project: default
  source:
    repoURL: {url}
    targetRevision: main
    path: {path}
  destination:
    name: {cluster}
    namespace: {namespace}
"""


def _argo_bank(repo, extra=None):
    """An Argo CD app-of-apps: a root Application reads ``argocd/apps``, whose Applications
    deploy two of the four overlays; ``dev`` and ``sandbox`` are deployed by nothing."""
    files = {
        **BASE,
        "overlays/production/kustomization.yaml": _overlay("bank"),
        "overlays/staging/kustomization.yaml": _overlay("bank-staging"),
        "overlays/dev/kustomization.yaml": _overlay("bank-dev"),
        "overlays/sandbox/kustomization.yaml": _overlay("bank-dev"),
        "argocd/root.yaml": _application("root", "argocd/apps", "in-cluster", "argocd"),
        "argocd/apps/production.yaml": _application(
            "bank-production", "overlays/production", "prod-eu", "bank"
        ),
        "argocd/apps/staging.yaml": _application(
            "bank-staging", "overlays/staging", "staging", "bank-staging"
        ),
        "argocd/apps/other.yaml": _application(
            "payments", "overlays/dev", "prod-eu", "payments", url="git@github.com:example/payments"
        ),
        **(extra or {}),
    }
    return repo(files)


def _config(**gitops) -> RepoConfig:
    return RepoConfig.model_validate({"gitops": {"repository_urls": [URL], **gitops}})


def _deployment(inventory: Inventory, name: str):
    found = inventory.deployment(name)
    assert found is not None, [d.environment for d in inventory.deployments]
    return found


def test_argo_applications_decide_cluster_namespace_and_what_is_proposed(repo):
    inventory = discover(_argo_bank(repo), _config()).inventory
    production = _deployment(inventory, "overlays/production")
    assert production.cluster == "prod-eu"
    assert production.namespace == "bank"
    assert dict(production.selector) == {"cluster": "prod-eu"}
    assert production.deployed_by == (
        "Application bank-production (argocd/apps/production.yaml:2)",
    )
    assert production.proposed
    staging = _deployment(inventory, "overlays/staging")
    assert (staging.cluster, dict(staging.selector)) == ("staging", {"cluster": "staging"})
    # overlays/dev is deployed only by an Application of another repository: listed, not proposed
    for name in ("overlays/dev", "overlays/sandbox"):
        dep = _deployment(inventory, name)
        assert not dep.proposed and "no Argo CD or Flux object" in dep.reason
        assert workload(inventory, "ledger", name).ref in inventory.not_proposed
    assert "overlays/dev" in inventory.environments  # still listed
    notes = [n.message for n in inventory.notes]
    assert any("deploys git@github.com:example/payments, another repository" in m for m in notes)
    assert workload(inventory, "ledger", "overlays/production").ref not in inventory.not_proposed


def test_undeployed_overlays_are_proposed_when_the_opt_in_file_says_so(repo):
    inventory = discover(_argo_bank(repo), _config(undeployed=True)).inventory
    assert _deployment(inventory, "overlays/dev").proposed
    # dev and sandbox read the same pods (no cluster known, same selector and namespace)
    ledger_dev = workload(inventory, "ledger", "overlays/dev")
    ledger_sandbox = workload(inventory, "ledger", "overlays/sandbox")
    assert ledger_dev.ref not in inventory.not_proposed
    assert "same pods as environment 'overlays/dev'" in inventory.not_proposed[ledger_sandbox.ref]
    assert _deployment(inventory, "overlays/dev").merged == ("overlays/sandbox",)


def test_an_unknown_repository_url_is_assumed_and_said(repo):
    root = _argo_bank(repo)
    inventory = discover(root, RepoConfig()).inventory
    notes = [n.message for n in inventory.notes]
    assert any("this repository's URL is unknown" in m for m in notes)
    # without a known URL the other repository's Application (its path exists here) counts
    assert _deployment(inventory, "overlays/dev").proposed


def test_the_checkout_remote_is_this_repository(repo):
    root = _argo_bank(repo)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(
        ["git", "-C", str(root), "remote", "add", "origin", "git@github.com:Example/bank.git"],
        check=True,
    )
    inventory = discover(root, RepoConfig()).inventory
    assert _deployment(inventory, "overlays/production").proposed
    assert not _deployment(inventory, "overlays/dev").proposed


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
            "overlays/production/kustomization.yaml": _overlay("bank"),
            "overlays/staging/kustomization.yaml": _overlay("bank"),
            "argocd/bank.yaml": appset,
        }
    )
    inventory = discover(root, _config()).inventory
    staging = _deployment(inventory, "overlays/staging")
    assert staging.deployed_by and "ApplicationSet bank" in staging.deployed_by[0]
    # the list element has no path: its Application names nothing; production is excluded
    assert not _deployment(inventory, "overlays/production").proposed
    notes = [n.message for n in inventory.notes]
    assert any("generator clusters is not understood" in m for m in notes)


# ------------------------------------------------------------------------------- Flux

FLUX_KS = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps/{env}
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
  targetNamespace: {namespace}
"""
GIT_REPOSITORY = f"""\
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  url: {URL}
  ref: {{branch: main}}
"""
SYNC = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  path: ./clusters/{env}
  sourceRef: {{kind: GitRepository, name: flux-system}}
"""
HELM_RELEASE = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: vault
  namespace: flux-system
spec:
  interval: 10m
  targetNamespace: bank
  chart:
    spec:
      chart: ./charts/vault
      sourceRef: {kind: GitRepository, name: flux-system}
      valuesFiles:
        - ./charts/vault/values.yaml
        - ./charts/vault/values-production.yaml
"""
CHART = {
    "charts/vault/Chart.yaml": "apiVersion: v2\nname: vault\nversion: 1.0.0\n",
    "charts/vault/values.yaml": "replicaCount: 2\nresources:\n  requests: {cpu: 100m}\n",
    "charts/vault/values-production.yaml": "replicaCount: 4\n",
    "charts/vault/values-staging.yaml": "replicaCount: 1\n",
}


def _flux_bank(repo):
    """A Flux repository: two clusters (bootstrap Kustomizations in ``clusters/*``), each
    applying its ``apps/*`` overlay into the same namespace; a HelmRelease of a chart here."""
    files = {
        **BASE,
        **CHART,
        "apps/production/kustomization.yaml": "resources: [../../base]\n",
        "apps/staging/kustomization.yaml": "resources: [../../base]\n",
        "apps/preview/kustomization.yaml": "resources: [../../base]\n",
        "clusters/production/flux-system/gotk-sync.yaml": GIT_REPOSITORY
        + "---\n"
        + SYNC.format(env="production"),
        "clusters/production/apps.yaml": FLUX_KS.format(env="production", namespace="bank"),
        "clusters/production/vault.yaml": HELM_RELEASE,
        "clusters/staging/apps.yaml": FLUX_KS.format(env="staging", namespace="bank"),
    }
    return repo(files)


def test_flux_kustomizations_and_a_helm_release_decide_the_environments(repo):
    inventory = discover(_flux_bank(repo), RepoConfig()).inventory
    production = _deployment(inventory, "apps/production")
    assert (production.cluster, production.namespace) == ("production", "bank")
    assert workload(inventory, "ledger", "apps/production").ref.namespace == "bank"
    staging = _deployment(inventory, "apps/staging")
    assert (staging.cluster, staging.namespace) == ("staging", "bank")
    # same namespace and workload, other clusters: both proposed for
    assert workload(inventory, "ledger", "apps/staging").ref not in inventory.not_proposed
    assert workload(inventory, "ledger", "apps/production").ref not in inventory.not_proposed
    assert not _deployment(inventory, "apps/preview").proposed
    chart = _deployment(inventory, "charts/vault/values-production.yaml")
    assert chart.deployed_by == ("HelmRelease vault (clusters/production/vault.yaml:2)",)
    assert (chart.cluster, chart.namespace) == ("production", "bank")
    assert not _deployment(inventory, "charts/vault/values-staging.yaml").proposed
    notes = [n.message for n in inventory.notes]
    # the GitRepository is in the checkout and names this repository: nothing assumed
    assert not any("GitRepository flux-system is not in this repository" in m for m in notes)


# ---------------------------------------------------------- two overlays, one namespace


def _two_overlays(repo, extra=None):
    """No GitOps object: ``production`` and ``production-fwi`` deploy the same base into the
    same namespace, so they read the same pods."""
    return repo(
        {
            **BASE,
            "overlays/production/kustomization.yaml": _overlay("bank"),
            "overlays/production-fwi/kustomization.yaml": _overlay("bank", "350m")
            + "commonLabels: {flavour: fwi}\n",
            "overlays/staging/kustomization.yaml": _overlay("bank-staging"),
            **(extra or {}),
        }
    )


def test_two_overlays_in_one_namespace_are_proposed_for_once(repo):
    inventory = discover(_two_overlays(repo), RepoConfig()).inventory
    kept = workload(inventory, "ledger", "overlays/production")
    merged = workload(inventory, "ledger", "overlays/production-fwi")
    assert kept.ref not in inventory.not_proposed
    assert inventory.not_proposed[merged.ref] == (
        "reads the same pods as environment 'overlays/production' "
        "(selector {}, namespace bank), proposed for there"
    )
    assert _deployment(inventory, "overlays/production").merged == ("overlays/production-fwi",)
    assert _deployment(inventory, "overlays/production-fwi").reason == (
        "merged into overlays/production"
    )
    assert workload(inventory, "ledger", "overlays/staging").ref not in inventory.not_proposed


def test_the_environment_a_gitops_object_deploys_is_kept(repo):
    root = _two_overlays(
        repo,
        {
            "argocd/fwi.yaml": _application("fwi", "overlays/production-fwi", "prod", "bank"),
            "argocd/prod.yaml": _application("prod", "overlays/production", "prod", "bank"),
            "argocd/staging.yaml": _application("stg", "overlays/staging", "prod", "bank-staging"),
        },
    )
    inventory = discover(root, _config()).inventory
    assert workload(inventory, "ledger", "overlays/production").ref not in inventory.not_proposed
    assert workload(inventory, "ledger", "overlays/production-fwi").ref in inventory.not_proposed
    # only production-fwi deployed: it is the one kept
    root.joinpath("argocd/prod.yaml").unlink()
    inventory = discover(root, _config(undeployed=True)).inventory
    assert (
        workload(inventory, "ledger", "overlays/production-fwi").ref not in inventory.not_proposed
    )
    assert (
        "same pods as environment 'overlays/production-fwi'"
        in inventory.not_proposed[workload(inventory, "ledger", "overlays/production").ref]
    )


def test_the_opt_in_file_overrides_the_merge_and_the_selector(repo):
    root = _two_overlays(repo)
    config = RepoConfig.model_validate(
        {
            "environments": [
                {"name": "overlays/production"},
                {"name": "overlays/production-fwi", "selector": {"cluster": "fwi"}},
                {"name": "overlays/staging", "propose": False},
            ]
        }
    )
    inventory = discover(root, config).inventory
    assert not inventory.not_proposed.keys() & {
        workload(inventory, "ledger", e).ref
        for e in ("overlays/production", "overlays/production-fwi")
    }
    assert dict(_deployment(inventory, "overlays/production-fwi").selector) == {"cluster": "fwi"}
    assert (
        "propose is false"
        in inventory.not_proposed[workload(inventory, "ledger", "overlays/staging").ref]
    )


# ------------------------------------------------------------------------ the commands


def test_validate_says_where_each_environment_is_deployed_and_what_was_merged(cli, repo):
    root = _argo_bank(
        repo,
        {
            "overlays/production-fwi/kustomization.yaml": _overlay("bank", "350m"),
            "argocd/apps/fwi.yaml": _application(
                "bank-fwi", "overlays/production-fwi", "prod-eu", "bank"
            ),
            ".tortoise-bot.yaml": f"gitops:\n  repository_urls: [{URL}]\n",
        },
    )
    done = cli("validate", str(root))
    assert done.returncode == 0, done.stdout + done.stderr  # notes are not problems
    lines = done.stdout.splitlines()
    assert (
        "  overlays/production: deployed to cluster prod-eu, namespace bank by Application "
        "bank-production (argocd/apps/production.yaml:2); also proposes for "
        "overlays/production-fwi (same pods)"
    ) in lines
    assert (
        "  overlays/production-fwi: deployed to cluster prod-eu, namespace bank by Application "
        "bank-fwi (argocd/apps/fwi.yaml:2); not proposed for: merged into overlays/production"
    ) in lines
    assert any(
        line.startswith("  overlays/dev: not proposed for: no Argo CD or Flux object")
        for line in lines
    )
    assert any(
        line.startswith("note: argocd/apps/other.yaml:2: Application payments") for line in lines
    )


def test_plan_skips_the_merged_copies_and_reads_no_history_for_them(cli, repo, tmp_path):
    root = _two_overlays(repo)
    history = tmp_path / "history.zip"
    assert (
        cli("simulate", "--repo", str(root), "--out", str(history), "--seed", "1").returncode == 0
    )
    done = cli("plan", "--repo", str(root), "--snapshot", str(history), "--format", "json")
    data = json.loads(done.stdout)
    outcomes = {(o["name"], o["environment"]): o for o in data["workloads"]}
    merged = outcomes[("ledger", "overlays/production-fwi")]
    assert merged["status"] == "skipped"
    assert merged["reasons"] == [
        "not proposed for: reads the same pods as environment 'overlays/production' "
        "(selector {}, namespace bank), proposed for there"
    ]
    assert outcomes[("ledger", "overlays/production")]["status"] != "skipped"


def test_history_is_asked_only_for_what_is_proposed_with_the_cluster_selector(repo):
    config = _config()
    inventory = discover(_argo_bank(repo), config).inventory
    requests = {
        (r.ref.name, r.ref.environment): dict(r.selector)
        for r in history_requests(inventory, RepositorySettings(config, BotSettings()))
    }
    assert requests == {
        ("ledger", "overlays/production"): {"cluster": "prod-eu"},
        ("teller", "overlays/production"): {"cluster": "prod-eu"},
        ("ledger", "overlays/staging"): {"cluster": "staging"},
        ("teller", "overlays/staging"): {"cluster": "staging"},
    }


def test_gitops_read_false_keeps_every_overlay_proposed(repo):
    inventory = discover(_argo_bank(repo), _config(read=False)).inventory
    assert not inventory.notes
    assert all(d.proposed and not d.deployed_by for d in inventory.deployments)
    assert workload(inventory, "ledger", "overlays/dev").ref not in inventory.not_proposed
    assert workload(inventory, "ledger", "overlays/production").ref.namespace == "bank"


def test_a_helm_release_in_a_base_two_clusters_include_deploys_to_both(repo):
    root = _flux_bank(repo)
    (root / "clusters/production/vault.yaml").unlink()
    (root / "base/vault.yaml").write_text(HELM_RELEASE)
    (root / "base/kustomization.yaml").write_text(
        "resources: [ledger.yaml, teller.yaml, vault.yaml]\n"
    )
    inventory = discover(root, RepoConfig()).inventory
    chart = _deployment(inventory, "charts/vault/values-production.yaml")
    assert chart.deployed_by == ("HelmRelease vault (base/vault.yaml:2)",)
    # deployed to production and staging (the first gives the selector)
    assert chart.clusters == ("production", "staging")
    assert (chart.cluster, dict(chart.selector)) == ("production", {"cluster": "production"})
    assert not _deployment(inventory, "charts/vault/values-staging.yaml").proposed


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
            "overlays/staging/kustomization.yaml": _overlay("bank-staging"),
            "overlays/production/kustomization.yaml": _overlay("bank"),
            "argocd/bank.yaml": appset,
            "argocd/vault.yaml": vault,
        }
    )
    inventory = discover(root, _config()).inventory
    staging = _deployment(inventory, "overlays/staging")
    assert staging.deployed_by == (
        "Application bank-staging of ApplicationSet bank (argocd/bank.yaml:2)",
    )
    assert (staging.cluster, staging.namespace) == ("staging-eu", "bank-staging")
    assert not _deployment(inventory, "overlays/production").proposed
    chart = _deployment(inventory, "charts/vault/values-production.yaml")
    # the cluster Argo CD runs in: no selector
    assert (chart.cluster, chart.namespace, dict(chart.selector)) == ("", "vault", {})
    assert workload(inventory, "vault", "charts/vault/values-production.yaml").ref.namespace == (
        "vault"
    )
    assert not _deployment(inventory, "charts/vault/values-staging.yaml").proposed


def test_validate_json_carries_the_deployments_and_matches_the_schema(cli, repo):
    root = _two_overlays(repo)
    done = cli("validate", str(root), "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    jsonschema.validate(data, SCHEMA)
    fwi = next(d for d in data["deployments"] if d["environment"] == "overlays/production-fwi")
    assert fwi["reason"] == "merged into overlays/production"
    assert {(n["name"], n["environment"]) for n in data["not_proposed"]} == {
        ("ledger", "overlays/production-fwi"),
        ("teller", "overlays/production-fwi"),
    }
