"""Every bad input of the issue: a clear error naming file and line, the rest still processed,
and no file left changed."""

from __future__ import annotations

import os

from bot.config.repo import RepoConfig
from bot.manifests import apply_changes, discover
from bot.model import FieldChange, FieldId
from tests.conftest import require_binary
from tests.manifests.conftest import edit, snapshot, workload
from tests.manifests.test_editor import DEPLOYMENT


def errors_of(inventory):
    return {(e.file, e.line): e.message for e in inventory.errors}


def test_unparsable_manifest(repo):
    root = repo(
        {
            "good.yaml": DEPLOYMENT,
            "bad.yaml": "apiVersion: v1\nkind: Service\nspec:\n  ports: [80\n",
        }
    )
    inventory = discover(root, RepoConfig()).inventory
    assert [w.ref.name for w in inventory.workloads] == ["web"]
    (file, line), message = next(iter(errors_of(inventory).items()))
    assert file == "bad.yaml" and line >= 4 and "invalid YAML" in message


def test_duplicate_keys(repo):
    text = DEPLOYMENT.replace("  replicas: 3\n", "  replicas: 3\n  replicas: 4\n")
    root = repo({"dup.yaml": text, "other.yaml": DEPLOYMENT.replace("name: web ", "name: other ")})
    inventory = discover(root, RepoConfig()).inventory
    assert [w.ref.name for w in inventory.workloads] == ["other"]
    assert errors_of(inventory) == {("dup.yaml", 9): "duplicate key 'replicas' (first at line 8)"}


def test_alias_bomb(repo):
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    root = repo({"bomb.yaml": "\n".join(lines) + "\n", "web.yaml": DEPLOYMENT})
    inventory = discover(root, RepoConfig()).inventory
    assert [w.ref.name for w in inventory.workloads] == ["web"]
    (((file, line), message),) = errors_of(inventory).items()
    assert file == "bomb.yaml" and line > 1 and "alias bomb" in message


def test_file_too_large_and_not_utf8(repo):
    root = repo(
        {
            "big.yaml": "# padding\n" * 20_000,
            "latin1.yaml": "a: caf\xe9\n".encode("latin-1"),
            "web.yaml": DEPLOYMENT,
        }
    )
    config = RepoConfig.model_validate({"paths": {"max_file_bytes": 100_000}})
    inventory = discover(root, config).inventory
    assert [w.ref.name for w in inventory.workloads] == ["web"]
    errors = errors_of(inventory)
    assert "larger than the limit of 100000" in errors[("big.yaml", 0)]
    assert "not UTF-8" in errors[("latin1.yaml", 1)]


def test_symlink_leading_outside_the_repository(repo, tmp_path):
    outside = tmp_path / "secret.yaml"
    outside.write_text(DEPLOYMENT.replace("name: web ", "name: stolen "))
    root = repo({"web.yaml": DEPLOYMENT})
    os.symlink(outside, root / "link.yaml")
    os.symlink(root / "web.yaml", root / "inside.yaml")  # inside: fine (same object twice)
    inventory = discover(root, RepoConfig()).inventory
    assert "stolen" not in [w.ref.name for w in inventory.workloads]
    assert errors_of(inventory)[("link.yaml", 0)] == "symlink leads outside the repository"


def test_kustomization_that_does_not_build(repo):
    require_binary("kubectl")
    root = repo(
        {
            "base/kustomization.yaml": "resources:\n- web.yaml\n",
            "base/web.yaml": DEPLOYMENT,
            "prod/kustomization.yaml": "resources:\n- ../base\n- missing.yaml\n",
            "dev/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: ghost.yaml\n",
            "dev/ghost.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ghost\n",
            "ok/kustomization.yaml": "resources:\n- ../base\n",
        }
    )
    inventory = discover(root, RepoConfig()).inventory
    assert inventory.environments == ("ok",)
    assert [str(w.ref) for w in inventory.workloads] == ["Deployment/shop/web@ok"]
    errors = errors_of(inventory)
    assert "resource 'missing.yaml' not found" in errors[("prod/kustomization.yaml", 3)]
    assert "kubectl kustomize failed" in errors[("dev/kustomization.yaml", 4)]
    assert "ghost" in errors[("dev/kustomization.yaml", 4)]


def test_hpa_pointing_at_a_missing_workload(repo):
    hpa = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: lost
  namespace: shop
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: wbe
  maxReplicas: 3
"""
    root = repo({"web.yaml": DEPLOYMENT, "hpa.yaml": hpa})
    inventory = discover(root, RepoConfig()).inventory
    assert workload(inventory, "web").hpa is None
    assert (
        "targets Deployment shop/wbe, which is not declared"
        in errors_of(inventory)[("hpa.yaml", 10)]
    )


def test_unknown_container_fails_only_that_workload(repo):
    root = repo(
        {"web.yaml": DEPLOYMENT, "api.yaml": DEPLOYMENT.replace("name: web ", "name: api ")}
    )
    config = RepoConfig()
    discovery = discover(root, config)
    inventory = discovery.inventory
    web, api = workload(inventory, "web").ref, workload(inventory, "api").ref
    result = apply_changes(
        root,
        discovery,
        [
            FieldChange(web, FieldId.REQUESTS_CPU, 1, container="sidecar"),
            FieldChange(api, FieldId.REQUESTS_CPU, 1, container="app"),
        ],
        config,
        write=True,
    )
    assert result.failed == (web,)
    assert "has no container 'sidecar' (containers: app)" in result.errors[0].message
    assert result.errors[0].file == "web.yaml"
    assert [f.path for f in result.files] == ["api.yaml"]
    assert (root / "web.yaml").read_text() == DEPLOYMENT


def test_value_set_by_an_unmodelled_transformer_is_not_edited(repo):
    require_binary("kubectl")
    transformer = """\
apiVersion: builtin
kind: PatchTransformer
metadata:
  name: bump
patch: '[{"op": "replace", "path": "/spec/replicas", "value": 7}]'
target:
  kind: Deployment
"""
    root = repo(
        {
            "app/kustomization.yaml": "resources:\n- web.yaml\ntransformers:\n- bump.yaml\n",
            "app/web.yaml": DEPLOYMENT,
            "app/bump.yaml": transformer,
        }
    )
    inventory = discover(root, RepoConfig()).inventory
    web = workload(inventory, "web")
    assert web.replicas == 7 and "replicas" not in web.locations
    before = snapshot(root)
    result = edit(root, [("web", "replicas", 9, None)])
    assert result.failed and "does not model" in result.errors[0].message
    assert snapshot(root) == before


def test_nothing_is_written_when_verification_fails(repo):
    root = repo({"web.yaml": DEPLOYMENT, "hpa.yaml": "not: [valid\n"})
    before = snapshot(root)
    result = edit(root, [("web", "hpa.maxReplicas", 4, None)])
    assert result.failed and "no HorizontalPodAutoscaler" in result.errors[0].message
    assert snapshot(root) == before
