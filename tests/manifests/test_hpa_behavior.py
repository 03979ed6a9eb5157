"""An HPA's ``spec.behavior`` read by discovery (each field, its defaults, its errors with file
and line), and two HPAs on one workload reported, neither edited."""

from __future__ import annotations

import json
from dataclasses import replace

import jsonschema  # type: ignore[import-untyped]
import pytest

from bot.config.repo import RepoConfig
from bot.manifests import discover
from bot.model import DEFAULT_BEHAVIOR, HpaBehavior, ScalingPolicy, ScalingRules
from tests.manifests.conftest import workload
from tests.manifests.test_commands import HPA, SCHEMA
from tests.manifests.test_editor import DEPLOYMENT


def _behavior(repo, behavior: str) -> tuple[HpaBehavior, list[tuple[str, int, str]]]:
    """The behaviour read from ``HPA`` with ``behavior`` (YAML under ``spec:``) added, and the
    errors of discovery."""
    root = repo({"web.yaml": DEPLOYMENT, "hpa.yaml": HPA + "  behavior:\n" + behavior})
    inventory = discover(root, RepoConfig()).inventory
    web = workload(inventory, "web")
    assert web.hpa is not None
    return web.hpa.behavior, [(e.file, e.line, e.message) for e in inventory.errors]


def test_an_hpa_without_behavior_has_the_defaults(repo):
    root = repo({"web.yaml": DEPLOYMENT, "hpa.yaml": HPA})
    web = workload(discover(root, RepoConfig()).inventory, "web")
    assert web.hpa is not None and web.hpa.behavior == DEFAULT_BEHAVIOR
    assert DEFAULT_BEHAVIOR.scale_up == ScalingRules(
        0, (ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15)), "Max", 0.1
    )
    assert DEFAULT_BEHAVIOR.scale_down == ScalingRules(300, (ScalingPolicy("Percent", 100, 15),))


def test_the_stabilization_windows_are_read(repo):
    read, errors = _behavior(
        repo,
        "    scaleDown: {stabilizationWindowSeconds: 0}\n"
        "    scaleUp: {stabilizationWindowSeconds: 120}\n",
    )
    assert not errors
    assert read.scale_down == replace(DEFAULT_BEHAVIOR.scale_down, stabilization_s=0)
    assert read.scale_up.stabilization_s == 120
    assert read.scale_up.policies == DEFAULT_BEHAVIOR.scale_up.policies  # the rest kept


@pytest.mark.parametrize("select", ["Max", "Min", "Disabled"])
def test_the_select_policy_is_read(repo, select):
    read, errors = _behavior(repo, f"    scaleDown:\n      selectPolicy: {select}\n")
    assert not errors and read.scale_down.select == select
    assert read.scale_up == DEFAULT_BEHAVIOR.scale_up


def test_declared_policies_replace_the_default_list_whole(repo):
    read, errors = _behavior(
        repo,
        "    scaleUp:\n"
        "      policies:\n"
        "        - {type: Pods, value: 1, periodSeconds: 60}\n"
        "        - type: Percent\n"
        "          value: 50\n"
        "          periodSeconds: 120\n",
    )
    assert not errors
    assert read.scale_up.policies == (
        ScalingPolicy("Pods", 1, 60),
        ScalingPolicy("Percent", 50, 120),
    )
    assert read.scale_up.stabilization_s == 0 and read.scale_down == DEFAULT_BEHAVIOR.scale_down


@pytest.mark.parametrize(("written", "value"), [("0.05", 0.05), ("50m", 0.05), ("0", 0.0)])
def test_the_tolerance_is_read_as_a_quantity(repo, written, value):
    read, errors = _behavior(repo, f"    scaleUp: {{tolerance: '{written}'}}\n")
    assert not errors
    assert read.scale_up.tolerance == pytest.approx(value)
    assert read.scale_down.tolerance == 0.1  # the other direction keeps the default


@pytest.mark.parametrize(
    ("behavior", "line", "message"),
    [
        ("    scaleDown: {stabilizationWindowSeconds: 4000}\n", 12, "from 0 to 3600"),
        ("    scaleDown: {stabilizationWindowSeconds: soon}\n", 12, "from 0 to 3600"),
        ("    scaleUp:\n      selectPolicy: Fastest\n", 13, "is not Max, Min or Disabled"),
        (
            "    scaleUp:\n      policies:\n        - {type: Pod, value: 1, periodSeconds: 60}\n",
            14,
            "is not Pods or Percent",
        ),
        (
            "    scaleUp:\n      policies:\n        - {type: Pods, value: 0, periodSeconds: 60}\n",
            14,
            "from 1 to",
        ),
        (
            "    scaleUp:\n      policies:\n        - {type: Pods, value: 1, periodSeconds: 3600}\n",
            14,
            "from 1 to 1800",
        ),
        ("    scaleUp:\n      policies: []\n", 13, "at least one policy"),
        ("    scaleUp: {tolerance: lots}\n", 12, "is not a quantity"),
        ("    scaleUp: {tolerance: -0.1}\n", 12, "is not a quantity of at least 0"),
        ("    scaleUp: fast\n", 12, "not a mapping"),
    ],
)
def test_an_invalid_field_is_an_error_at_its_line_and_keeps_the_default(
    repo, behavior, line, message
):
    read, errors = _behavior(repo, behavior)
    assert read == DEFAULT_BEHAVIOR
    assert len(errors) == 1, errors
    file, at, text = errors[0]
    assert (file, at) == ("hpa.yaml", line)
    assert text.startswith("HorizontalPodAutoscaler web: spec.behavior.scale") and message in text


def test_the_behavior_is_in_the_inventory_json(cli, repo):
    behavior = "  behavior:\n    scaleDown:\n      selectPolicy: Disabled\n"
    root = repo({"web.yaml": DEPLOYMENT, "hpa.yaml": HPA + behavior})
    done = cli("validate", str(root), "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    jsonschema.validate(data, SCHEMA)
    rules = data["workloads"][0]["hpa"]["behavior"]
    assert rules["scaleDown"]["selectPolicy"] == "Disabled"
    assert rules["scaleUp"]["policies"][0] == {"type": "Pods", "value": 4, "periodSeconds": 15}


SECOND_HPA = HPA.replace("name: web, namespace", "name: web-memory, namespace")


def test_two_hpas_on_one_workload_are_a_warning_and_neither_is_edited(cli, repo):
    root = repo({"web.yaml": DEPLOYMENT, "hpa.yaml": HPA, "hpa-memory.yaml": SECOND_HPA})
    inventory = discover(root, RepoConfig()).inventory
    web = workload(inventory, "web")
    assert not inventory.errors
    assert [(w.file, w.line) for w in inventory.warnings] == [("hpa.yaml", 1)]
    (warning,) = inventory.warnings
    assert "AmbiguousSelector" in warning.message and "hpa-memory.yaml:1" in warning.message
    assert "web-memory" in inventory.not_proposed[web.ref]

    table = cli("validate", str(root))
    assert "warning: hpa.yaml:1: Deployment shop/web" in table.stdout, table.stdout
    done = cli("validate", str(root), "--format", "json")
    data = json.loads(done.stdout)
    jsonschema.validate(data, SCHEMA)
    assert [w["file"] for w in data["warnings"]] == ["hpa.yaml"]
    assert [p["name"] for p in data["not_proposed"]] == ["web"]


def test_one_hpa_per_workload_gives_no_warning(repo):
    other = DEPLOYMENT.replace("name: web", "name: api")
    second = SECOND_HPA.replace("kind: Deployment, name: web", "kind: Deployment, name: api")
    root = repo({"web.yaml": DEPLOYMENT, "api.yaml": other, "hpa.yaml": HPA, "h2.yaml": second})
    inventory = discover(root, RepoConfig()).inventory
    assert not inventory.warnings and not inventory.not_proposed
