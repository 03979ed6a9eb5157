"""A VerticalPodAutoscaler beside the bot, end to end on the demo shop: the container resources
an active VPA writes are skipped (``managed by VPA <name> (mode <mode>)``), nothing of them is
edited, the others are proposed as usual; a VPA in mode ``Off`` only adds a note; a VPA on CPU
beside an HPA on CPU gets Kubernetes' warning. Raw YAML (the storefront) and a Kustomize base
(the cart, through its prod overlay)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import pytest

import bot.demo
from bot.config.bot import load_bot_settings
from bot.metrics.snapshot import SnapshotSource
from bot.model import (
    DeclaredContainer,
    DeclaredVPA,
    DeclaredWorkload,
    VpaContainerPolicy,
    WorkloadRef,
)
from bot.pipeline.coexist import controlled
from bot.pipeline.plan import RepositoryOutcome, repository_outcome
from bot.pipeline.proposals import build_proposals
from bot.report import render_pull_request
from tests.conftest import PROJECT

DEMO = Path(bot.demo.__file__).resolve().parent
PLAN_SCHEMA = json.loads((PROJECT / "docs" / "schemas" / "plan.schema.json").read_text())

FRONTEND_VPA = """\
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata:
  name: frontend-vpa
  namespace: shop
spec:
  targetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: frontend
  updatePolicy:
    updateMode: {mode}
  resourcePolicy:
    containerPolicies:
      - containerName: istio-proxy
        mode: "Off"
      - containerName: "*"
        controlledResources: [{resources}]
"""

CART_VPA = """\
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata:
  name: cart
spec:
  targetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: cart
"""


def _plan(root: Path) -> RepositoryOutcome:
    source = SnapshotSource(DEMO / "snapshot.zip")
    settings = load_bot_settings(DEMO / "bot.yaml")
    return repository_outcome(root, source, settings, now_s=source.end_s, charts=False)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> RepositoryOutcome:
    root = tmp_path_factory.mktemp("vpa") / "shop"
    shutil.copytree(DEMO / "repo", root)
    return _plan(root)


def _shop(tmp_path: Path, mode: str = "Auto", resources: str = "memory") -> Path:
    root = tmp_path / "shop"
    shutil.copytree(DEMO / "repo", root)
    vpa = FRONTEND_VPA.format(mode=mode, resources=resources)
    (root / "apps" / "raw" / "frontend-vpa.yaml").write_text(vpa)
    return root


def _values(plan: RepositoryOutcome, name: str) -> dict[tuple[str, str], tuple[float | None, str]]:
    """Per (container, field) of workload ``name``: its proposed value and rule."""
    (outcome,) = [o for o in plan.outcomes if o.ref.name == name]
    assert outcome.recommendation is not None
    out = {}
    for c in outcome.recommendation.containers:
        for r in (c.cpu, c.memory):
            out[(c.name, f"requests.{r.resource}")] = (r.request.proposed, str(r.request.rule))
            out[(c.name, f"limits.{r.resource}")] = (r.limit.proposed, str(r.limit.rule))
    return out


def test_an_auto_vpa_keeps_what_it_writes_and_the_rest_is_proposed(tmp_path, baseline):
    root = _shop(tmp_path)
    plan = _plan(root)
    values, before = _values(plan, "frontend"), _values(baseline, "frontend")
    (outcome,) = [o for o in plan.outcomes if o.ref.name == "frontend"]
    # app memory: the VPA's; kept at its current values, named for the VPA
    app_memory = values[("app", "requests.memory")]
    assert app_memory == (1024**3, "policy.vpa_managed")
    assert values[("app", "limits.memory")][1] == "policy.vpa_managed"
    assert before[("app", "requests.memory")][0] != 1024**3  # without the VPA it would move
    # istio-proxy (mode Off in the VPA) and app CPU: proposed exactly as without the VPA
    for key in (("istio-proxy", "requests.memory"), ("istio-proxy", "requests.cpu")):
        assert values[key] == before[key]
    fields = {(c.container, c.field.text) for c in outcome.changes}
    assert ("app", "requests.memory") not in fields and ("app", "limits.memory") not in fields
    assert ("istio-proxy", "requests.memory") in fields
    notes = {n.code: n.message for n in outcome.recommendation.notes}  # type: ignore[union-attr]
    assert notes["vpa-managed"] == ("app memory: skipped: managed by VPA frontend-vpa (mode Auto)")
    assert "vpa-and-hpa-on-cpu" not in notes  # the VPA writes memory only
    assert "frontend-vpa.yaml" not in plan.edit.diff
    diff = plan.edit.diff.split("+++ b/apps/raw/frontend.yaml", 1)[1].split("--- a/", 1)[0]
    assert "memory: 1Gi" not in diff  # app's memory request untouched
    (proposal,) = [p for p in build_proposals(plan) if "frontend" in {w.name for w in p.workloads}]
    _, body = render_pull_request(proposal, prices=plan.prices)
    assert "managed by VPA frontend-vpa \\(mode Auto\\)" in body


def test_a_vpa_on_cpu_beside_an_hpa_on_cpu_is_warned_about(tmp_path):
    plan = _plan(_shop(tmp_path, mode="Recreate", resources="cpu, memory"))
    (outcome,) = [o for o in plan.outcomes if o.ref.name == "frontend"]
    assert outcome.recommendation is not None
    notes = {n.code: n.message for n in outcome.recommendation.notes}
    assert notes["vpa-managed"] == (
        "app cpu and memory: skipped: managed by VPA frontend-vpa (mode Recreate)"
    )
    assert notes["vpa-and-hpa-on-cpu"].startswith("HPA frontend scales on CPU utilisation")
    assert not [c for c in outcome.changes if c.container == "app" and c.field.is_request_or_limit]


def test_a_vpa_in_mode_off_only_recommends(tmp_path, baseline):
    plan = _plan(_shop(tmp_path, mode='"Off"', resources="cpu, memory"))
    (outcome,) = [o for o in plan.outcomes if o.ref.name == "frontend"]
    (before,) = [o for o in baseline.outcomes if o.ref.name == "frontend"]
    assert outcome.changes == before.changes
    assert outcome.recommendation is not None
    assert [n.message for n in outcome.recommendation.notes if n.code.startswith("vpa")] == [
        "VPA frontend-vpa (mode Off) only recommends: it changes no pod, the bot proposes as usual"
    ]


def test_a_vpa_of_a_kustomize_base_applies_in_the_overlay(tmp_path):
    root = tmp_path / "shop"
    shutil.copytree(DEMO / "repo", root)
    base = root / "apps" / "kustomize" / "base"
    (base / "cart-vpa.yaml").write_text(CART_VPA)
    kustomization = base / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text() + "  - cart-vpa.yaml\n")
    plan = _plan(root)
    (outcome,) = [o for o in plan.outcomes if o.ref.name == "cart"]
    assert not [c for c in outcome.changes if c.field.is_request_or_limit]
    assert all(c.field.is_hpa for c in outcome.changes)  # its HPA is still the bot's
    kustomize = [
        part
        for part in plan.edit.diff.split("--- ")
        if part.startswith(("a/apps/kustomize", "/dev/null\n+++ b/apps/kustomize"))
    ]
    written = [line for part in kustomize for line in part.splitlines() if line.startswith("+ ")]
    assert kustomize and not [line for line in written if "memory:" in line or "cpu:" in line]
    assert outcome.recommendation is not None
    assert [n.code for n in outcome.recommendation.notes if n.code.startswith("vpa")] == [
        "vpa-managed",
        "vpa-and-hpa-on-cpu",
    ]


@pytest.mark.slow  # whole plans in subprocesses
def test_the_plan_shows_it_in_table_and_json(cli, tmp_path):
    root = _shop(tmp_path)
    snapshot = str(DEMO / "snapshot.zip")
    common = ("plan", "--repo", str(root), "--snapshot", snapshot)
    doc = json.loads(cli(*common, "--format", "json").stdout)
    jsonschema.validate(doc, PLAN_SCHEMA)
    (frontend,) = [w for w in doc["workloads"] if w["name"] == "frontend"]
    app = next(c for c in frontend["containers"] if c["name"] == "app")
    assert app["memory"]["request"]["rule"] == "policy.vpa_managed"
    assert app["memory"]["request"]["reason"] == "managed by VPA frontend-vpa (mode Auto)"
    text = " ".join(cli(*common).stdout.split())
    row = text.split("app memory request 1 GiB ", 1)[1]
    assert row.split(" app memory limit", 1)[0].endswith(
        "skipped: managed by VPA frontend-vpa (mode Auto)"
    )
    assert "note: app memory: skipped: managed by VPA frontend-vpa (mode Auto)" in text


@pytest.mark.parametrize(
    ("mode", "policies", "expected"),
    [
        (None, (), {"app": ("cpu", "memory"), "side": ("cpu", "memory")}),
        ("Initial", (VpaContainerPolicy("side", mode="Off"),), {"app": ("cpu", "memory")}),
        ("InPlaceOrRecreate", (VpaContainerPolicy("*", controlled_resources=("cpu",)),),
         {"app": ("cpu",), "side": ("cpu",)}),
        ("Auto", (VpaContainerPolicy("*", mode="Off"), VpaContainerPolicy("app")),
         {"app": ("cpu", "memory")}),
        ("Off", (), {}),
    ],
    ids=["unset-is-auto", "container-off", "star-policy", "named-wins-over-star", "mode-off"],
)  # fmt: skip
def test_which_container_resources_a_vpa_writes(mode, policies, expected):
    declared = DeclaredWorkload(
        WorkloadRef("Deployment", "shop", "web"),
        1,
        (DeclaredContainer("app"), DeclaredContainer("side"), DeclaredContainer("init", init=True)),
        vpa=DeclaredVPA("web", mode, policies),
    )
    assert controlled(declared) == expected
