"""Writing: all-or-nothing file replacement and the unified diff of a change."""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bot.model import (
    FileChange,
)


def write_atomically(root: Path, files: Sequence[FileChange]) -> None:
    """Write every file through a temporary file + fsync + rename; restore all on failure."""
    staged: list[tuple[Path, Path]] = []
    try:
        for change in files:
            target = root / change.path
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(
                prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
            )
            with os.fdopen(fd, "wb") as handle:
                handle.write(change.new)
                handle.flush()
                os.fsync(handle.fileno())
            if target.exists():
                shutil.copymode(target, tmp_name)
            staged.append((Path(tmp_name), target))
    except OSError:
        for staged_tmp, _ in staged:
            staged_tmp.unlink(missing_ok=True)
        raise
    done: list[FileChange] = []
    try:
        for (staged_tmp, target), change in zip(staged, files, strict=True):
            os.replace(staged_tmp, target)
            done.append(change)
    except OSError:
        for change in done:
            target = root / change.path
            if change.old or target.exists():
                target.write_bytes(change.old)
        for staged_tmp, _ in staged:
            staged_tmp.unlink(missing_ok=True)
        raise


def unified_diff(files: Sequence[FileChange]) -> str:
    """The unified diff of the changed files, ``a/`` and ``b/`` paths relative to the root."""
    out: list[str] = []
    for change in files:
        old = change.old.decode("utf-8").removeprefix("\ufeff")
        new = change.new.decode("utf-8").removeprefix("\ufeff")
        lines = difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{change.path}" if change.old else "/dev/null",
            tofile=f"b/{change.path}",
        )
        for line in lines:
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
