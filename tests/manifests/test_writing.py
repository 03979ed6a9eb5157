"""All-or-nothing writes (one unit through the journal) and the unified diff."""

from __future__ import annotations

import fcntl
import logging
import os
import stat
import time
from pathlib import Path

import pytest

from bot.manifests import journal
from bot.manifests.journal import JournalError, journal_dir, recover
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


def _tree(root: Path) -> dict[str, bytes]:
    return {k: v for k, v in snapshot(root).items() if not k.startswith(".git/")}


def _git_root(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def test_a_file_changed_since_it_was_read_stops_the_whole_set(tmp_path):
    root = _git_root(tmp_path)
    (root / "a.yaml").write_bytes(b"a: 1\n")
    (root / "b.yaml").write_bytes(b"b: edited meanwhile\n")
    before = _tree(root)
    changes = [
        FileChange("a.yaml", b"a: 1\n", b"a: 2\n"),
        FileChange("b.yaml", b"b: 1\n", b"b: 2\n"),
    ]
    with pytest.raises(JournalError, match="changed on disk"):
        write_atomically(root, changes)
    assert _tree(root) == before


def test_modes_are_kept_and_new_files_follow_the_umask(tmp_path):
    root = _git_root(tmp_path)
    (root / "run.sh").write_bytes(b"old\n")
    os.chmod(root / "run.sh", 0o750)
    old_umask = os.umask(0o022)
    try:
        write_atomically(
            root,
            [FileChange("run.sh", b"old\n", b"new\n"), FileChange("d/new.yaml", b"", b"n: 1\n")],
        )
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((root / "run.sh").stat().st_mode) == 0o750
    assert stat.S_IMODE((root / "d/new.yaml").stat().st_mode) == 0o644


def test_the_journal_lives_in_git_or_outside_the_tree(tmp_path):
    assert journal_dir(_git_root(tmp_path)) == tmp_path / "repo/.git/tortoise-bot"
    plain = tmp_path / "plain"
    plain.mkdir()
    outside = journal_dir(plain)
    assert plain not in outside.parents and outside.parent.name.startswith("tortoise-bot-journals")
    write_atomically(plain, [FileChange("a.yaml", b"", b"a: 1\n")])
    assert snapshot(plain) == {"a.yaml": b"a: 1\n"}  # nothing of the journal in the tree


def _interrupted(root: Path, changes: list[FileChange], renamed: int) -> None:
    """What a process killed after ``renamed`` renames of ``changes`` leaves behind."""
    real = os.replace
    calls: list[str] = []

    def replace(src, dst):
        if str(src).endswith(".tmp") and ".tortoise-bot-" in str(src):
            if len(calls) == renamed:
                raise KeyboardInterrupt  # stands for the kill: no rollback runs
            calls.append(dst)
        return real(src, dst)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "replace", replace)
        with pytest.raises(KeyboardInterrupt):
            write_atomically(root, changes)


def test_recovery_restores_a_half_renamed_set_but_leaves_a_hand_edited_file(tmp_path, caplog):
    root = _git_root(tmp_path)
    files = {f"f{i}.yaml": f"v: {i}\n".encode() for i in range(4)}
    for name, data in files.items():
        (root / name).write_bytes(data)
    changes = [FileChange(n, d, d.replace(b"v", b"w")) for n, d in files.items()]
    changes.append(FileChange("new/n.yaml", b"", b"n: 1\n"))
    _interrupted(root, changes, renamed=3)
    assert (root / "f0.yaml").read_bytes() == b"w: 0\n" and (
        root / "f3.yaml"
    ).read_bytes() == b"v: 3\n"
    (root / "f1.yaml").write_bytes(b"edited by hand\n")
    caplog.set_level(logging.WARNING, "bot.manifests.journal")
    recovery = recover(root)
    assert recovery is not None and recovery.state == "applying"
    assert recovery.restored == ("f0.yaml", "f2.yaml") and recovery.left == ("f1.yaml",)
    assert _tree(root) == {**files, "f1.yaml": b"edited by hand\n"}
    assert "f1.yaml" in caplog.text
    assert recover(root) is None  # cleared


def test_a_second_writer_waits_a_bounded_time(tmp_path, monkeypatch):
    root = _git_root(tmp_path)
    directory = journal_dir(root)
    directory.mkdir(parents=True)
    monkeypatch.setattr(journal, "LOCK_WAIT_S", 0.2)
    with open(directory / "lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        began = time.monotonic()
        with pytest.raises(JournalError, match="another process"):
            write_atomically(root, [FileChange("a.yaml", b"", b"a: 1\n")])
        assert time.monotonic() - began < 2
    assert not (root / "a.yaml").exists()
