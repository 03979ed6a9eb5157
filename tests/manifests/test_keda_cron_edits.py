"""Cron floors written (change ``keda.triggers``, rule ``keda.cron_floors``): the ``cron``
triggers are appended after a ScaledObject's last trigger in raw YAML, a Kustomize overlay (the
whole list in the overlay's patch) and Helm values (``keda.triggers``), comments and quoting
kept, ``desiredReplicas`` a quoted string; rediscovery reads them back."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ruamel.yaml import YAML

from bot.config.repo import RepoConfig
from bot.manifests import apply_changes, discover
from bot.model import EditResult, FieldChange, FieldId
from tests.manifests import test_keda
from tests.manifests.conftest import changed_lines, lost_comments, workload

raw, overlay, chart = test_keda.raw, test_keda.overlay, test_keda.chart  # its fixtures

SAFE = YAML(typ="safe", pure=True)

WEEKDAYS = (
    ("timezone", "Etc/UTC"),
    ("start", "0 7 * * 1-5"),
    ("end", "0 19 * * 1-5"),
    ("desiredReplicas", "8"),
)
SATURDAY = (
    ("timezone", "Etc/UTC"),
    ("start", "0 10 * * 6"),
    ("end", "0 14 * * 6"),
    ("desiredReplicas", "5"),
)


def _floors(root: Path, name: str, minimum: int, environment: str | None = None) -> EditResult:
    """Apply cron floors to workload ``name``: ``minReplicaCount`` and two triggers."""
    discovery = discover(root, RepoConfig())
    ref = workload(discovery.inventory, name, environment).ref
    changes = [
        FieldChange(ref, FieldId.HPA_MIN_REPLICAS, minimum),
        FieldChange(ref, FieldId.KEDA_TRIGGERS, 2, 0, triggers=(WEEKDAYS, SATURDAY)),
    ]
    return apply_changes(root, discovery, changes, RepoConfig(), write=True)


def _cron(document: dict) -> list[dict]:
    return [t for t in document["spec"]["triggers"] if t["type"] == "cron"]


def test_raw_yaml_gets_the_triggers_after_the_last_one_comments_and_quoting_kept(raw):
    before = (raw / "web.yaml").read_text()
    result = _floors(raw, "web", 1)
    assert not result.errors, result.errors
    after = (raw / "web.yaml").read_text()
    assert not lost_comments(before, after)
    _, added = changed_lines(result.diff)
    assert "  minReplicaCount: 1 # never fewer than two" in added
    assert added[1:] == [
        "    - type: cron",
        "      metadata:",
        "        timezone: Etc/UTC",
        '        start: "0 7 * * 1-5"',
        '        end: "0 19 * * 1-5"',
        '        desiredReplicas: "8"',
        "    - type: cron",
        "      metadata:",
        "        timezone: Etc/UTC",
        '        start: "0 10 * * 6"',
        '        end: "0 14 * * 6"',
        '        desiredReplicas: "5"',
    ]
    assert after.startswith(before.replace("minReplicaCount: 2", "minReplicaCount: 1"))
    scaler = list(SAFE.load_all(after))[1]
    assert [t["metadata"] for t in _cron(scaler)][1:] == [dict(WEEKDAYS), dict(SATURDAY)]
    hpa = workload(discover(raw, RepoConfig()).inventory, "web").hpa
    assert hpa is not None and hpa.keda is not None and hpa.min_replicas == 1
    assert hpa.keda.external == ("cron", "cron", "cron", "prometheus")


def test_kustomize_overlay_patch_carries_the_whole_trigger_list(overlay):
    result = _floors(overlay, "web", 1, "overlays/prod")
    assert not result.errors, result.errors
    patch = (overlay / "overlays/prod/tortoise-bot-patch.yaml").read_text()
    assert 'desiredReplicas: "8"' in patch and 'desiredReplicas: "5"' in patch
    assert "type: prometheus" in patch and 'value: "60"' in patch  # the list copied whole
    assert "Europe/Paris" in patch  # the trigger that was there stays
    assert any("adding to the KEDA triggers" in n.message for n in result.notes), result.notes
    base = (overlay / "base/web.yaml").read_text()
    assert "0 7 * * 1-5" not in base  # the shared base is not touched
    rendered = subprocess.run(
        ["kubectl", "kustomize", str(overlay / "overlays/prod")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    (scaler,) = [d for d in SAFE.load_all(rendered) if d["metadata"]["name"] == "web-scaler"]
    assert scaler["spec"]["minReplicaCount"] == 1 and scaler["spec"]["maxReplicaCount"] == 40
    assert [t["metadata"] for t in _cron(scaler)][1:] == [dict(WEEKDAYS), dict(SATURDAY)]
    assert [t["type"] for t in scaler["spec"]["triggers"]][:3] == ["cpu", "memory", "prometheus"]


def test_helm_values_get_the_triggers_under_keda_triggers(chart):
    values = chart / "chart/values.yaml"
    before = values.read_text()
    result = _floors(chart, "api", 2)
    assert not result.errors, result.errors
    after = values.read_text()
    assert not lost_comments(before, after)
    assert 'value: "70" # quoted, as KEDA reads strings' in after
    triggers = SAFE.load(after)["keda"]["triggers"]
    assert [t["type"] for t in triggers] == ["cpu", "rabbitmq", "cron", "cron"]
    assert triggers[2]["metadata"] == dict(WEEKDAYS)
    assert '        desiredReplicas: "8"' in after
    api = workload(discover(chart, RepoConfig()).inventory, "api").hpa
    assert api is not None and api.keda is not None and api.min_replicas == 2
    assert api.keda.external == ("cron", "cron", "rabbitmq")


def test_a_workload_without_a_scaled_object_takes_no_triggers(raw):
    (raw / "web.yaml").write_text((raw / "web.yaml").read_text().split("---")[0])
    discovery = discover(raw, RepoConfig())
    ref = workload(discovery.inventory, "web").ref
    change = FieldChange(ref, FieldId.KEDA_TRIGGERS, 1, 0, triggers=(WEEKDAYS,))
    result = apply_changes(raw, discovery, [change], RepoConfig(), write=True)
    assert result.errors and "no KEDA ScaledObject" in result.errors[0].message
    assert not result.files
