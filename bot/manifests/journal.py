"""Change sets written as one unit: record, stage, rename, clear; undone on the next start.

Each file is replaced atomically (temporary file, fsync, rename), but a change set is only whole
when every rename happened. A process killed between two renames would leave some files changed
and others not, and a rerun would then plan a second step on top of the changed ones. The
journal makes the set one unit:

1. lock the journal (``flock``, released by the kernel when the process dies; a second writer
   waits at most ``LOCK_WAIT_S``);
2. record the set: ``set.json`` in state ``staging`` names every target, its temporary
   (``.tortoise-bot-<hash>.tmp`` next to it) and the directories about to be created, before any
   temporary exists;
3. stage: the old bytes of every target go into ``old.bin``, the new bytes into the
   temporaries; everything is fsynced;
4. commit: ``set.json`` is rewritten in state ``applying`` (temporary file + rename);
5. rename every temporary over its target, fsync the directories;
6. clear: ``set.json``, then ``old.bin``, are removed.

``recover(root)`` runs before every discovery and every write. A set left in state ``staging``
changed no target: its temporaries and new directories are removed. A set left in state
``applying`` is rolled back: every target holding its new bytes gets its old bytes back through
a temporary and a rename, and a file the set created is removed. The checkout is then exactly
as before the interrupted run, so the rerun plans from the same files and writes the same bytes
as one uninterrupted run. A target holding neither its old nor its new bytes (edited by hand
after the crash) is left as it is and named in the warning. Recovery is itself idempotent: it
decides from the targets' contents (SHA-256), so a recovery killed half-way is finished by the
next one.

The journal lives in ``.git/tortoise-bot/`` when the root is a git checkout, else in
``<temporary directory>/tortoise-bot-journals-<uid>/<hash of the root's path>/``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import stat
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.manifests.errors import EditError
from bot.model import FileChange
from bot.nesting import check_json

log = logging.getLogger("bot.manifests.journal")

JOURNAL_VERSION = 1
"""Format of ``set.json``; a journal of another version is refused, never guessed at."""

LOCK_WAIT_S = 60.0
"""Longest wait for another process writing the same checkout, seconds."""

LOCK_POLL_S = 0.05
"""Interval between two attempts to take the lock, seconds."""

SET_FILE = "set.json"
OLD_FILE = "old.bin"
LOCK_FILE = "lock"

STAGING = "staging"
APPLYING = "applying"


class JournalError(EditError):
    """The journal cannot be used: another writer holds it too long, or it is unreadable."""


@dataclass(frozen=True, slots=True)
class Recovery:
    """What ``recover`` did to an interrupted change set."""

    state: str
    """``staging`` (no target was touched) or ``applying`` (targets were being renamed)."""
    restored: tuple[str, ...] = ()
    """Targets given back their old bytes (or removed, when the set created them)."""
    left: tuple[str, ...] = ()
    """Targets holding neither the old nor the new bytes: changed since, left alone."""
    temporaries: int = 0
    """Temporary files removed."""


# --------------------------------------------------------------------------- where


def journal_dir(root: Path) -> Path:
    """The journal directory of the checkout at ``root`` (not created)."""
    git = root / ".git"
    if git.is_dir() and os.access(git, os.W_OK):
        return git / "tortoise-bot"
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"tortoise-bot-journals-{os.getuid()}" / digest


def temporary_name(path: str) -> str:
    """Repository-relative path of the temporary file staged for ``path`` (same directory)."""
    head, _, _ = path.rpartition("/")
    name = f".tortoise-bot-{hashlib.sha256(path.encode()).hexdigest()[:16]}.tmp"
    return f"{head}/{name}" if head else name


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- low-level writes


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_file(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """``data`` into ``path`` (created or truncated), fsynced; ``mode`` applied when given."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if mode is not None:
            os.fchmod(fd, mode)
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace_file(path: Path, data: bytes, tmp: Path) -> None:
    """Atomically give ``path`` the bytes ``data`` through the temporary ``tmp``."""
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else None
    _write_file(tmp, data, mode=mode)
    os.replace(tmp, path)


def _read(path: Path) -> bytes | None:
    """Bytes of a regular file, None when absent."""
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _unlink(path: Path) -> bool:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


# --------------------------------------------------------------------------- lock


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    wait_s = LOCK_WAIT_S
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise JournalError(
                        "",
                        0,
                        f"another process has been writing this checkout for {wait_s:.0f} s "
                        f"(journal {directory}); nothing written",
                    ) from None
                time.sleep(LOCK_POLL_S)
        yield
    finally:
        os.close(fd)  # releases the lock


# --------------------------------------------------------------------------- the record


def _record(directory: Path, data: dict[str, Any]) -> None:
    """Write ``set.json`` atomically and durably."""
    tmp = directory / (SET_FILE + ".tmp")
    _write_file(tmp, json.dumps(data, sort_keys=True).encode())
    os.replace(tmp, directory / SET_FILE)
    _fsync_dir(directory)


def _clear(directory: Path) -> None:
    """Remove the record (the set is finished or undone), then the old bytes."""
    if _unlink(directory / SET_FILE):
        _fsync_dir(directory)
    _unlink(directory / OLD_FILE)
    _unlink(directory / (SET_FILE + ".tmp"))


def _load(directory: Path) -> dict[str, Any] | None:
    raw = _read(directory / SET_FILE)
    if raw is None:
        return None
    try:
        check_json(raw)
        data = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("version") != JOURNAL_VERSION:
        raise JournalError(
            "", 0, f"unreadable change-set journal {directory / SET_FILE}; nothing written"
        )
    return data


# --------------------------------------------------------------------------- recovery


def _undo(root: Path, entry: dict[str, Any], old_blob: bytes) -> str:
    """Give one target of an interrupted set its old bytes: ``kept`` (it still has them),
    ``restored``, or ``left`` (it holds neither the old nor the new bytes)."""
    target = root / entry["path"]
    now = _read(target)
    created = entry["old"] is None
    if (now is None) if created else (now is not None and _sha(now) == entry["old_sha256"]):
        return "kept"  # never renamed, or already restored
    if now is None or _sha(now) != entry["new_sha256"]:
        return "left"
    if created:
        os.unlink(target)
        return "restored"
    start, length = entry["old"]
    old = old_blob[start : start + length]
    if _sha(old) != entry["old_sha256"]:
        return "left"
    _replace_file(target, old, root / entry["temp"])
    return "restored"


def _roll_back(root: Path, directory: Path, data: dict[str, Any]) -> Recovery:
    """Undo the set ``data`` describes (see the module docstring); clears the journal."""
    state = str(data["state"])
    entries: list[dict[str, Any]] = data["entries"]
    temporaries = sum(_unlink(root / e["temp"]) for e in entries)
    done: dict[str, list[str]] = {"kept": [], "restored": [], "left": []}
    if state == APPLYING:
        old_blob = _read(directory / OLD_FILE) or b""
        for entry in entries:
            done[_undo(root, entry, old_blob)].append(entry["path"])
        for parent in sorted({(root / e["path"]).parent for e in entries}):
            if parent.is_dir():
                _fsync_dir(parent)
    for created in sorted(data.get("dirs", []), key=len, reverse=True):
        with contextlib.suppress(OSError):  # not empty (someone put a file there), or gone
            os.rmdir(root / created)
    _clear(directory)
    return Recovery(state, tuple(done["restored"]), tuple(done["left"]), temporaries)


def _recover_locked(root: Path, directory: Path) -> Recovery | None:
    data = _load(directory)
    if data is None:
        _clear(directory)  # leftovers of a clear that was interrupted
        return None
    recovery = _roll_back(root, directory, data)
    log.warning(
        "an interrupted change set was undone in %s: %d file(s) restored, %d temporary file(s) "
        "removed%s",
        root,
        len(recovery.restored),
        recovery.temporaries,
        f"; changed since and left as they are: {', '.join(recovery.left)}"
        if recovery.left
        else "",
    )
    return recovery


def recover(root: Path) -> Recovery | None:
    """Undo a change set interrupted in ``root`` (None when there was none)."""
    directory = journal_dir(root)
    if not (directory / SET_FILE).exists():
        return None
    with _locked(directory):
        return _recover_locked(root, directory)


# --------------------------------------------------------------------------- writing a set


def _new_dirs(root: Path, paths: Sequence[str]) -> list[str]:
    """Directories (repository-relative, parents first) that writing ``paths`` creates."""
    out: list[str] = []
    for path in paths:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            if sub not in out and not (root / sub).exists():
                out.append(sub)
    return out


def write_change_set(root: Path, files: Sequence[FileChange]) -> None:
    """Write ``files`` under ``root`` as one unit (see the module docstring).

    Every target must still hold its ``old`` bytes (a file with ``old == b""`` that does not
    exist is created); otherwise nothing is written and ``JournalError`` names the file. On any
    ``OSError`` the set is rolled back before the error is raised.
    """
    if not files:
        return
    directory = journal_dir(root)
    with _locked(directory):
        _recover_locked(root, directory)
        entries: list[dict[str, Any]] = []
        for change in files:
            now = _read(root / change.path)
            if (now if now is not None else b"") != change.old:
                raise JournalError(
                    change.path, 0, "file changed on disk since it was read; nothing written"
                )
            entries.append(
                {
                    "path": change.path,
                    "temp": temporary_name(change.path),
                    "old": None if now is None else [0, 0],
                    "old_sha256": _sha(change.old),
                    "new_sha256": _sha(change.new),
                }
            )
        data: dict[str, Any] = {
            "version": JOURNAL_VERSION,
            "state": STAGING,
            "root": str(root),
            "dirs": _new_dirs(root, [c.path for c in files]),
            "entries": entries,
        }
        _record(directory, data)
        try:
            _stage(root, directory, files, data)
            data["state"] = APPLYING
            _record(directory, data)
            for entry in entries:
                os.replace(root / entry["temp"], root / entry["path"])
            for parent in sorted({(root / e["path"]).parent for e in entries}):
                _fsync_dir(parent)
        except OSError:
            _roll_back(root, directory, data)
            raise
        _clear(directory)


def _stage(root: Path, directory: Path, files: Sequence[FileChange], data: dict[str, Any]) -> None:
    """Old bytes into ``old.bin`` (offsets into ``data``), new bytes into the temporaries."""
    blob = bytearray()
    for change, entry in zip(files, data["entries"], strict=True):
        if entry["old"] is not None:
            entry["old"] = [len(blob), len(change.old)]
            blob += change.old
    _write_file(directory / OLD_FILE, bytes(blob), mode=0o600)
    for created in data["dirs"]:
        os.mkdir(root / created)
    for change, entry in zip(files, data["entries"], strict=True):
        target = root / change.path
        mode = stat.S_IMODE(target.stat().st_mode) if entry["old"] is not None else None
        _write_file(root / entry["temp"], change.new, mode=mode)


__all__ = ["JournalError", "Recovery", "journal_dir", "recover", "write_change_set"]
