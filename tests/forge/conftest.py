"""Fixtures of the forge tests: the GitHub emulator and PyGithub clients bound to it."""

from __future__ import annotations

from tests.support.github import github_emulator

__all__ = ["github_emulator"]
