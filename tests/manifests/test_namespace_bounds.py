"""What a namespace and a pod declare that bounds proposals (``bot/manifests/namespace_bounds.py``,
``bot/manifests/runtime.py``): LimitRange, ResourceQuota and PDB objects matched to workloads by
namespace (Kustomize and raw YAML), runtime memory settings and extended resources."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.config.repo import RepoConfig
from bot.manifests import discover
from bot.manifests.runtime import go_bytes, jvm_bytes, jvm_options, runtime_memory
from bot.model import GIB, MIB, FieldId, ResourceValues, RuntimeMemory
from tests.conftest import require_binary
from tests.manifests.conftest import workload

BOUNDS = Path(__file__).parent / "bounds"
"""Hand-made manifests: namespace ``payments`` with a LimitRange and a ResourceQuota in a
Kustomize base, a Spring Boot Deployment (``JAVA_TOOL_OPTIONS``), a Go service (``GOMEMLIMIT``),
two PDBs and a GPU inference Deployment; ``overlays/prod`` builds it."""


@pytest.fixture
def overlay(tmp_path: Path) -> Path:
    require_binary("kubectl")
    root = tmp_path / "kustomize"
    shutil.copytree(BOUNDS, root)
    return root


def test_kustomize_bounds_reach_every_workload_of_the_namespace(overlay):
    inventory = discover(overlay, RepoConfig()).inventory
    assert not inventory.errors
    ledger = workload(inventory, "ledger")
    assert ledger.ref.namespace == "payments"
    limits = ledger.bounds.limit_range
    assert limits is not None
    assert limits.name == "container-bounds (base/namespace.yaml:3)"
    assert limits.min == ResourceValues(0.05, 64 * MIB)
    assert limits.max == ResourceValues(2.0, 3 * GIB)
    assert limits.max_ratio == {"cpu": 4.0}
    assert limits.default_limit == ResourceValues(0.5, 512 * MIB)
    assert limits.default_request == ResourceValues(0.1, 256 * MIB)
    assert limits.pod_max == ResourceValues(3.0, 4 * GIB)
    (quota,) = ledger.bounds.quotas
    assert (quota.name, quota.where) == ("compute", "base/namespace.yaml:29")
    assert quota.hard == {
        FieldId.REQUESTS_CPU: 6.0,
        FieldId.REQUESTS_MEMORY: 12.0 * GIB,
        FieldId.LIMITS_MEMORY: 24.0 * GIB,
    }
    for name in ("rates", "inference"):
        assert workload(inventory, name).bounds.quotas == (quota,)
    # each PDB selects its own workload's pods only
    assert [p.name for p in ledger.bounds.pdbs] == ["ledger"]
    assert ledger.bounds.pdbs[0].min_available == 3
    rates = workload(inventory, "rates")
    assert [(p.name, p.min_available) for p in rates.bounds.pdbs] == [("rates", "50%")]
    assert workload(inventory, "inference").bounds.pdbs == ()


def test_runtime_settings_and_extended_resources_are_read(overlay):
    inventory = discover(overlay, RepoConfig()).inventory
    ledger = workload(inventory, "ledger").container("ledger")
    assert ledger.runtime == (
        RuntimeMemory("initial_heap", "env JAVA_TOOL_OPTIONS", "-Xms512m", 512.0 * MIB),
        RuntimeMemory("max_heap", "env JAVA_TOOL_OPTIONS", "-Xmx1536m", 1536.0 * MIB),
    )
    rates = workload(inventory, "rates")
    assert rates.container("rates").runtime == (
        RuntimeMemory("gomemlimit", "env GOMEMLIMIT", "GOMEMLIMIT=900MiB", 900.0 * MIB),
    )
    assert rates.container("metrics-agent").runtime == ()
    server = workload(inventory, "inference").container("server")
    assert server.extended == {"nvidia.com/gpu": 1.0}
    assert server.runtime == ()


def test_a_bad_quantity_is_an_error_at_its_line_and_the_object_is_left_out(overlay):
    path = overlay / "base" / "namespace.yaml"
    path.write_text(path.read_text().replace('requests.cpu: "6"', "requests.cpu: six"))
    inventory = discover(overlay, RepoConfig()).inventory
    (error,) = inventory.errors
    assert (error.file, error.line) == ("base/namespace.yaml", 35)
    assert "ResourceQuota compute: spec.hard.requests.cpu" in error.message
    ledger = workload(inventory, "ledger")
    assert ledger.bounds.quotas == ()
    assert ledger.bounds.limit_range is not None  # the rest is still read


def test_raw_namespace_objects_apply_to_a_helm_environment(tmp_path: Path):
    """A chart's workloads take the LimitRange of a raw ``namespaces/`` file (the ``default``
    environment) of their namespace."""
    root = tmp_path / "repo"
    (root / "charts" / "web").mkdir(parents=True)
    (root / "namespaces").mkdir()
    (root / "charts" / "web" / "Chart.yaml").write_text(
        "apiVersion: v2\nname: web\nversion: 1.0.0\n"
    )
    (root / "charts" / "web" / "values.yaml").write_text(
        "resources:\n  requests:\n    cpu: 100m\n    memory: 128Mi\n"
    )
    (root / "charts" / "web" / "values-prod.yaml").write_text("replicaCount: 3\n")
    (root / "namespaces" / "default.yaml").write_text(
        "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: lr\nspec:\n  limits:\n"
        "    - type: Container\n      max:\n        cpu: '1'\n"
    )
    inventory = discover(root, RepoConfig()).inventory
    web = next(w for w in inventory.workloads if w.ref.environment != "default")
    assert web.bounds.limit_range is not None
    assert web.bounds.limit_range.max == ResourceValues(1.0, None)
    assert web.bounds.pdbs == ()  # no pod template to match


@pytest.mark.parametrize(
    ("text", "want"),
    [("768m", 768 * MIB), ("2G", 2 * GIB), ("1048576", 1048576), ("64k", 65536), ("1.5g", None)],
)
def test_jvm_sizes(text, want):
    assert jvm_bytes(text) == want


@pytest.mark.parametrize(
    ("text", "want"),
    [("900MiB", 900 * MIB), ("1GiB", GIB), ("1073741824", GIB), ("512B", 512), ("off", None)],
)
def test_go_sizes(text, want):
    assert go_bytes(text) == want


def test_jvm_options_in_a_shell_command_and_max_ram_percentage():
    found = list(jvm_options("exec java -XX:MaxRAMPercentage=75.0 -Xmx1g -jar app.jar", "args"))
    assert found == [
        RuntimeMemory("max_ram_percentage", "args", "-XX:MaxRAMPercentage=75.0", 75.0),
        RuntimeMemory("max_heap", "args", "-Xmx1g", float(GIB)),
    ]


def test_value_from_is_a_setting_without_a_value():
    item = {
        "name": "app",
        "env": [
            {
                "name": "JDK_JAVA_OPTIONS",
                "valueFrom": {"configMapKeyRef": {"name": "jvm", "key": "opts"}},
            },
            {
                "name": "GOMEMLIMIT",
                "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}},
            },
        ],
    }
    assert runtime_memory(item) == (
        RuntimeMemory("max_heap", "env JDK_JAVA_OPTIONS", "valueFrom", None),
        RuntimeMemory("gomemlimit", "env GOMEMLIMIT", "valueFrom", None),
    )
