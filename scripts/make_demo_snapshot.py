"""Record ``bot/demo/snapshot.zip``: the demo cluster simulated, backfilled into a real
Prometheus, and fetched back through ``tortoise-bot snapshot`` against the demo repository.

Usage: ``.venv/bin/python scripts/make_demo_snapshot.py`` (needs prometheus and promtool).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from bot.demo.spec import DEMO_DAYS, DEMO_LABELS, demo_spec  # noqa: E402
from bot.sim.cluster import simulate  # noqa: E402
from tests.support.prometheus import prometheus_from_cluster  # noqa: E402


def main() -> int:
    spec = demo_spec()
    cluster = simulate(spec)
    out = PROJECT / "bot" / "demo" / "snapshot.zip"
    bot_config = PROJECT / "bot" / "demo" / "bot.yaml"
    now = datetime.fromtimestamp(spec.end_s, UTC).isoformat()
    with (
        tempfile.TemporaryDirectory() as tmp,
        prometheus_from_cluster(cluster, Path(tmp), labels=DEMO_LABELS) as prom,
    ):
        cmd = [
            sys.executable,
            "-m",
            "bot",
            "snapshot",
            "--repo",
            str(PROJECT / "bot" / "demo" / "repo"),
            "--prometheus",
            prom.url,
            "--out",
            str(out),
            "--now",
            now,
            "--config",
            str(bot_config),
        ]
        done = subprocess.run(cmd, check=False)
    print(f"{out}: {out.stat().st_size / 1024:.0f} KiB, window {DEMO_DAYS} days ending {now}")
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
