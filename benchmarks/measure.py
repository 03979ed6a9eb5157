"""Measuring helpers shared by the benchmarks: wall time and peak resident memory."""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class Timer:
    """Wall-clock seconds of a ``with`` block."""

    seconds: float = 0.0
    _start: float = field(default=0.0, repr=False)


@contextmanager
def timed() -> Iterator[Timer]:
    """``with timed() as t: ...`` then ``t.seconds``."""
    timer = Timer(_start=time.perf_counter())
    try:
        yield timer
    finally:
        timer.seconds = time.perf_counter() - timer._start


def best_of(n: int, fn: Callable[[], object]) -> float:
    """Best wall time in seconds of ``n`` calls of ``fn``."""
    best = float("inf")
    for _ in range(n):
        with timed() as t:
            fn()
        best = min(best, t.seconds)
    return best


def report(title: str, rows: list[tuple[str, str]]) -> None:
    """Print a figure table: one ``name: value`` line each, under a title."""
    print(f"== {title}")
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name.ljust(width)}  {value}")
