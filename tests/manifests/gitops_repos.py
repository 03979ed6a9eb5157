"""Hand-made public-style repositories for the GitOps environment tests: a bank application
(a base, overlays) deployed by an Argo CD app of apps, by Flux ``Kustomization``s and a
``HelmRelease``, or by nothing (two overlays in one namespace)."""

from __future__ import annotations

from bot.config.repo import RepoConfig
from bot.model import EnvironmentDeployment, Inventory

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


def overlay(namespace: str, cpu: str = "300m") -> str:
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


def application(name: str, path: str, cluster: str, namespace: str, url: str = URL) -> str:
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


def argo_bank(repo, extra=None):
    """An Argo CD app-of-apps: a root Application reads ``argocd/apps``, whose Applications
    deploy two of the four overlays; ``dev`` and ``sandbox`` are deployed by nothing."""
    files = {
        **BASE,
        "overlays/production/kustomization.yaml": overlay("bank"),
        "overlays/staging/kustomization.yaml": overlay("bank-staging"),
        "overlays/dev/kustomization.yaml": overlay("bank-dev"),
        "overlays/sandbox/kustomization.yaml": overlay("bank-dev"),
        "argocd/root.yaml": application("root", "argocd/apps", "in-cluster", "argocd"),
        "argocd/apps/production.yaml": application(
            "bank-production", "overlays/production", "prod-eu", "bank"
        ),
        "argocd/apps/staging.yaml": application(
            "bank-staging", "overlays/staging", "staging", "bank-staging"
        ),
        "argocd/apps/other.yaml": application(
            "payments", "overlays/dev", "prod-eu", "payments", url="git@github.com:example/payments"
        ),
        **(extra or {}),
    }
    return repo(files)


def gitops_config(**gitops) -> RepoConfig:
    return RepoConfig.model_validate({"gitops": {"repository_urls": [URL], **gitops}})


def deployment_of(inventory: Inventory, name: str) -> EnvironmentDeployment:
    found = inventory.deployment(name)
    assert found is not None, [d.environment for d in inventory.deployments]
    return found


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


def flux_bank(repo):
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


def two_overlays(repo, extra=None):
    """No GitOps object: ``production`` and ``production-fwi`` deploy the same base into the
    same namespace, so they read the same pods."""
    return repo(
        {
            **BASE,
            "overlays/production/kustomization.yaml": overlay("bank"),
            "overlays/production-fwi/kustomization.yaml": overlay("bank", "350m")
            + "commonLabels: {flavour: fwi}\n",
            "overlays/staging/kustomization.yaml": overlay("bank-staging"),
            **(extra or {}),
        }
    )
