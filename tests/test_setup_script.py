"""``scripts/setup --runtime`` (what ``scripts/demo`` runs) installs only when pyproject.toml,
setup.py or the decoder's C source changed: a fake ``.venv`` logs every pip call."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import PROJECT

INPUTS = ("pyproject.toml", "setup.py", "bot/metrics/xor_chunks.c", "scripts/setup")


def _checkout(root: Path) -> Path:
    """The files ``scripts/setup`` reads, and a ``.venv`` whose pip only logs its calls."""
    for name in INPUTS:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PROJECT / name, root / name)
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "pip").write_text(f'#!/bin/sh\necho "$*" >> "{root}/pip.log"\n')
    for exe in bin_dir.iterdir():
        exe.chmod(0o755)
    return root / "pip.log"


def _setup(root: Path) -> None:
    subprocess.run(["bash", "scripts/setup", "--runtime"], cwd=root, check=True, timeout=60)


def test_runtime_setup_installs_once_then_again_only_after_a_change(tmp_path):
    log = _checkout(tmp_path)
    _setup(tmp_path)
    _setup(tmp_path)
    assert log.read_text().splitlines() == ["install -q --disable-pip-version-check -e ."]
    with (tmp_path / "pyproject.toml").open("a") as out:
        out.write("\n# a dependency changed\n")
    _setup(tmp_path)
    assert len(log.read_text().splitlines()) == 2


def test_a_dev_install_serves_the_runtime_one(tmp_path):
    log = _checkout(tmp_path)
    hashed = subprocess.run(
        "cat pyproject.toml setup.py bot/metrics/xor_chunks.c | sha256sum | cut -d' ' -f1",
        shell=True, cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    (tmp_path / ".venv" / ".installed-dev").write_text(hashed)
    _setup(tmp_path)
    assert not log.exists()
