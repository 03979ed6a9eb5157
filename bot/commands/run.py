"""``tortoise-bot run``: serve every configured repository once.

For each repository: checkout, plan, edit, branch, pull request, dashboard. One failing
repository never stops the others, but GitHub's API budget running out stops the run (a line
says where; with ``run.state_dir`` the next run starts with the repositories not finished,
``bot.resume``). The exit code is 0 when all succeeded, 1 when any failed or the run stopped,
2 for a bad bot configuration or missing credentials. A summary table is printed and, in
GitHub Actions, appended to ``$GITHUB_STEP_SUMMARY``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bot.commands.common import (
    DEMO_DIR,
    DEMO_NAME,
    PROMETHEUS_URL_ENV,
    WorkloadSelector,
    add_selector_options,
    open_snapshot,
    parse_now,
    register_secrets,
    selector_of,
    snapshot_now,
)
from bot.commands.origin import Repository, check_snapshot
from bot.config.bot import BotSettings, load_bot_settings
from bot.console import make_console, progress
from bot.errors import EXIT_FAILED, EXIT_OK, UsageError
from bot.forge.errors import AuthError, ForgeError
from bot.forge.github import GitHubForge
from bot.forge.github.auth import credentials_from_env
from bot.forge.messages import public
from bot.forge.preview import PreviewForge
from bot.metrics.prometheus import PrometheusSource
from bot.metrics.snapshot import SnapshotSource
from bot.metrics.source import HistorySource
from bot.pipeline.serve import RepositoryReport, RunSummary, run_repositories, serve_repository
from bot.report.markdown import escape
from bot.report.replay import CostTotals
from bot.resume import load_not_reached, resume_order, save, state_path
from bot.sharding import Shard

REPOSITORIES = "repositories"
"""Progress task: repositories served."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="Bot settings file (YAML).")
    parser.add_argument(
        "--dry-run", action="store_true", help="Plan every repository; write nothing to GitHub."
    )
    parser.add_argument("--shard", metavar="I/N", help="Serve only shard I of N (0-based).")
    parser.add_argument("--now", metavar="ISO8601", help="End of the history window.")
    parser.add_argument(
        "--snapshot",
        type=Path,
        metavar="FILE",
        help="Read the history from a snapshot (tortoise-bot snapshot or simulate), not Prometheus.",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="With --dry-run: write every pull request and dashboard the run would publish as "
        "files under DIR (index.md lists them); no forge, no token.",
    )
    parser.add_argument(
        "--repo",
        type=Path,
        action="append",
        metavar="PATH",
        help="With --out: preview this local checkout (repeatable) instead of the configured "
        "repositories.",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="With --out: preview the embedded demo shop (its settings and recorded history).",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="Replay a --snapshot recorded for another repository.",
    )
    add_selector_options(parser)


def summary_markdown(summary: RunSummary) -> str:
    """The run summary as a markdown table (for ``$GITHUB_STEP_SUMMARY``).

    ``requested with replicas`` and ``monthly cost`` sum the replays of each repository's
    workloads with changes (``bot.report.replay.cost_totals``): current → proposed."""
    lines = [
        "## tortoise-bot run",
        "",
        "| repository | result | opened | updated | closed | workloads | requested with replicas "
        "(means, replayed) | monthly cost (replayed) | message |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in summary.reports:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(r.counts.items()))
        requests, cost = _cost_cells(r.cost)
        lines.append(
            f"| {escape(r.repository)} | {'ok' if r.ok else 'failed'} | {_opened_cell(r)} | "
            f"{len(r.updated)} | {len(r.closed)} | {escape(counts)} | {escape(requests)} | "
            f"{escape(cost)} | {escape(r.message)} |"
        )
    stop_line = summary.stop_line()
    if stop_line is not None:
        lines += ["", f"**{escape(stop_line)}**"]
    verified = [(r.repository, line) for r in summary.reports for line in r.verification]
    if verified:
        lines += ["", "### Verification of merged pull requests", ""]
        lines += [f"- {escape(repo)}: {line}" for repo, line in verified]
    return "\n".join(lines) + "\n"


def lacks_all_data(summary: RunSummary) -> bool:
    """Every workload of every repository is gathering data: the Prometheus set-up is the
    likely cause (the doctor's summary is printed)."""
    counts = [(s, n) for r in summary.reports for s, n in r.counts.items() if n]
    return bool(counts) and all(s == "gathering-data" for s, _ in counts)


def _opened_cell(report: RepositoryReport) -> str:
    """Pull requests this run opened, and those another run opened at the same time."""
    opened = str(len(report.opened))
    return f"{opened} (+{len(report.adopted)} already open)" if report.adopted else opened


def _cost_cells(cost: CostTotals | None) -> tuple[str, str]:
    """(requests, cost) cells of one repository: ``—`` with no change, no prices or no replay;
    the workloads with changes but no replay are named."""
    if cost is None:
        return "—", "—"
    requests = cost.requests_text() or "—"
    money = cost.cost_text() or ("not priced" if cost.replayed else "—")
    if cost.unreplayed:
        money += f"; no replay for {', '.join(cost.unreplayed)}"
    return requests, money


def execute(
    settings: BotSettings,
    *,
    dry_run: bool = False,
    shard: Shard | None = None,
    now_s: float | None = None,
    env: Mapping[str, str] | None = None,
    snapshot: Path | None = None,
    preview: Preview | None = None,
    selected: WorkloadSelector | None = None,
    force: bool = False,
) -> int:
    """One run over every repository; the exit code of ``tortoise-bot run``.

    ``snapshot`` replaces Prometheus: every repository's history comes from that file, and the
    window ends where the snapshot ends unless ``now_s`` is given. ``preview`` replaces the
    forge: its local checkouts are served and what would be published is written as files
    (``bot.forge.preview``), with no credentials. ``selected``: only these workloads of each
    repository, and only the pull requests holding nothing else
    (``bot.pipeline.serve.serve_repository``). A snapshot recorded for another repository
    than those served is refused (``bot.commands.origin``) unless ``force``.
    """
    env = os.environ if env is None else env
    if env.get(PROMETHEUS_URL_ENV):
        settings = settings.model_copy(
            update={
                "prometheus": settings.prometheus.model_copy(
                    update={"url": env[PROMETHEUS_URL_ENV]}
                )
            }
        )
    if not settings.prometheus.url and snapshot is None:
        raise UsageError(
            f"prometheus.url is not set (bot settings or {PROMETHEUS_URL_ENV}; "
            "or read a recorded history with --snapshot FILE)"
        )
    credentials = None
    if preview is None:
        try:
            credentials = credentials_from_env(settings.github, env)
        except AuthError as exc:
            raise UsageError(f"GitHub credentials: {exc}") from exc
    register_secrets(settings, env)
    source: HistorySource
    if snapshot is not None:
        recorded = open_snapshot(snapshot)
        source, now = recorded, snapshot_now(recorded, now_s, snapshot)
    else:
        source = PrometheusSource(settings.prometheus, env=env)
        now = now_s if now_s is not None else time.time()
    console = make_console(sys.stdout)
    with tempfile.TemporaryDirectory(prefix="tortoise-bot-") as workdir:
        forge: GitHubForge | PreviewForge
        if preview is not None:
            forge = PreviewForge(preview.out, preview.checkouts, workdir=Path(workdir))
        else:
            assert credentials is not None
            forge = GitHubForge(settings.github, credentials, workdir=Path(workdir))
        publish = dry_run is False or preview is not None
        try:
            configured = list(settings.repositories) if preview is None else []
            repositories = configured or forge.repositories()
        except ForgeError as exc:
            print(f"tortoise-bot: cannot list the repositories to serve: {exc}", file=sys.stderr)
            return EXIT_FAILED
        if shard is not None:
            repositories = shard.select(repositories)
        if isinstance(source, SnapshotSource):
            check_snapshot(
                source,
                [
                    Repository.of_checkout(preview.checkouts[n]) if preview else Repository(n)
                    for n in repositories
                ],
                force=force,
                selected=selected,
            )
        state = state_path(settings.run.state_dir, shard) if settings.run.state_dir else None
        if state is not None:
            repositories = resume_order(repositories, load_not_reached(state))
        with progress(console, {REPOSITORIES: len(repositories)}) as advance:

            def serve_one(name: str) -> RepositoryReport:
                try:
                    return serve_repository(
                        name,
                        forge,
                        source,
                        settings,
                        now_s=now,
                        dry_run=not publish,
                        selected=selected,
                    )
                finally:
                    advance(REPOSITORIES, label=name)

            summary = run_repositories(repositories, serve_one)
        if state is not None and not dry_run:
            save(state, summary.not_reached, stopped=summary.stopped)
        if isinstance(forge, PreviewForge):
            index = forge.write_index({r.repository: r.message for r in summary.reports})
    if isinstance(source, PrometheusSource):
        source.close()  # a long-running serve keeps no connection between runs
        if lacks_all_data(summary):
            from bot.commands.doctor import print_summary  # noqa: PLC0415 (this case only)

            print_summary(settings, None, at_s=now, out=sys.stderr)
    for report in summary.reports:
        status = "ok" if report.ok else "FAILED"
        console.print(
            f"{status:>6}  {report.repository}  opened {len(report.opened)}, "
            + (f"already open {len(report.adopted)}, " if report.adopted else "")
            + f"updated {len(report.updated)}, closed {len(report.closed)}"
            + (f"  {report.message}" if report.message else ""),
            markup=False,
        )
    stop_line = summary.stop_line()
    if stop_line is not None:
        console.print(public(stop_line), markup=False, soft_wrap=True)
    if preview is not None:
        console.print(f"preview written: {index}", markup=False, soft_wrap=True)
    step_summary = env.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as out:
            out.write(public(summary_markdown(summary)))
    return EXIT_OK if summary.ok else EXIT_FAILED


@dataclass(frozen=True, slots=True)
class Preview:
    """Where ``run --dry-run --out`` writes, and the local checkouts it serves (name -> path)."""

    out: Path
    checkouts: Mapping[str, Path]

    @classmethod
    def of_args(cls, args: argparse.Namespace) -> Preview | None:
        """The preview the arguments ask for (None: a run on the forge); ``--demo`` also
        brings the demo's settings and recorded history unless others are given."""
        repos: list[Path] = args.repo or []
        if args.out is None:
            if repos or args.demo:
                raise UsageError("--repo and --demo preview into files: add --dry-run --out DIR")
            return None
        if not args.dry_run:
            raise UsageError("--out writes a preview of the run: add --dry-run")
        if not repos and not args.demo:
            raise UsageError("--out previews local checkouts: pass --repo PATH or --demo")
        checkouts: dict[str, Path] = {}
        if args.demo:
            checkouts[DEMO_NAME] = DEMO_DIR / "repo"
            if args.config is None:
                args.config = DEMO_DIR / "bot.yaml"
            if args.snapshot is None and not os.environ.get(PROMETHEUS_URL_ENV):
                args.snapshot = DEMO_DIR / "snapshot.zip"
        for path in repos:
            if not path.is_dir():
                raise UsageError(f"--repo {path}: not a directory")
            name = path.resolve().name
            if name in checkouts:
                raise UsageError(f"--repo {path}: a second repository named {name}")
            checkouts[name] = path
        if args.out.exists() and not args.out.is_dir():
            raise UsageError(f"--out {args.out}: not a directory")
        return cls(args.out, checkouts)


def run(args: argparse.Namespace) -> int:
    preview = Preview.of_args(args)
    shard = None
    if args.shard:
        try:
            shard = Shard.parse(args.shard)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    return execute(
        load_bot_settings(args.config),
        dry_run=args.dry_run,
        shard=shard,
        now_s=parse_now(args.now),
        snapshot=args.snapshot,
        preview=preview,
        selected=selector_of(args),
        force=args.force,
    )
