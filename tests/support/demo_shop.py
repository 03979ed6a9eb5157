"""The demo shop repository copied into a test's directory, simulated and planned through the
console script: the set-up the end-to-end plan tests share."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.conftest import PROJECT

DEMO = PROJECT / "bot" / "demo"
NOW = "2026-11-01T00:00:00Z"
"""The fixed clock every demo-shop simulation and plan runs at."""

Run = Callable[..., subprocess.CompletedProcess[str]]
"""The console script: ``run("plan", "--demo")`` -> CompletedProcess."""


def console(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed console script, for module-scoped fixtures (the ``cli`` fixture is
    function-scoped)."""
    exe = PROJECT / ".venv" / "bin" / "tortoise-bot"
    return subprocess.run(
        [str(exe), *args], check=False, capture_output=True, text=True, timeout=300
    )


def copy_shop(root: Path) -> Path:
    """The demo repository copied to ``root``; the caller adds its manifests under
    ``apps/raw``."""
    shutil.copytree(DEMO / "repo", root)
    return root


def shop_with(root: Path, manifests: Mapping[str, Path]) -> Path:
    """The demo repository copied to ``root`` with ``manifests`` (name under ``apps/raw`` ->
    the file to copy there) added."""
    copy_shop(root)
    for name, manifest in manifests.items():
        shutil.copy(manifest, root / "apps" / "raw" / name)
    return root


def simulated(shop: Path) -> Path:
    """``shop``'s simulated history (``simulate``), written beside it as ``history.zip``."""
    out = shop.parent / "history.zip"
    simulate(console, shop, out)
    return out


def simulate(run: Run, shop: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """Fourteen days of simulated history for ``shop`` written to ``out`` (seed 3), checked to
    succeed."""
    args = ("--repo", str(shop), "--out", str(out), "--days", "14", "--seed", "3", "--now", NOW)
    result = run("simulate", *args)
    assert result.returncode == 0, result.stderr
    return result


def plan(run: Run, shop: Path, history: Path, *more: str) -> subprocess.CompletedProcess[str]:
    """``plan`` of ``shop`` on the ``history`` snapshot, checked to succeed."""
    result = run("plan", "--repo", str(shop), "--snapshot", str(history), "--now", NOW, *more)
    assert result.returncode == 0, result.stderr
    return result
