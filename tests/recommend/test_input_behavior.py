"""The HPA's ``behavior`` in a ``recommend --input`` document: read as ``DeclaredHPA.behavior``
holds it (the defaults where a field is left out), checked by the parser and the published
schema alike."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from bot.model import DEFAULT_BEHAVIOR, HpaBehavior, ScalingPolicy, ScalingRules
from bot.recommend.document import parse_document
from bot.recommend.errors import InputError
from tests.conftest import PROJECT
from tests.recommend.test_command import _schema, example_document

BEHAVIOR = {
    "scale_up": {"stabilization_window_seconds": 60, "select_policy": "Min"},
    "scale_down": {
        "policies": [{"type": "Pods", "value": 1, "period_seconds": 120}],
        "tolerance": 0.05,
    },
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    doc = example_document(days=2.0, step_s=3600.0)
    doc["hpa"]["behavior"] = copy.deepcopy(BEHAVIOR)
    return doc


def test_behavior_is_read_over_the_defaults(document):
    jsonschema.validate(document, _schema("recommend-input.schema.json"))
    hpa = parse_document(document).input.hpa
    assert hpa is not None
    assert hpa.behavior == HpaBehavior(
        ScalingRules(60, DEFAULT_BEHAVIOR.scale_up.policies, "Min"),
        ScalingRules(
            DEFAULT_BEHAVIOR.scale_down.stabilization_s,
            (ScalingPolicy("Pods", 1, 120),),
            tolerance=0.05,
        ),
    )


def test_no_behavior_is_the_default(document):
    plain = copy.deepcopy(document)
    del plain["hpa"]["behavior"]
    hpa = parse_document(plain).input.hpa
    assert hpa is not None and hpa.behavior == DEFAULT_BEHAVIOR


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("scale_up", "stabilization_window_seconds"), 3601),
        (("scale_up", "select_policy"), "Most"),
        (("scale_down", "policies"), []),
        (("scale_down", "policies", 0, "period_seconds"), 1801),
        (("scale_down", "policies", 0, "type"), "Nodes"),
        (("scale_down", "tolerance"), -0.1),
        (("scale_down", "stabilisation"), 10),
    ],
    ids=["window", "select", "no-policy", "period", "type", "tolerance", "unknown-key"],
)
def test_an_invalid_behavior_is_refused_by_parser_and_schema(document, path, value):
    bad = copy.deepcopy(document)
    node = bad["hpa"]["behavior"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(InputError) as info:
        parse_document(bad)
    assert info.value.field.startswith("hpa.behavior.")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, _schema("recommend-input.schema.json"))


def test_the_shipped_example_declares_a_behavior():
    """``docs/examples/recommend-input.json`` shows the block: a scale-down of 10 % a minute."""
    example = PROJECT / "docs" / "examples" / "recommend-input.json"
    hpa = parse_document(json.loads(example.read_text())).input.hpa
    assert hpa is not None and hpa.behavior != DEFAULT_BEHAVIOR
    assert hpa.behavior.scale_down.policies == (ScalingPolicy("Percent", 10, 60),)
    assert hpa.behavior.scale_up == DEFAULT_BEHAVIOR.scale_up
