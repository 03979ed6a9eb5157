"""Record ``bot/demo/snapshot.zip``: the demo cluster simulated (``demo_cluster``: the demo
services and ``reviews``, whose merged pull request ``plan --demo`` verifies), backfilled into a
real Prometheus, and fetched back through ``tortoise-bot snapshot`` against the demo repository
(with what ran in the cluster, for that verification).

Usage: ``.venv/bin/python scripts/make_demo_snapshot.py`` (needs prometheus and promtool).

The recorded file is then packed again with deflate instead of LZMA (the same members, bytes
and order): ``plan --demo`` reads every member on each run, and deflate decodes its 3.6 MB in
about 8 ms of CPU against about 57 ms for LZMA, for 1.05 MB on disk instead of 0.84 MB. Its
``meta.json`` loses the repository the snapshot command recorded (``origin``): the demo's
history replays for a copy of the demo repository under any name, as an older snapshot does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import zipfile
from datetime import UTC, datetime
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from bot.demo.spec import DEMO_DAYS, DEMO_LABELS, demo_cluster, demo_spec  # noqa: E402
from tests.support.prometheus import prometheus_from_cluster  # noqa: E402


def main() -> int:
    spec = demo_spec()
    cluster = demo_cluster(spec)
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
    if done.returncode == 0:
        repack(out, zipfile.ZIP_DEFLATED)
    print(f"{out}: {out.stat().st_size / 1024:.0f} KiB, window {DEMO_DAYS} days ending {now}")
    return done.returncode


def repack(path: Path, compression: int) -> None:
    """Pack the zip file at ``path`` again with ``compression``: same members, bytes, times and
    order, but ``meta.json`` without ``origin``."""
    tmp = path.with_name(f".{path.name}.repack")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w", compression=compression) as dst:
        for info in src.infolist():
            member = zipfile.ZipInfo(info.filename, info.date_time)
            member.compress_type = compression
            data = src.read(info)
            if info.filename == "meta.json":
                meta = json.loads(data)
                meta.pop("origin", None)
                data = json.dumps(meta, ensure_ascii=False).encode()
            dst.writestr(member, data)
    tmp.replace(path)


if __name__ == "__main__":
    raise SystemExit(main())
