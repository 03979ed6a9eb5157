"""Pod-level ``spec.resources`` and ``resizePolicy`` are read as rendered (an overlay's patch
wins) and never edited: an edit of the containers' requests leaves both byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path

from bot.config.repo import RepoConfig
from bot.manifests import discover
from bot.model import MIB, ResourceValues
from tests.conftest import require_binary
from tests.manifests.conftest import edit

HERE = Path(__file__).parent / "podlevel"
"""``base/pooled.yaml``: pod-level requests (1 core, 1 GiB) and limits (2 cores, 640 MiB), a
``resizePolicy``; ``overlays/prod``: a patch raising the pod's memory limit to 2 GiB."""


def test_an_overlay_patch_of_the_pod_limits_is_what_is_read(tmp_path: Path) -> None:
    require_binary("kubectl")
    root = tmp_path / "repo"
    shutil.copytree(HERE, root)
    inventory = discover(root, RepoConfig()).inventory
    (prod,) = [w for w in inventory.workloads if w.ref.environment == "overlays/prod"]
    assert prod.pod_limits == ResourceValues(2.0, 2048 * MIB)
    assert prod.pod_requests == ResourceValues(1.0, 1024 * MIB)
    app = prod.container("app")
    assert app is not None and app.restart_on_resize == ("memory",)


def test_an_overlay_edit_leaves_pod_resources_and_resize_policy_alone(tmp_path: Path) -> None:
    require_binary("kubectl")
    root = tmp_path / "repo"
    shutil.copytree(HERE, root)
    files = {p: p.read_text() for p in root.rglob("*.yaml")}
    result = edit(
        root, [("pooled", "requests.memory", 300 * MIB, "app")], environment="overlays/prod"
    )
    assert not result.errors, result.errors
    assert result.files
    base = root / "base" / "pooled.yaml"
    assert base.read_text() == files[base]  # read by the base's render: never edited
    patch = root / "overlays" / "prod" / "pod-limits.yaml"
    written = patch.read_text()
    assert written.startswith(files[patch])  # the pod-level block as it was, the edit added
    added = written[len(files[patch]) :]
    assert "300Mi" in added and "limits" not in added and "resizePolicy" not in added
    inventory = discover(root, RepoConfig()).inventory
    (prod,) = [w for w in inventory.workloads if w.ref.environment == "overlays/prod"]
    assert prod.pod_limits == ResourceValues(2.0, 2048 * MIB)
    app = prod.container("app")
    assert app is not None and app.restart_on_resize == ("memory",)
    assert app.requests.memory_bytes == 300 * MIB
