"""``tortoise-bot simulate``: a simulated history for the workloads a repository declares.

Writes a snapshot file (the format of ``tortoise-bot snapshot``) that ``plan --snapshot``,
``explain --snapshot`` and ``run --snapshot`` read: try the bot on a repository without a
cluster or Prometheus. How the history is drawn: ``bot/sim/declared.py``.
"""

from __future__ import annotations

import argparse
import time
import zipfile
from pathlib import Path
from typing import get_args

from bot.commands.common import parse_now
from bot.commands.origin import checkout_origin
from bot.config.repo import load_repo_config
from bot.errors import EXIT_OK, UsageError
from bot.manifests import discover
from bot.metrics.snapshot import write_snapshot
from bot.metrics.source import FetchResult
from bot.model import SECONDS_PER_DAY
from bot.sim.declared import simulate_workloads
from bot.sim.profiles import Profile

STEP_S = 60
"""Sample spacing of the simulated history, seconds (Prometheus' default step here)."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, required=True, metavar="PATH", help="Checkout.")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE", help="Snapshot file.")
    parser.add_argument(
        "--days", type=float, default=14.0, help="Length of the history (default 14)."
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="Seed: the same seed, the same history."
    )
    parser.add_argument(
        "--profile",
        choices=get_args(Profile),
        default="weekly",
        help="Load shape over time (default weekly).",
    )
    parser.add_argument("--now", metavar="ISO8601", help="End of the history (default: now).")


def run(args: argparse.Namespace) -> int:
    if not args.repo.is_dir():
        raise UsageError(f"--repo {args.repo}: not a directory")
    if not 1 <= args.days <= 90:
        raise UsageError(f"--days {args.days:g}: expected 1 to 90 days")
    now_s = parse_now(args.now)
    end_s = now_s if now_s is not None else time.time()
    config = load_repo_config(args.repo)
    inventory = discover(args.repo, config).inventory
    histories = simulate_workloads(
        inventory.workloads,
        profile=args.profile,
        seed=args.seed,
        days=args.days,
        step_s=STEP_S,
        end_s=end_s,
    )
    last = max((h.end_s for h in histories.values()), default=end_s)
    write_snapshot(
        args.out,
        FetchResult(histories=histories),
        start_s=last - args.days * SECONDS_PER_DAY,
        end_s=last,
        compression=zipfile.ZIP_DEFLATED,  # a simulated history is cheap to draw again
        origin=checkout_origin(args.repo),
    )
    size = args.out.stat().st_size
    print(
        f"simulated {len(histories)} workloads over {args.days:g} days ({args.profile}, "
        f"seed {args.seed}) into {args.out} ({size / 1024:.0f} KiB)"
    )
    for error in inventory.errors:
        print(f"  skipped: {error.file}:{error.line}: {error.message}")
    return EXIT_OK
