"""An edit for one environment leaves every other render of the repository byte-identical.

The repository of each test is the layout that broke the promise: ``deploy/bases/{backend,
frontend}`` shared by the overlays ``dev``, ``staging`` and ``production``, with only
``production`` named by the change, while the other overlays are not configured, configured
with ``update_mode: off``, outside the opt-in ``paths``, or deployed by Flux / Argo CD objects.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bot.config.repo import RepoConfig, load_repo_config
from bot.manifests import PATCH_FILE, discover
from bot.manifests.discovery import Discovery, discover_index
from bot.manifests.kustomize import KUSTOMIZATION_FILES
from tests.conftest import require_binary
from tests.manifests.conftest import edit, lost_comments, snapshot

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  template:
    spec:
      containers:
        - name: {name}
          image: example/{name}:1.0
          resources:
            requests:
              cpu: 100m # measured
              memory: 64Mi
"""
HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {name}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: {name}}}
  minReplicas: 1 # night floor
  maxReplicas: 4
  metrics:
  - type: Resource
    resource:
      name: cpu
      target:
        type: Utilization
        # scale up if usage is above
        # 99% of the requested CPU
        averageUtilization: 99
"""
OVERLAY = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {name}
resources:
  - ../../bases/backend
  - ../../bases/frontend
"""
BASE = "resources:\n  - deployment.yaml\n  - hpa.yaml\n"
OVERLAYS = ("dev", "staging", "production")


def layout(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The shared-base repository (``extra`` adds or replaces files)."""
    files: dict[str, str] = {}
    for app in ("backend", "frontend"):
        files[f"deploy/bases/{app}/kustomization.yaml"] = BASE
        files[f"deploy/bases/{app}/deployment.yaml"] = DEPLOYMENT.format(name=app)
        files[f"deploy/bases/{app}/hpa.yaml"] = HPA.format(name=app)
    for overlay in OVERLAYS:
        files[f"deploy/overlays/{overlay}/kustomization.yaml"] = OVERLAY.format(name=overlay)
    files.update(extra or {})
    return files


def renders(root: Path) -> dict[str, str]:
    """``kubectl kustomize`` of every kustomization directory of the checkout (not components)."""
    kubectl = require_binary("kubectl")
    out = {}
    for kfile in sorted(p for name in KUSTOMIZATION_FILES for p in root.rglob(name)):
        if "kind: Component" in kfile.read_text():
            continue
        directory = kfile.parent
        done = subprocess.run(
            [kubectl, "kustomize", str(directory)], capture_output=True, text=True, check=False
        )
        out[directory.relative_to(root).as_posix()] = done.stdout or done.stderr
    return out


CHANGES = [
    ("backend", "hpa.minReplicas", 3, None),
    ("backend", "requests.cpu", 0.25, "backend"),
    ("backend", "hpa.target.cpu", 73, "backend"),
]


def _assert_only_production_changed(root: Path, before: dict[str, str]) -> None:
    after = renders(root)
    changed = sorted(d for d in before if before[d] != after[d])
    assert changed == ["deploy/overlays/production"], changed
    prod = after["deploy/overlays/production"]
    assert "minReplicas: 3" in prod and "cpu: 250m" in prod and "averageUtilization: 73" in prod


@pytest.fixture
def shared(repo):
    """``make(extra, config)`` -> (root, the renders before any edit)."""
    require_binary("kubectl")

    def make(extra: dict[str, str] | None = None, config: str | None = None):
        files = layout(extra)
        if config is not None:
            files[".tortoise-bot.yaml"] = config
        root = repo(files)
        return root, renders(root)

    return make


PRODUCTION_ONLY = """\
environments:
  - name: production
    path: deploy/overlays/production
"""


@pytest.mark.parametrize(
    "config",
    [
        PRODUCTION_ONLY,
        PRODUCTION_ONLY
        + "  - name: dev\n    path: deploy/overlays/dev\n    update_mode: 'off'\n"
        + "  - name: staging\n    path: deploy/overlays/staging\n    update_mode: 'off'\n",
        "paths:\n  include: ['deploy/bases/**', 'deploy/overlays/production/**']\n",
    ],
    ids=["not-configured", "update-mode-off", "outside-paths"],
)
def test_a_shared_base_edited_for_one_environment_gets_a_patch(shared, config):
    root, before = shared(config=config)
    config_model = load_repo_config(root)
    environment = "production" if "environments" in config else "deploy/overlays/production"
    inventory = discover(root, config_model).inventory
    assert environment in inventory.environments
    result = edit(root, CHANGES, environment=environment, config=config_model)
    assert not result.errors and not result.failed and not result.skipped, result.errors
    assert sorted(f.path for f in result.files) == [
        "deploy/overlays/production/kustomization.yaml",
        f"deploy/overlays/production/{PATCH_FILE}",
    ]
    also = [n.message.split("(also read by ", 1)[1] for n in result.notes if "also" in n.message]
    assert also and all("dev" in a and "staging" in a for a in also), result.notes
    _assert_only_production_changed(root, before)


def test_a_base_no_other_overlay_uses_keeps_its_own_render(shared):
    # dev and staging build nothing: only production includes the bases, yet
    # ``kubectl kustomize deploy/bases/backend`` is a render of its own, and Flux / Argo CD
    # objects deploy the bases directly; the notes say so
    flux = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: backend-canary, namespace: flux-system}
spec:
  path: ./deploy/bases/backend
  sourceRef: {kind: GitRepository, name: fleet}
"""
    argo = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: frontend-canary}
spec:
  source:
    repoURL: https://example.invalid/fleet.git
    path: deploy/bases/frontend
"""
    extra = {
        "clusters/canary/backend.yaml": flux,
        "clusters/canary/frontend.yaml": argo,
        "deploy/overlays/dev/kustomization.yaml": "resources: []\n",
        "deploy/overlays/staging/kustomization.yaml": "resources: []\n",
    }
    root, before = shared(extra)
    changes = [*CHANGES, ("frontend", "requests.memory", 2**27, "frontend")]
    result = edit(root, changes, environment="deploy/overlays/production")
    assert not result.errors and not result.failed, result.errors
    assert not any(f.path.startswith("deploy/bases/") for f in result.files)
    notes = " ".join(n.message for n in result.notes)
    assert (
        "also read by deploy/bases/backend (a kustomization other ones include; "
        "Kustomization backend-canary (clusters/canary/backend.yaml:5))"
    ) in notes
    assert "Application frontend-canary (clusters/canary/frontend.yaml:7)" in notes
    _assert_only_production_changed(root, before)


def test_a_kustomization_that_deploys_the_environment_may_change_with_it(shared):
    # clusters/prod deploys production (and more): editing production's own files changes it
    cluster = "resources:\n  - ../../deploy/overlays/production\n"
    patch = HPA.format(name="backend").replace("minReplicas: 1", "minReplicas: 2")
    overlay = OVERLAY.format(name="production") + "patches:\n  - path: hpa.yaml\n"
    root, before = shared(
        {
            "clusters/prod/kustomization.yaml": cluster,
            "deploy/overlays/production/hpa.yaml": patch,
            "deploy/overlays/production/kustomization.yaml": overlay,
        },
        PRODUCTION_ONLY,
    )
    result = edit(root, CHANGES[:1], environment="production", config=load_repo_config(root))
    assert not result.errors and not result.failed, result.errors
    assert [f.path for f in result.files] == ["deploy/overlays/production/hpa.yaml"]
    after = renders(root)
    assert sorted(d for d in before if before[d] != after[d]) == [
        "clusters/prod",
        "deploy/overlays/production",
    ]


PLAIN_HPA = HPA.format(name="web")


@pytest.fixture
def plain(repo):
    """A plain directory environment ``web`` (``apps``) whose Deployment a kustomization at
    the root also applies; its HPA is its own."""
    require_binary("kubectl")
    return repo(
        {
            ".tortoise-bot.yaml": "environments:\n  - name: web\n    path: apps\n",
            "apps/web.yaml": DEPLOYMENT.format(name="web"),
            "apps/hpa.yaml": PLAIN_HPA,
            "kustomization.yaml": "resources:\n  - apps/web.yaml\n",
        }
    )


def test_a_field_in_a_file_another_render_reads_is_skipped_with_the_reason(plain):
    before = renders(plain)
    config = load_repo_config(plain)
    result = edit(
        plain,
        [("web", "requests.cpu", 0.3, "web"), ("web", "hpa.maxReplicas", 6, None)],
        environment="web",
        config=config,
    )
    assert not result.errors and not result.failed, result.errors
    assert [f.path for f in result.files] == ["apps/hpa.yaml"]
    assert not lost_comments(PLAIN_HPA, result.files[0].new.decode())
    ((skipped, reason),) = [(s.change, s.reason) for s in result.skipped]
    assert (skipped.field, skipped.container) == ("requests.cpu", "web")
    assert reason.startswith("it is written in apps/web.yaml, which other renders read")
    assert "(environment '.')" in reason and "environment 'web' has no overlay" in reason
    assert any(
        n.code == "skipped" and "requests.cpu of web skipped" in n.message for n in result.notes
    )
    assert renders(plain) == before


def test_set_reports_a_skipped_value_and_writes_nothing_for_it(cli, plain):
    files = snapshot(plain)
    args = ["--write", "--environment", "web", "Deployment/web", "web.requests.cpu=300m"]
    done = cli("set", "--repo", str(plain), *args)
    assert done.returncode == 1 and not done.stdout
    assert (
        "tortoise-bot: requests.cpu of web skipped: it is written in apps/web.yaml" in done.stderr
    )
    assert snapshot(plain) == files


def test_verification_renders_every_other_root_that_reads_an_edited_file(shared, monkeypatch):
    # were the planner to write the shared base, the proof would catch it and write nothing
    root, _ = shared(config=PRODUCTION_ONLY)
    files = snapshot(root)
    monkeypatch.setattr(Discovery, "exclusive", lambda self, file, environment: True)
    result = edit(root, CHANGES[:1], environment="production", config=load_repo_config(root))
    assert result.failed and not result.files
    message = " ".join(e.message for e in result.errors)
    assert "would change the render of deploy/bases/backend" in message
    assert "its kubectl kustomize output changes" in message
    assert snapshot(root) == files


def test_every_render_knows_the_files_its_build_reads(repo):
    kustomization = """\
resources: [app.yaml, ../../shared]
components: [../../components/sidecar]
patches:
  - path: patch.yaml
transformers: [labels.yaml]
configMapGenerator:
  - name: conf
    files: [app.conf, extra=extra.conf]
    envs: [app.env]
helmCharts:
  - name: web
    valuesFile: values.yaml
"""
    argo = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: plain}
spec:
  sources:
    - path: plain
      directory: {recurse: false}
"""
    root = repo(
        {
            "apps/web/kustomization.yaml": kustomization,
            **{f"apps/web/{n}": "a: 1\n" for n in ("app.yaml", "patch.yaml", "labels.yaml")},
            **{f"apps/web/{n}": "x\n" for n in ("app.conf", "extra.conf", "app.env")},
            "apps/web/values.yaml": "replicaCount: 1\n",
            "shared/kustomization.yaml": "resources: [cm.yaml]\n",
            "shared/cm.yaml": "a: 1\n",
            "components/sidecar/kustomization.yaml": "kind: Component\nresources: [s.yaml]\n",
            "components/sidecar/s.yaml": "a: 1\n",
            "argo.yaml": argo,
            "plain/one.yaml": "a: 1\n",
            "plain/deeper/two.yaml": "a: 1\n",
        }
    )
    roots = {r.directory: r for r in discover_index(root, RepoConfig()).renders.roots}
    assert sorted(roots) == ["apps/web", "plain", "shared"]  # a Component is no render
    web = roots["apps/web"]
    assert web.files == {
        f"apps/web/{n}"
        for n in (
            "kustomization.yaml",
            *("app.yaml", "patch.yaml", "labels.yaml", "values.yaml"),
            *("app.conf", "extra.conf", "app.env"),
        )
    } | {"shared/kustomization.yaml", "shared/cm.yaml"} | {
        "components/sidecar/kustomization.yaml",
        "components/sidecar/s.yaml",
    }
    assert web.includes == {"apps/web", "shared", "components/sidecar"}
    assert roots["shared"].why == "a kustomization other ones include"
    assert roots["plain"].files == {"plain/one.yaml"}  # the Application does not recurse
    assert roots["plain"].why == "Application plain (argo.yaml:6)"
