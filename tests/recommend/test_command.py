"""`tortoise-bot recommend`: real console script, real JSON files, outputs checked against the
published schemas (``docs/schemas``)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import numpy as np
import pytest

from bot.model import MIB, Recommendation, WorkloadRef
from bot.recommend.document import parse_document
from bot.recommend.errors import InputError
from bot.report.outcome_json import plan_json, workload_json
from tests.recommend.factories import DAY_S, NOW_S

PROJECT = Path(__file__).resolve().parents[2]
SCHEMAS = PROJECT / "docs" / "schemas"


def _schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS / name).read_text())
    return schema


def example_document(days: float = 8.0, step_s: float = 600.0) -> dict[str, Any]:
    """A two-container workload with an HPA, sampled every ``step_s`` over ``days``."""
    t = NOW_S - days * DAY_S + step_s * np.arange(int(days * DAY_S / step_s))
    wave = 0.5 + 0.3 * np.sin(2 * np.pi * (t % DAY_S) / DAY_S)

    def rows(values, pods=("web-a", "web-b")):
        return [[float(x), pod, float(v)] for pod in pods for x, v in zip(t, values, strict=True)]

    return {
        "now": datetime.fromtimestamp(NOW_S, tz=UTC).isoformat(),
        "workload": {"kind": "Deployment", "namespace": "shop", "name": "web"},
        "containers": [
            {
                "name": "app",
                "requests": {"cpu": 1.0, "memory": 512 * MIB},
                "limits": {"cpu": 2.0, "memory": 1024 * MIB},
                "policy": {"cpu": "horizontal", "memory": "vertical"},
                "cpu_samples": rows(wave),
                "memory_samples": rows(300e6 + 50e6 * wave),
                "oom_events": [],
            },
            {
                "name": "istio-proxy",
                "requests": {"cpu": 0.5, "memory": 128 * MIB},
                "limits": {"cpu": None, "memory": None},
                "cpu_samples": rows(0.05 + 0 * wave),
                "memory_samples": rows(60e6 + 0 * wave),
            },
        ],
        "replicas": [[float(x), float(np.round(4 + 4 * w))] for x, w in zip(t, wave, strict=True)],
        "hpa": {
            "min_replicas": 2,
            "max_replicas": 20,
            "targets": [{"container": None, "resource": "cpu", "utilization": 70}],
        },
        "settings": {"admin": {"time_zone": "UTC"}},
    }


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return example_document()


def test_example_input_matches_its_schema(document):
    jsonschema.validate(document, _schema("recommend-input.schema.json"))


def test_recommend_json_output_matches_the_plan_schema(cli, tmp_path, document):
    path = tmp_path / "in.json"
    path.write_text(json.dumps(document))
    done = cli("recommend", "--input", str(path), "--format", "json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    plan = _schema("plan.schema.json")
    jsonschema.validate({"workloads": [out], "diff": ""}, plan)
    assert (out["kind"], out["namespace"], out["name"]) == ("Deployment", "shop", "web")
    assert out["status"] in ("changes", "no-change")
    app = out["containers"][0]
    assert app["cpu"]["policy"] == "horizontal"
    assert app["cpu"]["vpa"]["confidence"] > 1
    assert app["memory"]["request"]["rule"]
    # The HPA scales on the pod-level Resource metric: Tortoise replaces it by one
    # ContainerResource target per horizontal container, each starting from the pod-level value.
    targets = out["hpa"]["targets"]
    assert [t["container"] for t in targets] == ["app", "istio-proxy"]
    assert {t["current"] for t in targets} == {document["hpa"]["targets"][0]["utilization"]}
    assert len(out["hpa"]["slots"]) == 168


def test_recommend_table_output(cli, tmp_path, document):
    path = tmp_path / "in.json"
    path.write_text(json.dumps(document))
    done = cli("recommend", "--input", str(path))
    assert done.returncode == 0, done.stderr
    assert "Deployment/shop/web@default" in done.stdout
    assert "request.cpu" in done.stdout
    assert "hpa.minReplicas" in done.stdout


def test_recommend_removes_the_metric_of_a_container_made_vertical(cli, tmp_path, document):
    # The HPA scales on both containers' cpu; istio-proxy's cpu is now vertical: Tortoise
    # removes its ContainerResource metric, and so does the proposal (proposed null).
    doc = copy.deepcopy(document)
    doc["containers"][1]["policy"] = {"cpu": "vertical", "memory": "vertical"}
    doc["hpa"]["targets"] = [
        {"container": "app", "resource": "cpu", "utilization": 70},
        {"container": "istio-proxy", "resource": "cpu", "utilization": 70},
    ]
    path = tmp_path / "in.json"
    path.write_text(json.dumps(doc))
    done = cli("recommend", "--input", str(path), "--format", "json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    jsonschema.validate({"workloads": [out], "diff": ""}, _schema("plan.schema.json"))
    [proxy] = [t for t in out["hpa"]["targets"] if t["container"] == "istio-proxy"]
    assert (proxy["current"], proxy["proposed"]) == (70, None)
    assert proxy["rule"] == "tortoise.target.remove_metric"
    assert out["status"] == "changes"
    assert any("ContainerResource metric removed" in r for r in out["reasons"])
    table = cli("recommend", "--input", str(path))
    assert table.returncode == 0, table.stderr
    rows = [line.split() for line in table.stdout.splitlines()]
    assert [
        "istio-proxy",
        "hpa.target.cpu",
        "70%",
        "removed",
        "tortoise.target.remove_metric",
    ] in rows


def test_recommend_bounds_a_field_a_merged_revert_restored(cli, tmp_path, document):
    # the engine cuts app's memory request 512 → 392 MiB; #3 had cut it to 400 MiB, which
    # regressed, and #6 reverted it: at least 400 MiB × 1.2 = 480 MiB
    doc = copy.deepcopy(document)
    doc["after_revert"] = {
        "revert": 6,
        "reverted": 3,
        "values": [{"container": "app", "field": "requests.memory", "value": 400 * MIB}],
    }
    jsonschema.validate(doc, _schema("recommend-input.schema.json"))
    path = tmp_path / "in.json"
    path.write_text(json.dumps(doc))
    done = cli("recommend", "--input", str(path), "--format", "json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    jsonschema.validate({"workloads": [out], "diff": ""}, _schema("plan.schema.json"))
    request = out["containers"][0]["memory"]["request"]
    assert (request["rule"], request["proposed"]) == ("after_revert.floor", 480 * MIB)
    assert request["inputs"]["wanted_rule"] == "vertical.ideal"
    assert "400Mi × (1 + 0.2) = 480Mi" in request["reason"]
    table = cli("recommend", "--input", str(path))
    rows = [line.split() for line in table.stdout.splitlines()]
    memory = next(row for row in rows if row[:2] == ["app", "request.memory"])
    assert memory[3:7] == ["512", "MiB", "480", "MiB"] and memory[-1] == "after_revert.floor"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["containers"][0]["cpu_samples"].__setitem__(3, [1.0, "p"]), "cpu_samples[3]"),
        (lambda d: d["containers"][0]["policy"].__setitem__("cpu", "sideways"), "policy.cpu"),
        (lambda d: d.__setitem__("now", "yesterday"), "now"),
        (lambda d: d["settings"].__setitem__("vpa", {"margin_fraction": -1}), "settings.vpa"),
        (lambda d: d.__setitem__("colour", "blue"), "colour"),
        (
            lambda d: d.__setitem__(
                "after_revert",
                {"revert": 6, "reverted": 3, "values": [{"field": "requests.cpu", "value": 0.1}]},
            ),
            "after_revert.values[0]",
        ),
        (
            lambda d: d.__setitem__(
                "after_revert",
                {"revert": 6, "reverted": 3, "values": [{"field": "replicas", "value": 3}]},
            ),
            "after_revert.values[0]",
        ),
    ],
    ids=[
        "short-row",
        "bad-policy",
        "bad-time",
        "bad-setting",
        "unknown-key",
        "no-container",
        "unbounded-field",
    ],
)
def test_malformed_input_exits_2_naming_the_field(cli, tmp_path, document, mutate, field):
    bad = copy.deepcopy(document)
    mutate(bad)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    done = cli("recommend", "--input", str(path), "--format", "json")
    assert done.returncode == 2
    assert field in done.stderr
    assert done.stdout == ""


def test_invalid_json_exits_2_with_the_line(cli, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{\n "now": \n')
    done = cli("recommend", "--input", str(path))
    assert done.returncode == 2
    assert "line" in done.stderr


def test_parse_errors_name_paths():
    with pytest.raises(InputError) as info:
        parse_document({"now": "2023-11-15T00:00:00Z", "workload": {"kind": "Deployment"}})
    assert info.value.field == "workload.namespace"
    with pytest.raises(InputError) as info:
        parse_document(
            {
                "now": "2023-11-15T00:00:00Z",
                "workload": {"kind": "Deployment", "namespace": "a", "name": "b"},
                "containers": [{"name": "x", "requests": {"cpu": -1}}],
            }
        )
    assert info.value.field == "containers[0].requests.cpu"


def test_input_schema_is_generated_from_the_model():
    from bot.commands.schema import DOCUMENT_SCHEMAS
    from bot.config.schema import schema_text

    assert "recommend-input.schema.json" in DOCUMENT_SCHEMAS
    for name, model in DOCUMENT_SCHEMAS.items():
        assert (SCHEMAS / name).read_text() == schema_text(model), (
            f"docs/schemas/{name} is stale: run `tortoise-bot schema`"
        )


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["containers"][0]["requests"].__setitem__("cpu", "1"), "requests.cpu"),
        (lambda d: d["hpa"].__setitem__("max_replicas", True), "hpa.max_replicas"),
        (lambda d: d["hpa"].__setitem__("max_replicas", 2.5), "hpa.max_replicas"),
        (lambda d: d["emergency"].__setitem__("requested", 1), "emergency.requested"),
        (lambda d: d["containers"][1].__setitem__("name", "app"), "containers[1].name"),
    ],
    ids=["string-number", "bool-count", "fraction-count", "number-bool", "duplicate-name"],
)
def test_values_are_taken_as_they_are_or_refused_by_parser_and_schema(document, mutate, field):
    bad = copy.deepcopy(document)
    bad.setdefault("emergency", {})
    mutate(bad)
    with pytest.raises(InputError) as info:
        parse_document(bad)
    assert info.value.field.endswith(field)
    if field != "containers[1].name":  # a rule across items: the parser's alone
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, _schema("recommend-input.schema.json"))


def test_plan_json_of_an_error_and_a_skip_validates():
    ref = WorkloadRef("Deployment", "a", "b")
    recs = [
        (Recommendation(ref, "error", ("no containers",)), ["deploy.yaml"]),
        (Recommendation(ref, "skipped", ("managed by a Tortoise",)), []),
    ]
    jsonschema.validate(plan_json(recs, diff=""), _schema("plan.schema.json"))
    assert workload_json(recs[0][0], files=["deploy.yaml"])["files"] == ["deploy.yaml"]


def test_shipped_example_runs_and_validates(cli):
    example = PROJECT / "docs" / "examples" / "recommend-input.json"
    jsonschema.validate(json.loads(example.read_text()), _schema("recommend-input.schema.json"))
    done = cli("recommend", "--input", str(example), "--format", "json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    jsonschema.validate({"workloads": [out]}, _schema("plan.schema.json"))
    proxy = out["containers"][1]["cpu"]["request"]
    # The idle sidecar is right-sized from the current target in one move: rec × 100 / target.
    assert proxy["rule"] == "tortoise.horizontal.rebalance"
    assert proxy["current"] == 0.5
    target = json.loads(example.read_text())["hpa"]["targets"][0]["utilization"]
    assert proxy["proposed"] == pytest.approx(proxy["inputs"]["rec"] * 100 / target, abs=0.001)


def test_plan_demo_json_matches_the_plan_schema(cli):
    done = cli("plan", "--demo", "--format", "json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    jsonschema.validate(plan, _schema("plan.schema.json"))
    assert plan["workloads"]
    assert all(w["status"] != "error" for w in plan["workloads"]), [
        (w["name"], w["reasons"]) for w in plan["workloads"]
    ]
