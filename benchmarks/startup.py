"""Start-up benchmark: how long a command takes before it does anything, and what it imports.

Run: ``.venv/bin/python -m benchmarks.startup [--runs 5] [-- ARGS...]`` (default: ``--help``
and ``plan --demo``). For each command line, ``--runs`` fresh interpreters each run
``python -X importtime -m bot ARGS`` (the sum of every module's own import time, and how many
modules) and ``python -m bot ARGS`` alone (wall time, and CPU seconds with its children, e.g.
``kubectl``); a bare ``python -c pass`` is the floor. Figures are min / median / max, with
``/proc/loadavg`` before and after: on a shared machine wall times follow the load, CPU seconds
and module counts much less.

Bytecode: an installed package runs from the bytecode ``pip install`` compiled, and a checkout
writes its own on its first run, unless ``PYTHONDONTWRITEBYTECODE`` is set (then every run
compiles the bot's ~100 modules from source again: about 0.15 CPU-s more). By default every
command line here runs once unmeasured with bytecode written to a private
``PYTHONPYCACHEPREFIX`` directory (this also fills the render cache, as any second run finds
it), then is measured with that bytecode; ``--no-bytecode`` measures with
``PYTHONDONTWRITEBYTECODE=1`` and no prefix, i.e. the bot's own modules compiled each run.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping

from benchmarks.measure import report, timed

_SELF_US = re.compile(r"^import time:\s+(\d+)\s+\|", re.MULTILINE)


def _loadavg() -> str:
    with open("/proc/loadavg", encoding="ascii") as f:
        return f.read().strip()


def _spread(values: list[float], unit: str, digits: int = 2) -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{low:.{digits}f} / {mid:.{digits}f} / {high:.{digits}f} {unit}"


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def measure(argv: list[str], runs: int, env: Mapping[str, str]) -> list[tuple[str, str]]:
    """Import totals, wall and CPU of ``python -m bot ARGV`` (``-c pass`` for the floor), after
    one unmeasured run."""
    command = argv if argv[:1] == ["-c"] else ["-m", "bot", *argv]
    subprocess.run([sys.executable, *command], capture_output=True, env=env, check=False)
    totals, modules, walls, cpus = [], [], [], []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", *command],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        found = [int(us) for us in _SELF_US.findall(done.stderr)]
        totals.append(sum(found) / 1000)
        modules.append(len(found))
        before = _children_cpu()
        with timed() as wall:
            subprocess.run(
                [sys.executable, *command],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                check=False,
            )
        walls.append(wall.seconds)
        cpus.append(_children_cpu() - before)
    name = " ".join(command)
    return [
        (f"{name}: -X importtime total (modules)", f"{_spread(totals, 'ms', 0)} ({modules[-1]})"),
        (f"{name}: wall", _spread(walls, "s")),
        (f"{name}: CPU (with children)", _spread(cpus, "s")),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh interpreters per command")
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="PYTHONDONTWRITEBYTECODE=1: the bot's modules compiled from source on every run",
    )
    parser.add_argument("args", nargs="*", help="one command line to measure (after --)")
    args = parser.parse_args()
    lines = [args.args] if args.args else [["--help"], ["plan", "--demo"]]
    env_note = os.environ.get("TORTOISE_BOT_CACHE_DIR", "default")
    with tempfile.TemporaryDirectory(prefix="startup-bytecode-") as prefix:
        env = dict(os.environ)
        if args.no_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            env.pop("PYTHONPYCACHEPREFIX", None)
            bytecode = "none for the bot's modules (PYTHONDONTWRITEBYTECODE=1)"
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = prefix
            bytecode = "compiled by the unmeasured first run (PYTHONPYCACHEPREFIX)"
        rows = [("/proc/loadavg before", _loadavg())]
        for argv in [["-c", "pass"], *lines]:
            rows.extend(measure(argv, args.runs, env))
    rows.append(("/proc/loadavg after", _loadavg()))
    rows.append(("bytecode", bytecode))
    rows.append(("TORTOISE_BOT_CACHE_DIR (plan --demo renders)", env_note))
    report(f"start-up, {args.runs} runs each (min / median / max)", rows)


if __name__ == "__main__":
    main()
