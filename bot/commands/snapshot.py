"""``tortoise-bot snapshot``: record the history a repository needs into one compressed file.

``plan --snapshot FILE`` later replays it instead of Prometheus, with identical results. The
file records the repository (directory name, git remote) and the selection it was taken for
(``bot.commands.origin``), and what ran in the cluster over the window (requests, limits, HPA
specs, CFS periods: what the verification of merged pull requests reads).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.commands.common import (
    add_selector_options,
    add_settings_option,
    add_source_options,
    choose_source,
    load_settings,
    selector_of,
)
from bot.commands.origin import checkout_origin
from bot.commands.tracking import NAMESPACES, WORKLOADS, TrackedSource
from bot.config.repo import load_repo_config
from bot.console import make_console, progress
from bot.errors import EXIT_FAILED, EXIT_OK, UsageError
from bot.manifests import discover
from bot.metrics.cluster_state import ClusterTablesSource
from bot.metrics.errors import MetricsError
from bot.metrics.snapshot import record_snapshot
from bot.model import SECONDS_PER_DAY
from bot.pipeline.plan import history_requests, selected_inventory
from bot.settings import RepositorySettings


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, required=True, metavar="PATH", help="Checkout.")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE", help="Snapshot file.")
    add_source_options(parser, snapshot=False)
    add_settings_option(parser)
    add_selector_options(parser)


def run(args: argparse.Namespace) -> int:
    if not args.repo.is_dir():
        raise UsageError(f"--repo {args.repo}: not a directory")
    settings = load_settings(args)
    choice = choose_source(args, settings)
    config = load_repo_config(args.repo)
    inventory = discover(args.repo, config).inventory
    selected = selector_of(args)
    if selected is not None:
        inventory = selected_inventory(inventory, selected)
    requests = history_requests(
        inventory, RepositorySettings.of_checkout(args.repo, config, settings)
    )
    end_s = choice.now_s
    start_s = end_s - settings.prometheus.window_days * SECONDS_PER_DAY
    console = make_console(sys.stderr, args.color)
    try:
        with progress(console, {NAMESPACES: None, WORKLOADS: None}) as advance:
            source = TrackedSource(choice.source, advance, count_workloads=True)
            result = record_snapshot(
                source,
                requests,
                start_s=start_s,
                end_s=end_s,
                path=args.out,
                origin=checkout_origin(args.repo, selected),
                cluster=choice.source if isinstance(choice.source, ClusterTablesSource) else None,
            )
    except MetricsError as exc:
        print(f"tortoise-bot: nothing recorded: {exc}", file=sys.stderr)
        return EXIT_FAILED
    size = args.out.stat().st_size
    print(
        f"recorded {len(result.histories)} workloads ({len(result.errors)} errors) "
        f"with {result.stats.queries} queries into {args.out} ({size / 1024:.0f} KiB)"
    )
    for ref, error in sorted(result.errors.items()):
        print(f"  error: {ref}: {error}", file=sys.stderr)
    return EXIT_OK
