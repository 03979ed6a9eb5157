"""The CLI with its peak memory reported: ``python -m tests.forge.peak_rss ARGS...`` runs
``tortoise-bot ARGS...`` in this process and writes ``peak_rss_kib=N`` as the last line of
stderr: the high-water mark of this process's resident memory (``VmHWM`` of
``/proc/self/status``; children such as git not counted).

Not ``getrusage``'s ``ru_maxrss``: Linux carries it across ``exec`` from the process that
spawned this one (``subprocess`` uses ``vfork``), so a test process that holds 160 MiB makes
every process it starts report at least that."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bot.cli import main


def peak_rss_kib() -> int:
    """``VmHWM`` of this process, KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


if __name__ == "__main__":
    try:
        code = main(sys.argv[1:])
    finally:
        sys.stderr.flush()
        os.write(2, f"\npeak_rss_kib={peak_rss_kib()}\n".encode())
    sys.exit(code)
