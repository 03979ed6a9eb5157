"""Kill a process with SIGKILL just before its K-th file-system operation.

``install(kill_at, log)`` wraps the ``os`` functions that change files or make them durable
(``OPERATIONS``), counts every call and sends SIGKILL to the process itself before call
``kill_at`` runs (0 = never), so the process dies exactly between two operations, as a
``kill -9`` at that moment would leave it. With ``log``, each call is appended to that file as
``<n> <operation> <file name or fd>`` first, which is how a test picks its kill points.

Run as a program (``main``), it is either a ``tortoise-bot`` command line with the hook
installed (``cli``), or many kills of one change set from a single process (``count``, then
``kill``): each attempt forks, the child writes with the hook installed and dies, the parent
recovers, checks the tree and writes the set again.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

OPERATIONS = ("open", "write", "fchmod", "fsync", "replace", "rename", "unlink", "mkdir", "rmdir")
"""``os`` functions counted: everything a writer does to a file, its name or its directory."""


def _describe(args: tuple[Any, ...]) -> str:
    first = args[0] if args else ""
    if isinstance(first, (str, os.PathLike)):
        return Path(first).name
    return str(first)


def install(kill_at: int, log: Path | None = None) -> Callable[[], int]:
    """Count (and log) every operation; SIGKILL before number ``kill_at``. Returns the counter."""
    count = 0
    out = open(log, "a", buffering=1, encoding="utf-8") if log else None  # noqa: SIM115

    def wrap(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            nonlocal count
            count += 1
            if out is not None:
                out.write(f"{count} {name} {_describe(args)}\n")
            if count == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)

        return counted

    for name in OPERATIONS:
        setattr(os, name, wrap(name, getattr(os, name)))
    return lambda: count


def read_log(log: Path) -> list[tuple[int, str, str]]:
    """The operations a run logged: ``(number, operation, name)``."""
    rows = []
    for line in log.read_text(encoding="utf-8").splitlines():
        number, name, what = [*line.split(" ", 2), ""][:3]
        rows.append((int(number), name, what))
    return rows


# --------------------------------------------------------------------------- one change set, many kills


def tree(root: Path) -> tuple[dict[str, bytes], frozenset[str]]:
    """Files (path -> bytes) and directories under ``root``, ``.git`` left out."""
    files, dirs = {}, set()
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        if path.is_dir():
            dirs.add(rel)
        else:
            files[rel] = path.read_bytes()
    return files, frozenset(dirs)


def temporaries(root: Path) -> list[str]:
    """Temporary files of the change-set writer left under ``root``."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob(".tortoise-bot-*.tmp")
        if ".git" not in p.relative_to(root).parts
    )


def _reset(root: Path, before: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(before, root, symlinks=True)


def _changes(before: Path, after: Path) -> list[Any]:
    """The change set that turns the tree ``before`` into the tree ``after``."""
    from bot.model import FileChange

    old_files, _ = tree(before)
    new_files, _ = tree(after)
    return [
        FileChange(path, old_files.get(path, b""), data)
        for path, data in sorted(new_files.items())
        if old_files.get(path) != data
    ]


def _killed_write(
    root: Path, changes: list[Any], kill_at: int, log: Path | None, after_s: float | None = None
) -> int:
    """Fork; the child writes ``changes`` with the hook (SIGKILL before operation ``kill_at``),
    or the parent sends SIGKILL ``after_s`` seconds after the fork; the child's wait status."""
    from bot.manifests.journal import write_change_set

    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            install(kill_at, log)
            write_change_set(root, changes)
            os._exit(0)
        except BaseException:
            os._exit(70)
    if after_s is not None:
        time.sleep(after_s)
        os.kill(pid, signal.SIGKILL)  # a zombie until waited for, so the pid is still ours
    return os.waitpid(pid, 0)[1]


def count_operations(before: Path, after: Path, root: Path, log: Path) -> float:
    """Write the change set ``before`` -> ``after`` into ``root`` once, logging each operation;
    the seconds it took."""
    _reset(root, before)
    began = time.monotonic()
    status = _killed_write(root, _changes(before, after), 0, log)
    seconds = time.monotonic() - began
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert tree(root) == tree(after), "the uninterrupted write did not give the expected tree"
    return seconds


def kill_points(
    before: Path, after: Path, root: Path, points: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Write the change set ``before`` -> ``after`` into ``root``, killed at each point: before
    operation ``{"at": n}``, or ``{"after_s": s}`` seconds after the writer started.

    Per point: whether SIGKILL ended the writer, the state ``recover`` leaves (``before``,
    ``after`` or ``mixed``), the temporaries left before and after recovery, whether a
    journal record survived recovery, and the state after the rerun (writing the same set
    again when recovery went back to ``before``).
    """
    from bot.manifests.journal import SET_FILE, journal_dir, recover, write_change_set

    changes = _changes(before, after)
    known = {"before": tree(before), "after": tree(after)}

    def state() -> str:
        now = tree(root)
        return next((name for name, t in known.items() if t == now), "mixed")

    results = []
    for point in points:
        _reset(root, before)
        status = _killed_write(root, changes, point.get("at", 0), None, point.get("after_s"))
        left = temporaries(root)
        recovery = recover(root)
        state_now = state()
        rerun = None
        if state_now == "before":
            write_change_set(root, changes)
            rerun = state()
        results.append(
            {
                **point,
                "killed": os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL,
                "temporaries_at_kill": len(left),
                "restored": len(recovery.restored) if recovery else 0,
                "after_recovery": state_now,
                "temporaries_after_recovery": len(temporaries(root)),
                "journal_after_recovery": (journal_dir(root) / SET_FILE).exists(),
                "after_rerun": rerun,
            }
        )
    return results


def main(argv: list[str]) -> int:
    """``count BEFORE AFTER ROOT LOG``, ``kill BEFORE AFTER ROOT POINTS OUT`` or
    ``cli KILL_AT LOG -- tortoise-bot arguments...``."""
    mode, *rest = argv
    if mode == "count":
        print(count_operations(*(Path(a) for a in rest)))
        return 0
    if mode == "kill":
        before, after, root, points, out = rest
        results = kill_points(Path(before), Path(after), Path(root), json.loads(points))
        Path(out).write_text(json.dumps(results), encoding="utf-8")
        return 0
    kill_at, log_name, sep, *args = rest
    assert mode == "cli" and sep == "--", main.__doc__
    install(int(kill_at), Path(log_name) if log_name != "-" else None)
    from bot.cli import main as cli

    return cli(args)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
