"""The real-world corpus in ``../shared/fixtures/manifests`` (read in place, never copied).

- every YAML file parses and round-trips byte for byte, and every scalar span is exact;
- the inventory of every overlay that builds matches what ``kubectl kustomize`` renders;
- a representative edit on every workload changes only the intended lines, comments intact.
"""

from __future__ import annotations

import difflib
import subprocess
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from bot.config.repo import RepoConfig
from bot.manifests import apply_changes, discover
from bot.manifests.discovery import discover_index
from bot.manifests.quantities import bytes_from_quantity, cores_from_quantity
from bot.manifests.yamldoc import YScalar, parse_file, walk
from bot.model import FieldChange, FieldId
from tests.conftest import require_binary
from tests.manifests.conftest import changed_lines

TEMPLATES = "/templates/"


def corpus_files(root: Path) -> list[Path]:
    return sorted(
        p
        for p in root.rglob("*")
        if p.suffix in (".yaml", ".yml") and TEMPLATES not in p.as_posix()
    )


def test_every_file_round_trips_with_exact_spans(shared_manifests):
    files = corpus_files(shared_manifests)
    assert len(files) > 60
    for path in files:
        raw = path.read_bytes()
        parsed = parse_file(path.name, raw)
        assert parsed.encode(parsed.text) == raw, path
        for doc in parsed.documents:
            if doc.root is None:
                continue
            for _, node in walk(doc.root):
                if not isinstance(node, YScalar) or node.start == node.end:
                    continue
                span = parsed.text[node.start : node.end]
                if node.style == "":
                    assert span == node.text or "\n" in span, (path, node.line, span)
                elif node.style in ("'", '"'):
                    assert span[0] == node.style and span[-1] == node.style, (path, node.line)


def _render(directory: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [require_binary("kubectl"), "kustomize", str(directory)],
        capture_output=True,
        text=True,
        check=True,
    )
    return [d for d in YAML(typ="safe").load_all(done.stdout) if isinstance(d, dict)]


def test_inventory_matches_kubectl_for_every_overlay(shared_manifests):
    inventory = discover(shared_manifests, RepoConfig()).inventory
    overlays = [e for e in inventory.environments if (shared_manifests / e).is_dir()]
    assert "podinfo/deploy/overlays/production" in overlays
    assert "microservices-demo/kustomize" in overlays
    checked = 0
    for env in overlays:
        for obj in _render(shared_manifests / env):
            if obj.get("kind") not in ("Deployment", "StatefulSet"):
                continue
            meta = obj["metadata"]
            found = [
                w
                for w in inventory.workloads
                if w.ref.environment == env
                and w.ref.name == meta["name"]
                and w.ref.kind == obj["kind"]
                and w.ref.namespace == meta.get("namespace", "default")
            ]
            assert len(found) == 1, (env, meta)
            wl = found[0]
            assert wl.replicas == obj["spec"].get("replicas")
            pod = obj["spec"]["template"]["spec"]
            rendered = pod.get("initContainers", []) + pod["containers"]
            assert [c.name for c in wl.containers] == [c["name"] for c in rendered]
            for declared, container in zip(wl.containers, rendered, strict=True):
                res = container.get("resources", {})
                for group in ("requests", "limits"):
                    want = res.get(group) or {}
                    got = declared.requests if group == "requests" else declared.limits
                    cpu = want.get("cpu")
                    mem = want.get("memory")
                    assert got.cpu_cores == (cores_from_quantity(cpu) if cpu is not None else None)
                    assert got.memory_bytes == (
                        bytes_from_quantity(mem) if mem is not None else None
                    )
                    for resource in ("cpu", "memory"):
                        if want.get(resource) is not None:
                            assert f"{group}.{resource}" in declared.locations, (env, meta, group)
                checked += 1
    assert checked >= 30


def test_broken_overlays_are_reported_not_fatal(shared_manifests):
    inventory = discover(shared_manifests, RepoConfig()).inventory
    # the components are not overlays: they only build inside a kustomization that uses them
    assert not any("components" in e for e in inventory.environments)
    assert not [e for e in inventory.errors if "microservices-demo" in e.file], inventory.errors


def _value_part(line: str) -> tuple[str, str]:
    key, _, rest = line.partition(":")
    comment = rest[rest.index("#") :] if "#" in rest else ""
    return key, comment


def test_representative_edit_on_every_workload(shared_manifests):
    config = RepoConfig()
    disc = discover_index(shared_manifests, config)
    inventory = disc.inventory
    changes = []
    for wl in inventory.workloads:
        container = next((c for c in wl.containers if not c.init), wl.containers[0])
        current = container.requests.cpu_cores
        value = round((current or 0.1) + 0.05, 3)
        changes.append(
            FieldChange(wl.ref, FieldId.REQUESTS_CPU, value, current, container=container.name)
        )
    assert len(changes) >= 40
    result = apply_changes(shared_manifests, disc, changes, config, write=False)
    assert not result.failed, result.errors
    assert not result.errors
    by_path = {f.path: f for f in result.files}
    for change in result.files:
        old_lines = change.old.decode().splitlines()
        new_lines = change.new.decode().splitlines()
        if not change.old:  # a new overlay patch
            assert change.path.endswith("tortoise-bot-patch.yaml")
            continue
        removed, added = changed_lines(
            "".join(
                difflib.unified_diff(
                    [line + "\n" for line in old_lines], [line + "\n" for line in new_lines]
                )
            )
        )
        if change.path.endswith("kustomization.yaml"):
            assert not removed and added[-1].endswith("tortoise-bot-patch.yaml")
            continue
        if len(removed) == len(added):
            for old, new in zip(removed, added, strict=True):
                assert _value_part(old) == _value_part(new), (change.path, old, new)
                assert old.split(":")[0].strip() == "cpu"
        else:  # a new key: nothing removed, only added lines
            assert not removed, (change.path, removed)
    # shared podinfo bases are never edited: each overlay gets its own patch
    assert not any(p.startswith("podinfo/deploy/bases/") for p in by_path)
    for overlay in ("dev", "staging", "production"):
        assert f"podinfo/deploy/overlays/{overlay}/tortoise-bot-patch.yaml" in by_path
    # the flux overlays receive the value inside their own HelmRelease values patch
    assert "flux2-kustomize-helm-example/apps/production/podinfo-values.yaml" in by_path
    assert "flux2-kustomize-helm-example/apps/base/podinfo/release.yaml" not in by_path


def test_podinfo_chart_with_a_values_mapping(shared_manifests):
    config = RepoConfig.model_validate(
        {
            "environments": [
                {
                    "name": "prod",
                    "path": "podinfo/charts/podinfo/values-prod.yaml",
                    "namespace": "web",
                }
            ],
            "helm": [
                {
                    "chart": "podinfo/charts/podinfo",
                    "workloads": [
                        {
                            "name": "podinfo",
                            "resources": "resources",
                            "replicas": "replicaCount",
                            "hpa_enabled": "hpa.enabled",
                            "hpa_min_replicas": "replicaCount",
                            "hpa_max_replicas": "hpa.maxReplicas",
                            "hpa_target_cpu_percent": "hpa.cpu",
                        }
                    ],
                }
            ],
        }
    )
    discovery = discover(shared_manifests, config)
    inventory = discovery.inventory
    prod = next(w for w in inventory.workloads if w.ref.environment == "prod")
    assert str(prod.ref) == "Deployment/web/podinfo@prod"
    assert prod.hpa is not None and prod.hpa.max_replicas == 5 and prod.hpa.min_replicas == 1
    assert [(t.resource, t.utilization_percent) for t in prod.hpa.targets] == [("cpu", 99)]
    changes = [
        FieldChange(prod.ref, FieldId.HPA_TARGET_CPU, 80, container="podinfo"),
        FieldChange(prod.ref, FieldId.LIMITS_CPU, 1, container="podinfo"),
    ]
    result = apply_changes(shared_manifests, discovery, changes, config, write=False)
    assert not result.errors, result.errors
    assert [f.path for f in result.files] == ["podinfo/charts/podinfo/values-prod.yaml"]
    assert changed_lines(result.diff) == (
        ["  cpu: 99"],
        ["  cpu: 80", "    cpu: 1000m"],
    )
