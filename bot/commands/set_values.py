"""`tortoise-bot set`: pin explicit values through the manifest editor and print the diff.

::

    tortoise-bot set --repo PATH [--environment ENV] [--write] WORKLOAD ASSIGNMENT...

``WORKLOAD`` is ``kind/namespace/name`` or ``kind/name``; ``ASSIGNMENT`` is one of
``CONTAINER.requests.cpu=250m``, ``CONTAINER.limits.memory=1Gi`` (``=none`` removes the value),
``replicas=3``, ``hpa.minReplicas=3``, ``hpa.maxReplicas=10``, ``hpa.CONTAINER.cpu=75``
(target utilisation, percent). Values go through the same rounding and verification as the
bot's own changes. Like ``plan``, it writes only with ``--write`` (then it lists the files it
wrote); without it the diff is printed and a note on stderr says nothing was written (``set``
used to write by default: a script relying on that is told so rather than silently changed).
``--dry-run`` is still accepted and means the default. Exit code 1 with a message when the
workload, container or HPA does not exist, an edit fails verification (nothing is written
then), or a value is skipped because it lives in a file other renders read and the
environment has no overlay of its own.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.config.repo import load_repo_config
from bot.errors import EXIT_FAILED, EXIT_OK, UsageError
from bot.manifests import apply_changes, discover
from bot.manifests.kinds import UNREPLICATED_KINDS, unscaled_reason
from bot.manifests.quantities import QuantityError, bytes_from_quantity, cores_from_quantity
from bot.model import DeclaredWorkload, FieldChange, FieldId, Inventory, Number, Resource

KINDS = {
    "deployment": "Deployment",
    "deploy": "Deployment",
    "statefulset": "StatefulSet",
    "sts": "StatefulSet",
    "daemonset": "DaemonSet",
    "ds": "DaemonSet",
    "rollout": "Rollout",
    "ro": "Rollout",
    "cronjob": "CronJob",
    "cj": "CronJob",
    "job": "Job",
}
"""Accepted spellings of a workload kind."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, default=Path("."), help="Repository checkout.")
    parser.add_argument("--environment", help="Overlay / values environment (when several).")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--write", action="store_true", help="Apply the edits to the working tree (no git)."
    )
    mode.add_argument(
        "--dry-run", action="store_true", help="Print the diff, write nothing (the default)."
    )
    parser.add_argument("workload", help="kind/namespace/name or kind/name")
    parser.add_argument(
        "assignments", nargs="+", metavar="ASSIGNMENT", help="e.g. app.requests.cpu=250m"
    )


def parse_assignment(text: str) -> tuple[FieldId, str | None, Number | None]:
    """``app.requests.cpu=250m`` -> (``requests.cpu``, ``app``, 0.25); raises ``UsageError``."""
    key, sep, raw = text.partition("=")
    if not sep or not key or not raw:
        raise UsageError(f"{text!r}: expected FIELD=VALUE, e.g. app.requests.cpu=250m")
    parts = key.split(".")
    value: Number | None
    try:
        if parts[0] == "hpa" and len(parts) == 2 and parts[1] in ("minReplicas", "maxReplicas"):
            return FieldId(f"hpa.{parts[1]}"), None, int(raw)
        if parts[0] == "hpa" and len(parts) == 3 and parts[2] in ("cpu", "memory"):
            resource: Resource = "cpu" if parts[2] == "cpu" else "memory"
            return FieldId.hpa_target(resource), parts[1], int(raw)
        if parts == ["replicas"]:
            return FieldId.REPLICAS, None, int(raw)
        if (
            len(parts) >= 3
            and parts[-2] in ("requests", "limits")
            and parts[-1] in ("cpu", "memory")
        ):
            container = ".".join(parts[:-2])
            if raw.lower() in ("none", "null"):
                value = None
            elif parts[-1] == "cpu":
                value = cores_from_quantity(raw)
            else:
                value = bytes_from_quantity(raw)
            return FieldId(f"{parts[-2]}.{parts[-1]}"), container, value
    except (ValueError, QuantityError) as exc:
        raise UsageError(f"{text!r}: bad value: {exc}") from exc
    raise UsageError(
        f"{text!r}: unknown field; use CONTAINER.requests.cpu, CONTAINER.limits.memory, replicas, "
        "hpa.minReplicas, hpa.maxReplicas or hpa.CONTAINER.cpu"
    )


def find_workload(
    inventory: Inventory, spec: str, environment: str | None
) -> DeclaredWorkload | str:
    """The workload ``spec`` names, or a message saying why there is not exactly one."""
    parts = spec.split("/")
    if len(parts) not in (2, 3):
        return f"{spec!r}: expected kind/namespace/name or kind/name"
    kind = KINDS.get(parts[0].lower(), parts[0])
    namespace = parts[1] if len(parts) == 3 else None
    name = parts[-1]
    found = [
        w
        for w in inventory.workloads
        if w.ref.kind == kind
        and w.ref.name == name
        and (namespace is None or w.ref.namespace == namespace)
        and (environment is None or w.ref.environment == environment)
    ]
    if not found:
        where = f" in environment {environment!r}" if environment else ""
        return f"no {kind} {spec.split('/', 1)[1]}{where} in this repository"
    if len(found) > 1:
        envs = ", ".join(str(w.ref) for w in found)
        return f"{spec!r} matches several workloads ({envs}): pass --environment or the namespace"
    return found[0]


def run(args: argparse.Namespace) -> int:
    root: Path = args.repo
    if not root.is_dir():
        raise UsageError(f"{root}: not a directory")
    parsed = [parse_assignment(a) for a in args.assignments]
    config = load_repo_config(root)  # ConfigError: reported by the CLI boundary, exit 2
    discovery = discover(root, config)
    inventory = discovery.inventory
    target = find_workload(inventory, args.workload, args.environment)
    if isinstance(target, str):
        print(f"tortoise-bot: {target}", file=sys.stderr)
        return EXIT_FAILED
    changes = []
    for field, container, value in parsed:
        if (
            container is not None
            and field.is_request_or_limit
            and target.container(container) is None
        ):
            names = ", ".join(c.name for c in target.containers)
            print(
                f"tortoise-bot: {target.ref} has no container {container!r} (containers: {names})",
                file=sys.stderr,
            )
            return EXIT_FAILED
        if field == FieldId.REPLICAS and target.ref.kind in UNREPLICATED_KINDS:
            print(
                f"tortoise-bot: {target.ref}: {unscaled_reason(target.ref.kind)} and has no "
                "replicas",
                file=sys.stderr,
            )
            return EXIT_FAILED
        if field.is_hpa and target.hpa is None:
            print(f"tortoise-bot: {target.ref} has no HorizontalPodAutoscaler", file=sys.stderr)
            return EXIT_FAILED
        changes.append(
            FieldChange(target.ref, field, value, container=container, reason="set by hand")
        )
    result = apply_changes(root, discovery, changes, config, write=args.write)
    sys.stdout.write(result.diff)
    for note in result.notes:
        print(f"note: {note.message}", file=sys.stderr)
    for error in result.errors:
        where = f"{error.file}:{error.line}" if error.line else error.file
        print(f"tortoise-bot: {where + ': ' if where else ''}{error.message}", file=sys.stderr)
    for left_out in result.skipped:
        change = left_out.change
        what = change.field + (f" of {change.container}" if change.container else "")
        print(f"tortoise-bot: {what} skipped: {left_out.reason}", file=sys.stderr)
    if args.write:
        for changed in result.files:
            print(f"wrote {changed.path}", file=sys.stderr)
    elif result.files:
        print(
            f"tortoise-bot: nothing written ({len(result.files)} file"
            f"{'s' if len(result.files) != 1 else ''} would change): set writes only with "
            "--write, like plan",
            file=sys.stderr,
        )
    return EXIT_FAILED if result.failed or result.skipped else EXIT_OK
