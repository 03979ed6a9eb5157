"""Snapshots as an older ``tortoise-bot snapshot`` wrote them, for the tests that read one."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path


def without_cluster_state(source: Path, target: Path) -> Path:
    """``source`` copied to ``target`` as a snapshot recorded before it kept what ran in the
    cluster: no ``cluster`` entry in ``meta.json`` and no member of those series (``k…``)."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        for info in src.infolist():
            if info.filename == "meta.json":
                meta = json.loads(src.read(info))
                del meta["cluster"]
                dst.writestr(info, json.dumps(meta))
            elif not info.filename.startswith("k"):
                dst.writestr(info, src.read(info))
    return target
