"""`tortoise-bot validate --repo PATH` (or ``validate PATH``): check a repository's opt-in file and manifests, print the inventory.

``validate --demo`` checks the embedded demo shop.

``--format json`` prints the inventory documented by ``docs/schemas/inventory.schema.json``;
``--format table`` (default) one line per workload and every error with file and line.
Exit codes: 0 when it read the repository (its findings, every problem with file and line, are
warnings), 1 with ``--strict`` when there is a finding (linting in CI), 2 an invalid opt-in file
(reported, then the manifests are read with the default settings).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from bot.commands.common import DEMO_DIR, print_json
from bot.config.bot import BotSettings
from bot.config.errors import ConfigError, ConfigProblem
from bot.config.repo import RepoConfig, find_repo_config, load_repo_config
from bot.console import LIST, WORDS, make_console, wrap_cell
from bot.errors import EXIT_USAGE, UsageError, exit_code
from bot.manifests import discover
from bot.manifests.inventory_json import inventory_json
from bot.manifests.quantities import describe_cpu, describe_memory
from bot.model import Inventory, SourceError
from bot.outcome_view import error_lines
from bot.redaction import visible
from bot.settings import RepositorySettings


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repo", type=Path, metavar="PATH", help="Repository checkout to read (as every command)."
    )
    parser.add_argument(
        "path", type=Path, nargs="?", metavar="PATH", help="The same as --repo PATH."
    )
    parser.add_argument(
        "--demo", action="store_true", help="Check the embedded demo shop instead of --repo."
    )
    parser.add_argument(
        "--format", choices=("table", "json"), default="table", help="Output format on stdout."
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="Exit 1 when the repository has any finding (for linting in CI).",
    )


def deployment_lines(inventory: Inventory) -> list[str]:
    """Per environment with workloads: where it is deployed (GitOps), what was merged into it,
    or why it is not proposed for; nothing for an environment without any of these."""
    lines = []
    holding = {w.ref.environment for w in inventory.workloads}
    for d in inventory.deployments:
        if d.environment not in holding:
            continue  # nothing to propose for either way
        parts = []
        if d.deployed_by:
            clusters = ", ".join(c or "in-cluster" for c in d.clusters)
            where = f"cluster {clusters}" + (f", namespace {d.namespace}" if d.namespace else "")
            parts.append(f"deployed to {where} by {'; '.join(d.deployed_by)}")
        if d.merged:
            parts.append(f"also proposes for {', '.join(d.merged)} (same pods)")
        if not d.proposed or d.reason:
            parts.append(f"not proposed for: {d.reason}")
        if parts:
            lines.append(f"  {d.environment}: {'; '.join(parts)}")
    return lines


def _table(
    inventory: Inventory, config_errors: list[SourceError], settings: RepositorySettings, width: int
) -> str:
    """The environments (wrapped between names), one line per workload and container, and
    each problem once: the opt-in file's as errors, the manifests' findings as warnings
    (each distinct one once, ``bot.outcome_view.error_lines``), at ``width``."""
    envs = []
    for name in inventory.environments:
        deployment = inventory.deployment(name)
        namespace = settings.environment(name).namespace.value or (
            deployment.namespace if deployment is not None else None
        )
        envs.append(f"{name} (namespace {namespace})" if namespace else name)
    lines = wrap_cell(f"environments: {', '.join(envs) or '(none)'}", LIST, width)
    if len(lines) > 1:
        lines[1:] = [f"  {line}" for line in wrap_cell(" ".join(lines[1:]), LIST, width - 2)]
    for line in deployment_lines(inventory):  # "  ENV: …", continued four columns in
        first, *rest = wrap_cell(line.strip(), WORDS, width - 2)
        more = wrap_cell(" ".join(rest), WORDS, width - 4) if rest else []
        lines += [f"  {first}", *(f"    {part}" for part in more)]
    for w in inventory.workloads:
        replicas = f"replicas={w.replicas}" if w.replicas is not None else "replicas=-"
        hpa = ""
        if w.hpa:
            low = w.hpa.min_replicas if w.hpa.min_replicas is not None else "-"
            hpa = f" hpa min={low} max={w.hpa.max_replicas}"
            if w.hpa.keda is not None:  # the ScaledObject's own counts, its other triggers
                keda = w.hpa.keda
                also = f" (also scaled by: {', '.join(keda.external)})" if keda.external else ""
                hpa = (
                    f" keda {keda.name} min={keda.min_replica_count} max={w.hpa.max_replicas}{also}"
                )
        lines.append(f"{w.ref}  {replicas}{hpa}")
        for c in w.containers:
            lines.append(
                f"  {c.name}: requests cpu={describe_cpu(c.requests.cpu_cores)}"
                f" memory={describe_memory(c.requests.memory_bytes)}"
                f"  limits cpu={describe_cpu(c.limits.cpu_cores)}"
                f" memory={describe_memory(c.limits.memory_bytes)}"
            )
    for skipped in inventory.skipped:
        where = skipped.location
        line = f"{skipped.ref}  skipped: {skipped.reason} ({where.file}:{where.line})"
        first, *rest = wrap_cell(line, WORDS, width)
        more = wrap_cell(" ".join(rest), WORDS, width - 2) if rest else []
        lines += [first, *(f"  {part}" for part in more)]
    problems = [f"error: {e.file}:{e.line}: {e.message}" for e in config_errors]  # usage
    problems += [f"warning: {finding}" for finding in error_lines(inventory.errors)]
    problems += [f"warning: {w.file}:{w.line}: {w.message}" for w in inventory.warnings]
    problems += [f"note: {n.file}:{n.line}: {n.message}" for n in inventory.notes]
    for problem in problems:
        first, *rest = wrap_cell(problem, WORDS, width)
        more = wrap_cell(" ".join(rest), WORDS, width - 2) if rest else []
        lines += [first, *(f"  {line}" for line in more)]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.repo is not None and args.path is not None:
        raise UsageError("give the repository once: --repo PATH (or PATH alone)")
    args.path = args.repo or args.path
    if args.demo == (args.path is not None):
        raise UsageError("give --repo PATH or --demo (one of them)")
    root: Path = DEMO_DIR / "repo" if args.demo else args.path
    if not root.is_dir():
        raise UsageError(f"{root}: not a directory")
    config = RepoConfig()
    problems: Sequence[ConfigProblem] = ()
    if find_repo_config(root) is not None:
        try:
            config = load_repo_config(root)
        except ConfigError as exc:
            problems = exc.problems
        else:  # the settings' values, whichever workloads they meet
            problems = RepositorySettings.of_checkout(root, config, BotSettings()).problems()
    config_errors = [
        SourceError(p.file, p.line, f"{p.key or '<root>'}: {p.message}") for p in problems
    ]
    inventory = discover(root, config).inventory
    if args.format == "json":
        print_json(inventory_json(inventory, config_errors))
    else:
        print(
            visible(
                _table(
                    inventory,
                    config_errors,
                    RepositorySettings.of_checkout(root, config, BotSettings()),
                    make_console(color=args.color).width,
                )
            )
        )
    if config_errors:
        return EXIT_USAGE
    return exit_code(failures=0, findings=len(inventory.errors), strict=args.strict)
