"""A snapshot records the repository and the selection it was taken for; ``plan``,
``explain`` and ``run`` refuse one recorded for another repository (exit 2) unless ``--force``,
and accept older snapshots without the record with a note."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bot.commands.common import WorkloadSelector
from bot.commands.origin import Repository, checkout_origin, without_credentials
from bot.metrics.snapshot import SnapshotOrigin, read_snapshot
from tests.conftest import PROJECT
from tests.support.demo_shop import console

DEMO = PROJECT / "bot" / "demo"
TOKEN = "ghp_notarealtokenbutlongenough0123"


def _checkout(root: Path, remote: str | None) -> Path:
    shutil.copytree(DEMO / "repo", root)
    if remote is not None:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        subprocess.run(["git", "-C", str(root), "remote", "add", "origin", remote], check=True)
    return root


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo shop cloned from ``github.com/octo/shop`` (a token in its remote URL), read and
    never changed by the tests."""
    root = tmp_path_factory.mktemp("origin") / "shop"
    return _checkout(root, f"https://x-access-token:{TOKEN}@github.com/octo/shop.git")


@pytest.fixture(scope="module")
def recorded(shop: Path) -> Path:
    """A simulated snapshot of ``shop``, once for the module."""
    out = shop.parent / "shop.zip"
    made = console("simulate", "--repo", str(shop), "--out", str(out), "--days", "2")
    assert made.returncode == 0, made.stderr
    return out


def _plan(cli, root: Path, snapshot: Path, *more: str):
    config = str(DEMO / "bot.yaml")
    args = ("--repo", str(root), "--snapshot", str(snapshot), "--config", config, *more)
    return cli("plan", *args, "--format", "json")


def test_a_snapshot_records_its_repository_without_credentials(shop, recorded):
    origin = read_snapshot(recorded).origin
    assert origin == SnapshotOrigin("shop", "https://github.com/octo/shop.git", {})
    assert TOKEN not in recorded.read_bytes().decode("latin-1")
    chosen = checkout_origin(shop, WorkloadSelector(namespace="shop", environment="prod"))
    assert chosen.selection == {"namespace": "shop", "environment": "prod"}


def test_the_same_repository_replays_its_snapshot_elsewhere_too(cli, recorded, tmp_path):
    # another clone of the same repository, over ssh, in a directory of another name
    clone = _checkout(tmp_path / "work", "git@github.com:Octo/shop")
    result = _plan(cli, clone, recorded)
    assert result.returncode == 0, result.stderr
    assert "note:" not in result.stderr


@pytest.mark.parametrize("command", ["plan", "explain"])
def test_a_snapshot_of_another_repository_is_refused_unless_forced(
    cli, recorded, tmp_path, command
):
    other = _checkout(tmp_path / "shop-copy", "https://github.com/octo/billing.git")
    extra = ("frontend",) if command == "explain" else ()
    config = str(DEMO / "bot.yaml")
    args = ("--repo", str(other), "--snapshot", str(recorded), "--config", config, *extra)
    refused = cli(command, *args)
    assert refused.returncode == 2
    assert f"--snapshot {recorded} was recorded for repository shop " in refused.stderr
    assert "https://github.com/octo/shop.git), not shop-copy" in refused.stderr
    assert "--force" in refused.stderr and "Traceback" not in refused.stderr
    forced = cli(command, *args, "--force")
    assert forced.returncode == 0, forced.stderr
    assert "replayed on shop-copy (https://github.com/octo/billing.git) (--force)" in forced.stderr


def test_an_older_snapshot_without_the_record_is_accepted_with_a_note(cli, shop):
    result = _plan(cli, shop, DEMO / "snapshot.zip")
    assert result.returncode == 0, result.stderr
    assert "does not record its repository" in result.stderr


def test_a_run_refuses_a_snapshot_of_another_repository(cli, recorded, tmp_path):
    other = _checkout(tmp_path / "billing", None)
    args = ["run", "--dry-run", "--out", str(tmp_path / "preview"), "--repo", str(other)]
    args += ["--snapshot", str(recorded), "--config", str(DEMO / "bot.yaml")]
    refused = cli(*args)
    assert refused.returncode == 2
    assert "recorded for repository shop" in refused.stderr and "not billing" in refused.stderr
    assert not (tmp_path / "preview").exists()
    assert cli(*args, "--force").returncode == 0


def test_forge_names_match_the_recorded_remote_or_name():
    origin = SnapshotOrigin("shop", "git@github.com:octo/shop.git")
    assert Repository("octo/shop").matches(origin)
    assert not Repository("octo/billing").matches(origin)
    assert Repository("octo/shop").matches(SnapshotOrigin("shop"))
    assert without_credentials("https://u:p@h.example/x") == "https://h.example/x"
