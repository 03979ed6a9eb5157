"""The embedded demo end to end through the pipeline: the seeds' multi-container story."""

from __future__ import annotations

import shutil
from pathlib import Path

import bot.demo
from bot.config.bot import load_bot_settings
from bot.metrics.snapshot import SnapshotSource
from bot.pipeline import plan_repository

DEMO_DIR = Path(bot.demo.__file__).resolve().parent


def test_demo_proposes_the_istio_proxy_rebalance(tmp_path):
    root = tmp_path / "demo-shop"
    shutil.copytree(DEMO_DIR / "repo", root)
    source = SnapshotSource(DEMO_DIR / "snapshot.zip")
    settings = load_bot_settings(DEMO_DIR / "bot.yaml")
    plan = plan_repository(root, source, settings, now_s=source.end_s)
    [frontend] = [o for o in plan.outcomes if o.ref.name == "frontend"]
    assert frontend.status == "changes"
    assert frontend.recommendation is not None
    [proxy] = [c for c in frontend.recommendation.containers if c.name == "istio-proxy"]
    request = proxy.cpu.request
    assert request.current is not None
    assert request.proposed is not None
    assert proxy.cpu.usage is not None
    # Proposed down (one step of at most 20 %), never below what the sidecar uses.
    assert request.proposed < request.current
    assert request.proposed >= 0.8 * request.current
    assert request.proposed >= proxy.cpu.usage.p99
    assert "step-limited to" in request.reason
    proposed = {(c.field, c.container): c.proposed for c in frontend.changes}
    assert proposed[("requests.cpu", "istio-proxy")] == request.proposed
    # The edit lands in the manifest.
    assert frontend.ref not in plan.edit.failed
    assert f"+            cpu: {round(request.proposed * 1000)}m" in plan.edit.diff
