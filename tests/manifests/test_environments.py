"""What the opt-in file's ``environments`` name: plain directories, the raw YAML's namespace,
and entries that name nothing (an error at their line, never silence)."""

from __future__ import annotations

from bot.config.repo import RepoConfig, load_repo_config
from bot.manifests import discover
from tests.manifests.conftest import edit, workload

PLAIN = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  template:
    spec:
      containers:
        - name: app
          resources:
            requests: {{cpu: 250m, memory: 512Mi}}
"""
HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: cart}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: cart}
  maxReplicas: 4
"""
OPT_IN = """\
# where things run
environments:
  - name: default
    namespace: boutique
  - name: boutique
    path: apps/boutique
    namespace: shop
  - name: gone
    path: apps/nothing
"""


def _boutique(repo):
    return repo(
        {
            ".tortoise-bot.yaml": OPT_IN,
            "apps/boutique/cart.yaml": PLAIN.format(name="cart"),
            "apps/boutique/nested/hpa.yaml": HPA,
            "apps/boutique/overlay/kustomization.yaml": "resources: [web.yaml]\n",
            "apps/boutique/overlay/web.yaml": PLAIN.format(name="web"),
            "other/pinned.yaml": PLAIN.format(name="pinned").replace(
                "name: pinned", "name: pinned\n  namespace: ops"
            ),
        }
    )


def test_a_plain_directory_is_an_environment_with_its_namespace(repo):
    root = _boutique(repo)
    inventory = discover(root, load_repo_config(root)).inventory
    cart = workload(inventory, "cart")
    assert str(cart.ref) == "Deployment/shop/cart@boutique"
    # an HPA in a subdirectory without a namespace targets the workload in the same namespace
    assert cart.hpa is not None and cart.hpa.max_replicas == 4
    # the kustomization below the directory is an overlay of its own, not part of it
    assert "apps/boutique/overlay" in inventory.environments
    assert str(workload(inventory, "web", "apps/boutique/overlay").ref).startswith(
        "Deployment/default/web@"
    )


def test_the_raw_environment_takes_the_namespace_of_its_entry(repo):
    root = _boutique(repo)
    inventory = discover(root, load_repo_config(root)).inventory
    assert str(workload(inventory, "pinned").ref) == "Deployment/ops/pinned@default"
    assert "cart" not in {w.ref.name for w in inventory.workloads if w.ref.environment == "default"}
    # without the entry the same YAML lands in the namespace kubectl would use
    bare = discover(root, RepoConfig()).inventory
    assert str(workload(bare, "cart").ref) == "Deployment/default/cart@default"


def test_an_environment_naming_nothing_is_an_error_at_its_line(repo):
    root = _boutique(repo)
    inventory = discover(root, load_repo_config(root)).inventory
    errors = [e for e in inventory.errors if "gone" in e.message]
    assert [(e.file, e.line) for e in errors] == [(".tortoise-bot.yaml", 8)]
    assert "'apps/nothing' is not a kustomization directory" in errors[0].message


def test_an_edit_in_a_plain_directory_environment(repo):
    root = _boutique(repo)
    config = load_repo_config(root)
    result = edit(
        root, [("cart", "requests.cpu", 0.3, "app")], environment="boutique", config=config
    )
    assert not result.errors and [f.path for f in result.files] == ["apps/boutique/cart.yaml"]
    assert "cpu: 300m" in (root / "apps/boutique/cart.yaml").read_text()


def test_validate_shows_namespaces_units_and_each_error_once(cli, repo):
    root = _boutique(repo)
    (root / "broken.yaml").write_text("a: [1, 2\n")
    done = cli("validate", str(root))
    assert done.returncode == 0  # a finding in the repository is a warning
    assert cli("validate", "--strict", str(root)).returncode == 1  # linting in CI
    out = done.stdout
    assert "boutique (namespace shop)" in out and "default (namespace boutique)" in out
    assert "Deployment/shop/cart@boutique  replicas=- hpa min=- max=4" in out
    assert "  app: requests cpu=250m memory=512Mi  limits cpu=- memory=-" in out
    assert "None" not in out and "536870912" not in out
    assert out.count("broken.yaml") == 1
    assert out.count(".tortoise-bot.yaml:8: environment 'gone'") == 1
    # a broken opt-in file is reported once (by the config check), not again as a manifest
    (root / ".tortoise-bot.yaml").write_text("environments: [\n")
    bad = cli("validate", str(root))
    assert bad.returncode == 2
    assert bad.stdout.count(".tortoise-bot.yaml") == 1, bad.stdout
