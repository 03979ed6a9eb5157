"""Where a run stopped, kept for the next run (``run.state_dir``).

A run that stops before serving every repository (GitHub's API budget is gone) writes the
repositories it did not finish to ``<state_dir>/<shard>.json``: the one where it stopped, then
those it never began. The next run of the same shard serves them first, then the others in
their usual order, so a fleet larger than one run's budget is served in turn, never only its
first part. A run that finishes writes an empty list.

The file is written atomically (a temporary file, fsync, rename): a run killed meanwhile
leaves the previous state whole. A state file that cannot be read is named in the log and
the run serves the repositories in their usual order: nothing is lost but the rotation.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bot.nesting import check_json
from bot.sharding import Shard

log = logging.getLogger("bot.resume")

VERSION = 1
"""Format of the state file: ``{"version": 1, "not_reached": [...], "stopped": "..."}``."""


def state_path(state_dir: Path, shard: Shard | None) -> Path:
    """The state file of ``shard`` (one per shard: shards run at once and never share one)."""
    name = f"run-shard-{shard.index}-of-{shard.count}.json" if shard else "run.json"
    return state_dir / name


def load_not_reached(path: Path) -> tuple[str, ...]:
    """The repositories the last run did not finish; () when it finished or never ran."""
    try:
        text = path.read_text(encoding="utf-8")
        check_json(text)
        data = json.loads(text)
    except FileNotFoundError:
        return ()
    except (OSError, ValueError) as exc:
        log.warning(
            "%s: cannot read the last run's state (%s); serving in the usual order", path, exc
        )
        return ()
    valid = isinstance(data, dict) and data.get("version") == VERSION
    names = data.get("not_reached") if valid else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        log.warning("%s: not a state file of this version; serving in the usual order", path)
        return ()
    return tuple(names)


def resume_order(repositories: Sequence[str], not_reached: Sequence[str]) -> list[str]:
    """``repositories`` with those of ``not_reached`` first (in that order), then the rest in
    their order. Names no longer served are dropped; new ones come with the rest."""
    served = set(repositories)
    first = list(dict.fromkeys(n for n in not_reached if n in served))
    taken = set(first)
    return first + [r for r in repositories if r not in taken]


def save(path: Path, not_reached: Sequence[str], *, stopped: str | None) -> None:
    """Write the state atomically (``not_reached`` empty: the run finished)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(
        {"version": VERSION, "not_reached": list(not_reached), "stopped": stopped}, indent=1
    )
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
