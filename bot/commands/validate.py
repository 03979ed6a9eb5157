"""`tortoise-bot validate PATH`: check a repository's opt-in file and manifests, print the inventory.

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
from bot.errors import EXIT_USAGE, UsageError, exit_code
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
    parser.add_argument(
        "--strict",
        action="store_true",
        help="Exit 1 when the repository has any finding (for linting in CI).",
    )


def _table(
    inventory: Inventory, config_errors: list[SourceError], settings: RepositorySettings
) -> str:
    envs = []
    for name in inventory.environments:
        namespace = settings.environment(name).namespace.value
        envs.append(f"{name} (namespace {namespace})" if namespace else name)
    lines = [f"environments: {', '.join(envs) or '(none)'}"]
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
    for e in config_errors:  # the opt-in file: a usage error
        lines.append(f"error: {e.file}:{e.line}: {e.message}")
    for e in inventory.errors:  # findings in the manifests: warnings
        lines.append(f"warning: {e.file}:{e.line}: {e.message}")
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
    if args.format == "json":
        print_json(inventory_json(inventory, config_errors))
    else:
        print(
            _table(
                inventory,
                config_errors,
                RepositorySettings.of_checkout(root, config, BotSettings()),
            )
        )
    if config_errors:
        return EXIT_USAGE
    return exit_code(failures=0, findings=len(inventory.errors), strict=args.strict)
