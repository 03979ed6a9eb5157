"""Writing: a change set replaced as one unit (``journal``) and the unified diff of a change."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path

from bot.manifests.journal import write_change_set
from bot.model import FileChange


def write_atomically(root: Path, files: Sequence[FileChange]) -> None:
    """Write every file as one unit: all or none, also across a crash (``journal``).

    Raises ``OSError`` (everything rolled back) or ``JournalError`` (a file changed on disk
    since it was read, or another process holds the checkout too long: nothing written).
    """
    write_change_set(root, files)


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
