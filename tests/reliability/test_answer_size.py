"""Every answer is bounded: Prometheus' by ``prometheus.max_response_bytes``, GitHub's by
``github.max_response_bytes``; past the bound the answer is refused with an error naming the
query, and the process's memory stays bounded whatever the server sends.

A 400 MB answer per query took ``plan`` to 4.86 GB of peak memory and ran the 120 s fetch
limit to 135 s when answers were read whole.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest

from bot.model import MIB
from tests.reliability.hostile import Endless

MEASURE = textwrap.dedent(
    """
    import json, resource, sys, time
    from bot.config.metrics import PrometheusConfig
    from bot.metrics.client import PrometheusClient
    from bot.metrics.errors import MetricsError

    url, bound = sys.argv[1], int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a leak fails, not swaps
    client = PrometheusClient(
        PrometheusConfig(url=url, max_response_bytes=bound, timeout_s=20, retries=0), env={}
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    began = time.monotonic()
    try:
        client.query('up{job="endless"}', time_s=0)
        error = None
    except (MetricsError, MemoryError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"error": error, "before_kib": before, "peak_kib": peak,
                      "took_s": time.monotonic() - began}))
    """
)


def _measure(url: str, bound: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, url, str(bound)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize("announced", [False, True], ids=["endless", "content-length"])
def test_an_endless_answer_stops_at_the_bound_with_bounded_memory(announced):
    bound = 32 * MIB
    with Endless(length=10**12 if announced else None) as server:
        result = _measure(server.url, bound)
        sent = server.sent
    error = str(result["error"])
    assert error.startswith("QueryError: answer too large"), error
    assert 'query=up{job="endless"}' in error and "max_response_bytes is 33,554,432" in error
    grown_mib = (int(result["peak_kib"]) - int(result["before_kib"])) / 1024
    assert grown_mib < 4 * bound / MIB  # the chunks read, once joined: not what was sent
    assert float(result["took_s"]) < 10
    if announced:  # refused on the header, before reading the body
        assert "announces 1,000,000,000,000 bytes" in error
    print(
        f"\nsize: {'announced' if announced else 'endless'} answer, bound 32 MiB: "
        f"peak grew {grown_mib:.0f} MiB, server sent {sent / MIB:.0f} MiB, "
        f"{float(result['took_s']):.2f} s"
    )


def test_an_answer_within_the_bound_is_read_whole():
    from bot.metrics.exchange import READ_CHUNK

    began = time.monotonic()
    with Endless(length=3 * READ_CHUNK) as server:
        result = _measure(server.url, 4 * READ_CHUNK)
    assert "answer too large" not in str(result["error"])  # read to its end: not JSON
    assert "not a JSON answer" in str(result["error"])
    assert time.monotonic() - began < 30
