"""The demo shop served through ``serve_repository`` against the GitHub emulator, with its
opt-in file amended: ``demo_shop(extra, grouping=...)`` gives a function serving it once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bot.forge.github import GitHubForge
from bot.forge.github.auth import TokenCredentials
from bot.pipeline.serve import RepositoryReport, serve_repository
from tests.support.github.scenario import settings as fast_settings
from tests.test_pipeline import demo_settings, demo_source

__all__ = ["REPO", "demo_settings", "demo_shop", "demo_source"]

DEMO = Path(__file__).resolve().parents[2] / "bot" / "demo"
REPO = "octo/shop"

Serve = Callable[..., RepositoryReport]
"""``serve(selected=None)``: one run of the demo shop."""


def demo_files(extra: bytes, grouping: str) -> dict[str, bytes]:
    """The demo repository's files, its pull requests grouped by ``grouping``, ``extra``
    appended to the ``pull_requests`` section of its opt-in file."""
    root = DEMO / "repo"
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    config = files[".tortoise-bot.yaml"]
    assert config.rstrip().endswith(b"labels: [right-sizing]")
    assert b"  grouping: workload\n" in config
    config = config.replace(b"  grouping: workload\n", f"  grouping: {grouping}\n".encode())
    files[".tortoise-bot.yaml"] = config + extra
    return files


@pytest.fixture
def demo_shop(github_emulator, tmp_path, demo_source, demo_settings):
    """``demo_shop(extra, grouping="workload")``: push the amended demo shop to the emulator
    and return a function serving it once (``selected``: a selection of workloads)."""

    def make(extra: bytes, *, grouping: str = "workload") -> Serve:
        gh = github_emulator
        gh.create_repository("octo", "shop", demo_files(extra, grouping))
        forge = GitHubForge(fast_settings(gh), TokenCredentials(gh.token), workdir=tmp_path)
        count = iter(range(1000))

        def once(selected=None) -> RepositoryReport:
            forge.workdir = tmp_path / f"run{next(count)}"
            return serve_repository(
                REPO, forge, demo_source, demo_settings, now_s=demo_source.end_s, selected=selected
            )

        return once

    return make
