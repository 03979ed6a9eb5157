"""A faithful local GitHub for tests: REST (OpenAPI-validated) and git smart HTTP.

Start one per test with the ``github_emulator`` fixture (import it into a ``conftest.py``)::

    from tests.support.github import github_emulator  # noqa: F401  (fixture)

    def test_x(github_emulator):
        repo = github_emulator.create_repository("octo", "shop", {"k.yaml": b"..."})

or as a context manager: ``with GitHubEmulator() as gh: ...``. Leaving it raises
``EmulatorViolation`` when any exchange broke GitHub's OpenAPI description.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.github.server import (
    API_PREFIX,
    Call,
    EmulatorViolation,
    GitHubEmulator,
    Issue,
    Repository,
)

__all__ = [
    "API_PREFIX",
    "Call",
    "EmulatorViolation",
    "GitHubEmulator",
    "Issue",
    "Repository",
    "github_emulator",
]


@pytest.fixture
def github_emulator(tmp_path: Path) -> Iterator[GitHubEmulator]:
    """A started emulator whose bare repositories live under ``tmp_path/github``."""
    with GitHubEmulator(tmp_path / "github") as gh:
        yield gh
