"""The embedded demo end to end through the pipeline: the seeds' multi-container story."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import bot.demo
from bot.config.bot import load_bot_settings
from bot.manifests.quantities import format_cpu
from bot.metrics.snapshot import SnapshotSource
from bot.model import FieldId
from bot.pipeline.plan import RepositoryOutcome, repository_outcome

DEMO_DIR = Path(bot.demo.__file__).resolve().parent


def _demo_plan(tmp_path: Path) -> RepositoryOutcome:
    root = tmp_path / "demo-shop"
    shutil.copytree(DEMO_DIR / "repo", root)
    source = SnapshotSource(DEMO_DIR / "snapshot.zip")
    settings = load_bot_settings(DEMO_DIR / "bot.yaml")
    return repository_outcome(root, source, settings, now_s=source.end_s)


def test_demo_proposes_the_istio_proxy_rebalance(tmp_path):
    plan = _demo_plan(tmp_path)
    [frontend] = [o for o in plan.outcomes if o.ref.name == "frontend"]
    assert frontend.status == "changes"
    assert frontend.recommendation is not None
    [proxy] = [c for c in frontend.recommendation.containers if c.name == "istio-proxy"]
    request = proxy.cpu.request
    assert request.current is not None
    assert request.proposed is not None
    assert proxy.cpu.usage is not None
    # Proposed down in full (the replay gate, not a 20 % step, bounds the risk), never below
    # what the sidecar uses: its VPA value at the current 60 % target.
    assert request.proposed < 0.8 * request.current
    assert request.proposed >= proxy.cpu.usage.p99
    assert request.rule == "tortoise.horizontal.rebalance"
    assert frontend.recommendation.replay is not None
    assert frontend.recommendation.replay.findings == ()
    proposed = {(c.field, c.container): c.proposed for c in frontend.changes}
    assert proposed[(FieldId.REQUESTS_CPU, "istio-proxy")] == request.proposed
    # The edit lands in the manifest.
    assert frontend.ref not in plan.edit.failed
    assert f"+            cpu: {format_cpu(request.proposed)}" in plan.edit.diff


def test_demo_replaces_pod_level_metrics_per_container(tmp_path):
    plan = _demo_plan(tmp_path)
    targets = {
        o.ref.name: {c.container for c in o.changes if c.field == "hpa.target.cpu"}
        for o in plan.outcomes
    }
    # raw YAML and Kustomize: one ContainerResource target per container; the chart keeps its
    # pod-level target and says why.
    assert targets["frontend"] == {"app", "istio-proxy"}
    assert targets["cart"] == {"cart"}
    assert targets["checkout"] == {None}
    [checkout] = [o for o in plan.outcomes if o.ref.name == "checkout"]
    assert any("ContainerResource not expressible here" in c.reason for c in checkout.changes)
    assert plan.edit.diff.count("+  - type: ContainerResource") == 2
    assert "+      container: istio-proxy" in plan.edit.diff
    assert "+        container: cart" in plan.edit.diff
    assert "-  - type: Resource" in plan.edit.diff


RAW_NUMBER = re.compile(r"\d[eE][+-]?\d|\d{7,}")
"""An exponent (``7.64047e+08``) or a raw byte count (``764047000``) in a reason."""


def _reasons(plan: RepositoryOutcome) -> list[str]:
    out: list[str] = []
    for outcome in plan.outcomes:
        out += outcome.reasons
        rec = outcome.recommendation
        if rec is None:
            continue
        values = [t.value for t in rec.hpa.targets] if rec.hpa else []
        if rec.hpa:
            values += [rec.hpa.min_replicas, rec.hpa.max_replicas]
        for container in rec.containers:
            for res in (container.cpu, container.memory):
                values += [res.request, res.limit]
        out += [v.reason for v in values]
    return out


def test_demo_reasons_print_amounts_in_their_unit(tmp_path):
    reasons = _reasons(_demo_plan(tmp_path))
    assert any(re.search(r"\d(m|Mi|Gi)\b", r) for r in reasons)  # amounts are there, in units
    assert [r for r in reasons if RAW_NUMBER.search(r)] == []
