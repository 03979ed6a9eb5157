"""Discovery never raises for repository content: odd shapes become errors or are ignored."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.config.repo import RepoConfig
from bot.manifests import discover

KINDS = [
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("autoscaling.k8s.io/v1", "VerticalPodAutoscaler"),
    ("autoscaling.mercari.com/v1beta3", "Tortoise"),
    ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
    ("argoproj.io/v1alpha1", "Application"),
    ("v1", "List"),
]
KEYS = st.sampled_from(
    [
        "spec",
        "template",
        "containers",
        "resources",
        "requests",
        "limits",
        "cpu",
        "memory",
        "name",
        "metadata",
        "scaleTargetRef",
        "targetRef",
        "metrics",
        "values",
        "source",
        "helm",
        "valuesObject",
        "items",
        "replicas",
        "minReplicas",
        "maxReplicas",
        "kind",
        "chart",
    ]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**12),
    st.sampled_from(["100m", "1Gi", "x", "", "web"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(KEYS, children, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(KINDS), st.dictionaries(KEYS, VALUES, max_size=5)),
        min_size=1,
        max_size=4,
    )
)
def test_discover_never_raises_on_odd_shapes(documents):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        text = "\n---\n".join(
            json.dumps({"apiVersion": api, "kind": kind, **body}) for (api, kind), body in documents
        )
        (root / "odd.yaml").write_text(text)
        inventory = discover(root, RepoConfig()).inventory
        for error in inventory.errors:
            assert error.file == "odd.yaml"


ODD = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: r, namespace: 7}
spec: {chart: {spec: "podinfo"}, values: [1, 2]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {namespace: x}
spec: {template: {spec: {containers: [{name: a}]}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: weird}
spec: {replicas: many, template: {spec: {containers: {name: a}}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: h}
spec: {scaleTargetRef: [], metrics: {a: 1}}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: app}
spec: {source: {helm: {values: 12}}, destination: []}
"""


def test_odd_shapes_become_errors(repo):
    root = repo({"odd.yaml": ODD})
    inventory = discover(root, RepoConfig()).inventory
    names = sorted(w.ref.name for w in inventory.workloads)
    assert names == ["app", "r", "weird"]
    messages = [e.message for e in inventory.errors]
    assert "Deployment without metadata.name" in messages
    assert any("replicas: not a valid value: 'many'" in m for m in messages)
    assert any("no spec.scaleTargetRef" in m for m in messages)
    assert all(e.file == "odd.yaml" and e.line > 0 for e in inventory.errors)
