"""The quick subset (``-m "not slow"``) leaves out what ``tests/conftest.py`` names, and only
what exists: a renamed module would otherwise slip back into the inner loop unnoticed."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIRST, SLOW

TESTS = Path(__file__).resolve().parent


def test_every_slow_entry_names_a_test_folder_or_module():
    missing = [entry for entry in SLOW if not (TESTS / entry).exists()]
    assert not missing, missing
    assert all(entry.endswith("/") == (TESTS / entry).is_dir() for entry in SLOW)


def test_every_module_run_first_exists():
    missing = [entry for entry in FIRST if not (TESTS / entry).is_file()]
    assert not missing, missing
