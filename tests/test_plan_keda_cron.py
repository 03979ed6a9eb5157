"""``keda.cron_floors: propose`` end to end: the demo shop with a Deployment a KEDA ScaledObject
scales on CPU, simulated on a weekly load and planned from the snapshot; the ScaledObject's
note tells the cron floors the replay measured, or why none."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

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


def _web_note(cli, root: Path, history: Path) -> str:
    result = cli(
        "plan", "--repo", str(root), "--snapshot", str(history), "--now", NOW, "--format", "json"
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (web,) = [w for w in json.loads(result.stdout)["workloads"] if w["name"] == "web"]
    notes = {n["code"]: n["message"] for n in web["notes"]}
    assert web["hpa"]["min_replicas"]["proposed"] == 10  # Tortoise's largest slot
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
    note = _web_note(cli, _shop(tmp_path / "shop", cron=True), history)
    assert note == (
        "no cron floors (keda.cron_floors): it already has cron triggers: the bot does not add more"
    )
