"""Objects that run pods but are of a kind the bot does not right-size: every one is listed
with its reason, file and line (raw YAML, a Kustomize overlay), none is ignored in silence, and
objects that run no pods are not listed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import pytest

from bot.config.repo import RepoConfig
from bot.manifests import discover
from bot.manifests.kinds import is_workload
from bot.manifests.sources import Obj
from bot.manifests.unsupported import POD_SPEC_PATHS, pod_spec
from bot.model import Inventory
from tests.conftest import PROJECT, require_binary

HERE = Path(__file__).parent / "unsupported"
"""``base/others.yaml``: a ReplicationController, a ReplicaSet, a Job, a CronJob, a Knative
Service, an OpenKruise CloneSet and a Pod, beside a Service, a ConfigMap and a PodTemplate (no
pods run); ``base/web.yaml``: a Deployment; ``overlays/prod``: namespace ``shop``, prefix
``prod-``."""

KIND_LINES = {
    "ReplicationController": ("v1", 4),
    "ReplicaSet": ("apps/v1", 23),
    "Job": ("batch/v1", 45),
    "CronJob": ("batch/v1", 59),
    "Service": ("serving.knative.dev/v1", 75),
    "CloneSet": ("apps.kruise.io/v1alpha1", 88),
    "Pod": ("v1", 108),
}
"""Each pod-running object of ``others.yaml``: its apiVersion and the line of its ``kind:``."""

INVENTORY_SCHEMA = json.loads((PROJECT / "docs" / "schemas" / "inventory.schema.json").read_text())


def _expected(kinds: dict[str, tuple[str, int]]) -> dict[str, tuple[str, int]]:
    """The kinds ``is_workload`` does not accept (Jobs and CronJobs may become workloads)."""
    return {
        kind: (api, line)
        for kind, (api, line) in kinds.items()
        if not is_workload(Obj({"apiVersion": api, "kind": kind}, None, None))  # type: ignore[arg-type]
    }


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    root = tmp_path / "raw"
    shutil.copytree(HERE / "base", root)
    (root / "kustomization.yaml").unlink()
    return root


def _skipped(inventory: Inventory) -> dict[str, tuple[str, str, int, str]]:
    return {
        s.ref.kind: (s.api_version, s.location.file, s.location.line, s.reason)
        for s in inventory.skipped
    }


def test_raw_objects_of_other_kinds_are_listed_with_file_and_line(raw: Path) -> None:
    inventory = discover(raw, RepoConfig()).inventory
    supported = sorted({"Deployment", *(set(KIND_LINES) - set(_expected(KIND_LINES)))})
    assert sorted(w.ref.kind for w in inventory.workloads) == supported
    skipped = _skipped(inventory)
    expected = _expected(KIND_LINES)
    assert {"ReplicationController", "ReplicaSet", "Service", "CloneSet", "Pod"} <= set(expected)
    assert set(skipped) == set(expected)
    for kind, (api, line) in expected.items():
        assert skipped[kind] == (api, "others.yaml", line, f"unsupported kind {api}/{kind}")
    assert all(s.ref.namespace == "default" for s in inventory.skipped)
    assert not inventory.errors


def test_an_overlay_lists_them_in_its_namespace_at_the_base_line() -> None:
    require_binary("kubectl")
    inventory = discover(HERE, RepoConfig()).inventory
    prod = [s for s in inventory.skipped if s.ref.environment == "overlays/prod"]
    expected = _expected(KIND_LINES)
    assert {s.ref.kind for s in prod} == set(expected)
    for s in prod:
        assert s.ref.namespace == "shop" and s.ref.name.startswith("prod-")
        assert (s.location.file, s.location.line) == ("base/others.yaml", expected[s.ref.kind][1])
    assert not inventory.errors


def test_validate_shows_them_in_table_and_schema_valid_json(cli, raw: Path) -> None:
    result = cli("validate", str(raw), "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, INVENTORY_SCHEMA)
    rs = next(s for s in doc["skipped"] if s["kind"] == "ReplicaSet")
    assert rs == {
        "kind": "ReplicaSet",
        "namespace": "default",
        "name": "frontend",
        "environment": "default",
        "apiVersion": "apps/v1",
        "file": "others.yaml",
        "line": 23,
        "reason": "unsupported kind apps/v1/ReplicaSet",
    }
    text = cli("validate", str(raw)).stdout
    assert (
        "CloneSet/default/sample@default skipped: unsupported kind "
        "apps.kruise.io/v1alpha1/CloneSet (others.yaml:88)" in " ".join(text.split())
    )


def test_a_bad_skipped_entry_fails_the_schema() -> None:
    """The schema holds the entries to their shape: a reason of another form is refused."""
    doc = {
        "environments": [],
        "workloads": [],
        "errors": [],
        "skipped": [
            {
                "kind": "Pod",
                "namespace": "default",
                "name": "x",
                "environment": "default",
                "apiVersion": "v1",
                "file": "a.yaml",
                "line": 1,
                "reason": "ignored",
            }
        ],
    }
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, INVENTORY_SCHEMA)


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}}, POD_SPEC_PATHS[0]),
        (
            {"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{}]}}}}}},
            POD_SPEC_PATHS[1],
        ),
        ({"spec": {"containers": [{"name": "a"}]}}, POD_SPEC_PATHS[2]),
        ({"spec": {"containers": []}}, None),
        ({"spec": {"template": "text"}}, None),
        ({"template": {"spec": {"containers": [{"name": "a"}]}}}, None),
        ({"spec": None}, None),
    ],
)
def test_pod_spec_is_found_at_the_known_paths_only(data, path) -> None:
    found = pod_spec(data)
    assert (found[0] if found else None) == path
