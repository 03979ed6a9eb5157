"""``keda.cron_floors: propose`` end to end: the demo shop with a Deployment a KEDA ScaledObject
scales on CPU, simulated on a weekly load and planned from the snapshot; the ScaledObject's
note tells the cron floors the replay measured, or why none."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from bot.commands.common import parse_now
from bot.commands.origin import checkout_origin
from bot.config.repo import load_repo_config
from bot.manifests import discover
from bot.metrics.snapshot import write_snapshot
from bot.metrics.source import FetchResult
from bot.model import SECONDS_PER_DAY
from bot.sim import ClusterSpec, simulate
from bot.sim.declared import service_for, simulate_workloads
from tests.conftest import PROJECT, console_script

DEMO = PROJECT / "bot" / "demo"
WEB = PROJECT / "tests" / "manifests" / "keda" / "base" / "web.yaml"
NOW = "2026-11-01T00:00:00Z"
SETTINGS = "recommend:\n  keda: {cron_floors: propose}\n  replicas: {min_replicas: slots}\n"


def _shop(root: Path, *, cron: bool) -> Path:
    """The demo repository with ``apps/raw/web.yaml`` (Deployment ``web`` and its ScaledObject
    at minReplicaCount 6), its ``cron`` trigger left out unless ``cron``, and the rule on."""
    shutil.copytree(DEMO / "repo", root)
    text = WEB.read_text().replace("minReplicaCount: 2 # never", "minReplicaCount: 6 # never")
    if not cron:
        text = text[: text.index("    - type: cron")]
    (root / "apps" / "raw" / "web.yaml").write_text(text)
    opt_in = root / ".tortoise-bot.yaml"
    opt_in.write_text(opt_in.read_text() + SETTINGS)
    return root


def _web(cli, root: Path, history: Path, *extra: str) -> dict:
    result = cli(
        "plan", "--repo", str(root), "--snapshot", str(history), "--now", NOW, "--format", "json",
        *extra,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (web,) = [w for w in json.loads(result.stdout)["workloads"] if w["name"] == "web"]
    return web


def _web_note(cli, root: Path, history: Path, proposed: int = 10) -> str:
    web = _web(cli, root, history)
    notes = {n["code"]: n["message"] for n in web["notes"]}
    assert web["hpa"]["min_replicas"]["proposed"] == proposed  # 10: Tortoise's largest slot
    return notes["keda-cron-floors"]


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    root = _shop(tmp_path_factory.mktemp("sim") / "shop", cron=False)
    out = root.parent / "history.zip"
    args = ("--repo", str(root), "--out", str(out), "--days", "14", "--seed", "3", "--now", NOW)
    result = subprocess.run(
        [*console_script(), "simulate", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return out


def test_the_replay_measures_the_cron_floors_and_holds_them_when_shortfall_grows(
    cli, tmp_path, history
):
    note = _web_note(cli, _shop(tmp_path / "shop", cron=False), history)
    found = re.search(
        r"minReplicaCount 10 → (\d+) plus cron triggers \(Etc/UTC\) .*: replayed replica-hours "
        r"([\d.]+) → ([\d.]+) \(saves ([\d.]+)\), shortfall (\d+) → (\d+) min",
        note,
    )
    assert found is not None, note
    quiet, static_h, cron_h, saved = (float(g) for g in found.groups()[:4])
    before, after = int(found.group(5)), int(found.group(6))
    assert quiet < 10 and cron_h < static_h
    assert abs(static_h - cron_h - saved) <= 0.11  # reproducible from the numbers beside it
    # the weekly service's quiet hours save replica-hours, but its busy mornings start from
    # the quiet floor: more shortfall minutes, so nothing is proposed
    assert after > before
    assert note.startswith("no cron floors (keda.cron_floors): the replay shows no saving")


def test_a_scaled_object_with_cron_triggers_is_never_given_more(cli, tmp_path, history):
    note = _web_note(cli, _shop(tmp_path / "shop", cron=True), history, proposed=6)  # kept
    assert note == (
        "no cron floors (keda.cron_floors): it already has cron triggers: the bot does not add more"
    )


@pytest.fixture(scope="module")
def steady_week(tmp_path_factory) -> tuple[Path, Path]:
    """The shop (``web`` at minReplicaCount 6, no cron trigger) and a history in which ``web``
    follows the weekly profile without its bursts and rollouts (a load the busy hours alone
    drive), the other workloads as ``simulate`` draws them."""
    root = _shop(tmp_path_factory.mktemp("steady") / "shop", cron=False)
    inventory = discover(root, load_repo_config(root)).inventory
    end_s = parse_now(NOW)
    assert end_s is not None
    histories = simulate_workloads(
        inventory.workloads, profile="weekly", seed=3, days=14, step_s=60, end_s=end_s
    )
    (web,) = [w for w in inventory.workloads if w.ref.name == "web"]
    service = service_for(web, "weekly", 3)
    assert service is not None
    service = replace(service, burst_per_day=0.0, rollouts_per_week=0.0)
    first = histories[web.ref].replicas_t[0]
    spec = ClusterSpec(3, (service,), days=14, step_s=60, start_s=float(first))
    histories[web.ref] = simulate(spec).expected_history(web.ref)
    out = root.parent / "history.zip"
    last = max(h.end_s for h in histories.values())
    write_snapshot(
        out,
        FetchResult(histories=histories),
        start_s=last - 14 * SECONDS_PER_DAY,
        end_s=last,
        origin=checkout_origin(root),
    )
    return root, out


def test_accepted_cron_floors_are_written_and_a_second_plan_proposes_no_more(cli, steady_week):
    root, history = steady_week
    web = _web(cli, root, history)
    minimum = web["hpa"]["min_replicas"]
    assert minimum["rule"] == "keda.cron_floors"
    figures = minimum["inputs"]
    assert minimum["proposed"] < figures["static"]
    assert figures["cron_pod_hours"] < figures["static_pod_hours"]
    assert figures["cron_shortfall_minutes"] <= figures["static_shortfall_minutes"]
    assert "keda-cron-floors" not in {n["code"] for n in web["notes"]}  # a change, not a note
    written = _web(cli, root, history, "--write")
    assert written["hpa"]["min_replicas"]["proposed"] == minimum["proposed"]
    text = (root / "apps" / "raw" / "web.yaml").read_text()
    assert "# never fewer than two" in text and "# percent of the request" in text
    scaler = next(d for d in YAML(typ="safe").load_all(text) if d["kind"] == "ScaledObject")
    assert scaler["spec"]["minReplicaCount"] == minimum["proposed"]
    cron = [t for t in scaler["spec"]["triggers"] if t["type"] == "cron"]
    assert 1 <= len(cron) <= 4
    assert all(isinstance(t["metadata"]["desiredReplicas"], str) for t in cron)
    assert all(t["metadata"]["timezone"] == "Etc/UTC" for t in cron)
    assert max(int(t["metadata"]["desiredReplicas"]) for t in cron) <= figures["static"]
    again = _web(cli, root, history)
    kept = again["hpa"]["min_replicas"]
    assert (kept["current"], kept["proposed"]) == (minimum["proposed"], minimum["proposed"])
    notes = {n["code"]: n["message"] for n in again["notes"]}
    assert "already has cron triggers" in notes["keda-cron-floors"]
    assert not any(r.startswith(("hpa.minReplicas", "keda.triggers")) for r in again["reasons"])
