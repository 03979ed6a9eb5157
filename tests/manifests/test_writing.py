"""All-or-nothing writes and the unified diff."""

from __future__ import annotations

import pytest

from bot.manifests.writing import unified_diff, write_atomically
from bot.model import FileChange
from tests.manifests.conftest import snapshot


def test_a_failed_write_changes_no_file_and_leaves_no_temporary_file(tmp_path):
    (tmp_path / "a.yaml").write_bytes(b"a: 1\n")
    (tmp_path / "blocker").write_bytes(b"a file where a directory is needed\n")
    before = snapshot(tmp_path)
    changes = [
        FileChange("a.yaml", b"a: 1\n", b"a: 2\n"),
        FileChange("blocker/b.yaml", b"", b"b: 1\n"),
    ]
    with pytest.raises(OSError):
        write_atomically(tmp_path, changes)
    assert snapshot(tmp_path) == before


def test_new_files_and_directories_are_created(tmp_path):
    write_atomically(tmp_path, [FileChange("overlays/prod/patch.yaml", b"", b"x: 1\n")])
    assert (tmp_path / "overlays/prod/patch.yaml").read_bytes() == b"x: 1\n"
    assert [p.name for p in (tmp_path / "overlays/prod").iterdir()] == ["patch.yaml"]


def test_unified_diff_paths_bom_and_missing_final_newline():
    diff = unified_diff(
        [
            FileChange("a.yaml", "\ufeffa: 1\nb: 2".encode(), "\ufeffa: 1\nb: 3".encode()),
            FileChange("new.yaml", b"", b"n: 1\n"),
        ]
    )
    assert diff == (
        "--- a/a.yaml\n+++ b/a.yaml\n@@ -1,2 +1,2 @@\n a: 1\n-b: 2\n\\ No newline at end of file\n"
        "+b: 3\n\\ No newline at end of file\n"
        "--- /dev/null\n+++ b/new.yaml\n@@ -0,0 +1 @@\n+n: 1\n"
    )
