"""`tortoise-bot validate PATH`: check a repository's opt-in file and manifests, print the inventory.

``validate --demo`` checks the embedded demo shop.

``--format json`` prints the inventory documented by ``docs/schemas/inventory.schema.json``;
``--format table`` (default) one line per workload and every error with file and line.
Exit codes: 0 no problem, 1 manifest problems (the rest is still listed), 2 an invalid opt-in
file (reported, then the manifests are read with the default settings).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from bot.commands.common import DEMO_DIR, print_json
from bot.config.bot import BotSettings
from bot.config.errors import ConfigError, ConfigProblem
from bot.config.repo import RepoConfig, find_repo_config, load_repo_config
from bot.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError
from bot.manifests import discover
from bot.manifests.inventory_json import inventory_json
from bot.manifests.quantities import describe_cpu, describe_memory
from bot.model import Inventory, SourceError
from bot.settings import RepositorySettings


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, nargs="?", help="Repository checkout to read.")
    parser.add_argument(
        "--demo", action="store_true", help="Check the embedded demo shop instead of PATH."
    )
    parser.add_argument(
        "--format", choices=("table", "json"), default="table", help="Output format on stdout."
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


def _table(inventory: Inventory, errors: list[SourceError], settings: RepositorySettings) -> str:
    envs = []
    for name in inventory.environments:
        deployment = inventory.deployment(name)
        namespace = settings.environment(name).namespace.value or (
            deployment.namespace if deployment is not None else None
        )
        envs.append(f"{name} (namespace {namespace})" if namespace else name)
    lines = [f"environments: {', '.join(envs) or '(none)'}", *deployment_lines(inventory)]
    for w in inventory.workloads:
        replicas = f"replicas={w.replicas}" if w.replicas is not None else "replicas=-"
        hpa = ""
        if w.hpa:
            low = w.hpa.min_replicas if w.hpa.min_replicas is not None else "-"
            hpa = f" hpa min={low} max={w.hpa.max_replicas}"
        lines.append(f"{w.ref}  {replicas}{hpa}")
        for c in w.containers:
            lines.append(
                f"  {c.name}: requests cpu={describe_cpu(c.requests.cpu_cores)}"
                f" memory={describe_memory(c.requests.memory_bytes)}"
                f"  limits cpu={describe_cpu(c.limits.cpu_cores)}"
                f" memory={describe_memory(c.limits.memory_bytes)}"
            )
    for e in errors:
        lines.append(f"error: {e.file}:{e.line}: {e.message}")
    for warning in inventory.warnings:
        lines.append(f"warning: {warning.file}:{warning.line}: {warning.message}")
    for n in inventory.notes:
        lines.append(f"note: {n.file}:{n.line}: {n.message}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.demo == (args.path is not None):
        raise UsageError("give a repository PATH or --demo (one of them)")
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
    errors = [*config_errors, *inventory.errors]
    if args.format == "json":
        print_json(inventory_json(inventory, config_errors))
    else:
        print(
            _table(inventory, errors, RepositorySettings.of_checkout(root, config, BotSettings()))
        )
    if config_errors:
        return EXIT_USAGE
    return EXIT_FAILED if errors else EXIT_OK
