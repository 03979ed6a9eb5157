"""Edits in overlays built from Kustomize components that patch the same Deployments: every value
is placed where it renders, proven with real ``kubectl kustomize``, and an edit no placement can
render is refused with kustomize's reason, the object's file and line, and what to do."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bot.config.repo import RepoConfig
from bot.manifests import PATCH_FILE, discover
from tests.conftest import require_binary
from tests.manifests.components_layout import COMPONENT, FWI, LAYOUT
from tests.manifests.conftest import edit, snapshot, workload


def rendered(root: Path, overlay: str) -> str:
    """What ``kubectl kustomize`` prints for ``overlay`` (it must build)."""
    done = subprocess.run(
        [require_binary("kubectl"), "kustomize", str(root / overlay)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_values_are_located_where_the_components_write_them(repo):
    require_binary("kubectl")
    root = repo(LAYOUT)
    inventory = discover(root, RepoConfig()).inventory
    assert not inventory.errors, inventory.errors
    user = workload(inventory, "userservice", FWI)
    # the sidecar a component adds comes first, as kubectl renders it
    assert [c.name for c in user.containers] == ["cloud-sql-proxy", "userservice"]
    assert user.container("userservice").locations["requests.cpu"].file == "base/userservice.yaml"
    assert (
        user.container("cloud-sql-proxy").locations["requests.cpu"].file
        == "components/proxy/add-proxy.yaml"
    )
    assert user.locations["replicas"].file == "components/production/production.yaml"
    contacts = workload(inventory, "contacts", FWI)
    assert [c.name for c in contacts.containers] == ["contacts", "cloud-sql-proxy"]
    assert contacts.container("contacts").locations["limits.memory"].file == (
        f"{FWI}/contacts.yaml"
    )


def test_production_fwi_edit_goes_where_it_renders(repo):
    kubectl_render = rendered  # the proof below is kubectl's own output
    root = repo(LAYOUT)
    others = {o: kubectl_render(root, o) for o in ("overlays/production", "overlays/development")}
    result = edit(
        root,
        [
            ("userservice", "requests.cpu", 0.3, "userservice"),
            ("userservice", "requests.cpu", 0.2, "cloud-sql-proxy"),
            ("userservice", "replicas", 3, None),
            ("contacts", "limits.memory", 2**30, "contacts"),
        ],
        environment=FWI,
    )
    assert not result.errors, result.errors
    assert not result.failed
    assert sorted(f.path for f in result.files) == [
        f"{FWI}/contacts.yaml",
        f"{FWI}/kustomization.yaml",
        f"{FWI}/{PATCH_FILE}",
    ]
    kustomization = (root / FWI / "kustomization.yaml").read_text()
    assert kustomization == LAYOUT[f"{FWI}/kustomization.yaml"] + f"- path: {PATCH_FILE}\n"
    patch = (root / FWI / PATCH_FILE).read_text()
    assert patch.startswith("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: userservice")
    assert (root / FWI / "contacts.yaml").read_text() == str(
        LAYOUT[f"{FWI}/contacts.yaml"]
    ).replace("memory: 512Mi", "memory: 1Gi")
    # every component, shared or not, is untouched: a target patch writes every Deployment
    assert all((root / p).read_text() == LAYOUT[p] for p in LAYOUT if p.startswith("components/"))
    after = discover(root, RepoConfig()).inventory
    assert not after.errors, after.errors
    user = workload(after, "userservice", FWI)
    assert user.replicas == 3
    assert user.container("userservice").requests.cpu_cores == 0.3
    assert user.container("cloud-sql-proxy").requests.cpu_cores == 0.2
    contacts = workload(after, "contacts", FWI)
    assert contacts.replicas == 2
    assert contacts.container("cloud-sql-proxy").requests.cpu_cores == 0.1
    assert contacts.container("contacts").limits.memory_bytes == 2**30
    assert "image: userservice:2" in kubectl_render(root, FWI)  # the overlay's own JSON 6902
    assert {o: kubectl_render(root, o) for o in others} == others


def test_a_component_only_this_overlay_reads_is_edited_in_place(repo):
    require_binary("kubectl")
    sizing = (
        "kind: Deployment\nmetadata:\n  name: ignored-by-kustomize\nspec:\n  template:\n"
        "    spec:\n      containers:\n      - name: userservice\n        resources:\n"
        "          requests:\n            cpu: 250m # sized for production\n"
    )
    files = {
        **LAYOUT,
        "components/sizing/kustomization.yaml": (
            COMPONENT
            + "patches:\n- path: sizing.yaml\n  target:\n    kind: Deployment\n"
            + "    name: userservice\n"
        ),
        "components/sizing/sizing.yaml": sizing,
        "overlays/sized/kustomization.yaml": (
            "resources:\n- ../../base\ncomponents:\n- ../../components/proxy\n"
            "- ../../components/sizing\n"
        ),
    }
    root = repo(files)
    result = edit(
        root, [("userservice", "requests.cpu", 0.5, "userservice")], environment="overlays/sized"
    )
    assert not result.errors, result.errors
    assert [f.path for f in result.files] == ["components/sizing/sizing.yaml"]
    assert (root / "components/sizing/sizing.yaml").read_text() == sizing.replace(
        "cpu: 250m", "cpu: 500m"
    )
    after = workload(discover(root, RepoConfig()).inventory, "userservice", "overlays/sized")
    assert after.container("userservice").requests.cpu_cores == 0.5
    assert "cpu: 500m" in rendered(root, "overlays/sized")


def test_an_edit_no_placement_renders_is_refused_with_the_reason_and_what_to_do(repo):
    require_binary("kubectl")
    files = {
        **LAYOUT,
        # a transformer the replay does not model renames every object after the patches ran
        f"{FWI}/prefix.yaml": (
            "apiVersion: builtin\nkind: PrefixSuffixTransformer\nmetadata:\n  name: prefix\n"
            "prefix: bank-\nfieldSpecs:\n- path: metadata/name\n"
        ),
    }
    files[f"{FWI}/kustomization.yaml"] = files[f"{FWI}/kustomization.yaml"] + (
        "transformers:\n- prefix.yaml\n"
    )
    root = repo(files)
    before = snapshot(root)
    result = edit(root, [("bank-userservice", "requests.cpu", 0.3, "userservice")], environment=FWI)
    assert [str(r) for r in result.failed] == [f"Deployment/default/bank-userservice@{FWI}"]
    assert result.files == ()
    assert snapshot(root) == before
    (error,) = result.errors
    assert (error.file, error.line) == ("base/userservice.yaml", 1)
    assert "kubectl kustomize failed: no resource matches strategic merge patch" in error.message
    assert "unknown field" not in error.message  # never a patch inside the kustomization
    assert f"To do: make the proposed change by hand in a patch of {FWI}" in error.message
