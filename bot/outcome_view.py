"""Views of a ``RepositoryOutcome``: the ``--format json`` document, markdown, and table rows.

All three read the same data. The JSON document is described by
``docs/schemas/plan.schema.json``; per workload it is the engine's workload object
(``bot.report.outcome_json``) plus what only the pipeline knows (files, edit failures).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from bot.manifests.quantities import round_cpu_millicores, round_memory_bytes
from bot.manifests.unsupported import unsupported_json
from bot.model import (
    RESOURCES,
    ContainerRecommendation,
    DeclaredWorkload,
    Explained,
    FieldChange,
    FieldId,
    Number,
    Recommendation,
    Resource,
    ResourceRecommendation,
    SourceError,
    WorkloadRef,
)
from bot.pipeline.plan import RepositoryOutcome, WorkloadOutcome
from bot.recommend.rules import Rule
from bot.report import backtest, replay
from bot.report.held import gate_lines
from bot.report.markdown import escape
from bot.report.numbers import amount, field_change, target
from bot.report.outcome_json import workload_json
from bot.report.proposal import Prices

PLAN_FORMAT_VERSION = 1


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


SKIPPED_INIT = "skipped: init container"
"""What every output says of an ordinary init container: it runs to completion before the
others, so it is neither sized nor edited."""

SKIPPED_NO_REQUEST = "skipped: no request"
"""What the tables say of a request the container does not declare and the bot does not add
(``requests.add_missing: false``, or the resource's policy ``off``)."""

NOT_COMPUTED = Rule.NOT_COMPUTED
"""Rule of the values of a workload the engine did not run for (skipped, or an error first)."""


def _declared_only(declared: DeclaredWorkload) -> Recommendation:
    """A recommendation-shaped view of a workload the engine did not run for: current values,
    nothing proposed."""

    def resource(name: str, r: Resource) -> ResourceRecommendation:
        def value(current: float | int | None) -> Explained:
            return Explained(current, current, NOT_COMPUTED, "not computed for this workload")

        container = declared.container(name)
        assert container is not None
        return ResourceRecommendation(
            r, "off", value(container.requests.get(r)), value(container.limits.get(r))
        )

    containers = tuple(
        ContainerRecommendation(c.name, *(resource(c.name, r) for r in RESOURCES))
        for c in declared.containers
        if not c.init
    )
    return Recommendation(declared.ref, "skipped", containers=containers)


def outcome_json(outcome: WorkloadOutcome, prices: Prices | None = None) -> dict[str, Any]:
    """One ``workloads[]`` entry: the engine's object, with the pipeline's status and files
    (``prices``: for the replay's monthly cost)."""
    rec = outcome.recommendation or _declared_only(outcome.declared)
    data = workload_json(rec, files=outcome.declared.files, prices=prices)
    data["status"] = outcome.status
    data["reasons"] = list(outcome.reasons)
    declared = outcome.declared
    for container in data.get("containers", ()):
        found = declared.container(container["name"])
        if found is not None and found.mark:
            container["mark"] = found.mark
    data["init_containers"] = [
        {"name": c.name, "mark": c.mark, "status": SKIPPED_INIT}
        for c in declared.containers
        if c.init
    ]
    if outcome.unsupported is not None:
        data["unsupported"] = unsupported_json(outcome.unsupported)
    return data


def plan_document(plan: RepositoryOutcome, *, repository: str) -> dict[str, Any]:
    """The ``plan --format json`` object."""
    start_s, end_s = plan.window
    return {
        "version": PLAN_FORMAT_VERSION,
        "repository": repository,
        "window": {"start": _iso(start_s), "end": _iso(end_s)},
        "environments": list(plan.inventory.environments),
        "workloads": [outcome_json(o, plan.prices) for o in plan.outcomes],
        "errors": [
            {"file": e.file, "line": e.line, "message": e.message}
            for e in (*plan.inventory.errors, *plan.edit.errors)
        ],
        "notes": [n.message for n in plan.edit.notes],
        "diff": plan.edit.diff,
    }


def written(resource: Resource | str | None, value: Number | None) -> Number | None:
    """A proposed request or limit as the edit writes it (rounded up to the step of
    ``bot.manifests.quantities``: 0.476 cores is written ``480m``), so a table shows the number
    the diff shows; any other value unchanged."""
    if value is None:
        return None
    if resource == "cpu":
        return round_cpu_millicores(float(value)) / 1000
    if resource == "memory":
        return round_memory_bytes(value)
    return value


def _value(resource: Resource, value: Explained) -> str:
    current = amount(resource, value.current)
    if value.proposed is None or value.proposed == value.current:
        return current
    return f"{current} → {amount(resource, written(resource, value.proposed))}"


def _usage(res: ResourceRecommendation) -> str:
    """``p90 / max`` of a resource's usage, empty without usage data."""
    if res.usage is None:
        return ""
    return f"{amount(res.resource, res.usage.p90)} / {amount(res.resource, res.usage.max)}"


def plan_markdown(plan: RepositoryOutcome, *, repository: str) -> str:
    """The plan as GitHub-flavoured markdown (for job summaries and issue comments)."""
    lines = [f"## tortoise-bot plan: {escape(repository)}", ""]
    counts: dict[str, int] = {}
    for outcome in plan.outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    lines.append(
        ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no workloads"
    )
    names = short_names([o.ref for o in plan.outcomes])
    lines += ["", "| status | workload | what changes |", "|---|---|---|"]
    for outcome in plan.outcomes:
        lines.append(
            f"| {outcome.status} | {escape(str(outcome.ref))} | {escape(change_summary(outcome))} |"
        )
    lines += [
        "",
        "| workload | container | value | current → proposed | usage p90 / max | rule and reason |",
        "|---|---|---|---|---|---|",
    ]
    for outcome in plan.outcomes:
        for row in value_rows(outcome):
            cells = (names[outcome.ref], *row)
            lines.append("| " + " | ".join(escape(cell) for cell in cells) + " |")
    for outcome in plan.outcomes:
        rec = outcome.recommendation
        if outcome.status == "changes" and rec is not None:
            lines += ["", replay_markdown(rec, plan).rstrip("\n")]
    if plan.edit.diff:
        lines += ["", "```diff", plan.edit.diff.rstrip("\n"), "```"]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- terminal views


def workload_spec_matches(ref: WorkloadRef, spec: str) -> bool:
    """Whether ``spec`` (``name``, ``namespace/name`` or ``kind/namespace/name``, optionally
    ``@environment``; the kind in any case) names ``ref``. False for a malformed ``spec``."""
    name, _, environment = spec.partition("@")
    parts = name.split("/")
    if not 1 <= len(parts) <= 3 or not all(parts):
        return False
    fields = (ref.kind.lower(), ref.namespace, ref.name)[-len(parts) :]
    wanted = tuple(p.lower() if i == 0 and len(parts) == 3 else p for i, p in enumerate(parts))
    return fields == wanted and (not environment or environment in environment_names(ref))


def environment_names(ref: WorkloadRef) -> list[str]:
    """The names that stand for ``ref``'s environment, shortest first: its last path segments
    (``prod``, ``overlays/prod``, ``kustomize/overlays/prod`` for
    ``kustomize/overlays/prod``); empty without an environment."""
    if not ref.environment:
        return []
    segments = ref.environment.split("/")
    return ["/".join(segments[-k:]) for k in range(1, len(segments) + 1)]


def short_names(refs: Sequence[WorkloadRef]) -> dict[WorkloadRef, str]:
    """The shortest name of each workload that names it alone among ``refs``: ``cart``, else
    ``shop/cart``, else ``Deployment/shop/cart``, each with ``@environment`` only when needed,
    the environment's path cut to the last segments that tell it apart (``cart@prod`` for
    ``apps/overlays/prod``: a common prefix of overlay paths is left out). What ``explain``
    accepts as WORKLOAD."""
    out: dict[WorkloadRef, str] = {}
    for ref in refs:
        candidates = [
            f"{spec}{suffix}"
            for suffix in ("", *(f"@{e}" for e in environment_names(ref)))
            for spec in (
                ref.name,
                f"{ref.namespace}/{ref.name}",
                f"{ref.kind}/{ref.namespace}/{ref.name}",
            )
        ]
        out[ref] = next((c for c in candidates if matching(refs, c) == [ref]), str(ref))
    return out


def matching(refs: Sequence[WorkloadRef], spec: str) -> list[WorkloadRef]:
    """The workloads ``spec`` names (``workload_spec_matches``); when its environment is the
    whole name of some of them (``@prod`` beside ``@overlays/prod``), only those."""
    found = [r for r in refs if workload_spec_matches(r, spec)]
    environment = spec.partition("@")[2]
    exact = [r for r in found if r.environment == environment]
    return exact if environment and exact else found


def change_summary(outcome: WorkloadOutcome) -> str:
    """What changes, in one line: ``memory 1 GiB → 820 MiB, replicas 3–20 → 5–18, app cpu
    target 60% → 65%`` (container names only when the workload has several); for a workload
    without changes, its first reason."""
    if not outcome.changes:
        return outcome.reasons[0] if outcome.reasons else "-"
    several = len({c.container for c in outcome.changes if c.field.is_request_or_limit}) > 1
    parts: list[str] = []
    replicas: dict[str, FieldChange] = {}
    for change in outcome.changes:
        if change.field in (FieldId.HPA_MIN_REPLICAS, FieldId.HPA_MAX_REPLICAS):
            replicas[change.field] = change
            continue
        resource = change.field.resource or change.field.text  # replicas: its own name
        who = f"{change.container} " if change.container and several else ""
        if change.field.is_hpa_target:
            who = f"{change.container} " if change.container else ""
            label = f"{who}{resource} target"
        else:
            label = f"{who}{resource}{' limit' if change.field.is_limit else ''}"
        proposed = written(change.field.resource, change.proposed)
        if not change.field.is_request_or_limit:
            proposed = change.proposed
        parts.append(f"{label} {field_change(change.field, change.current, proposed)}")
    if replicas:
        hpa = outcome.recommendation.hpa if outcome.recommendation else None
        if hpa is not None:
            low, high = hpa.min_replicas, hpa.max_replicas
            parts.insert(
                0, f"replicas {low.current}–{high.current} → {low.proposed}–{high.proposed}"
            )
    return ", ".join(parts)


def container_label(declared: DeclaredWorkload, name: str) -> str:
    """A container's name as tables show it: ``shipper (sidecar (init))`` for a native sidecar,
    ``migrate (init)`` for an ordinary init container, else the name alone."""
    found = declared.container(name)
    return f"{name} ({found.mark})" if found is not None and found.mark else name


def value_rows(outcome: WorkloadOutcome) -> list[tuple[str, str, str, str, str]]:
    """Per value the engine looked at: ``(container, value, current → proposed, usage p90 /
    max, rule and reason)``; the reason only where the value changes."""
    rec = outcome.recommendation
    if rec is None:
        return []

    def why(value: Explained) -> str:
        if value.current is None and value.proposed is None and value.rule == Rule.POLICY_OFF:
            return SKIPPED_NO_REQUEST
        if value.rule == Rule.POLICY_VPA_MANAGED:
            return f"skipped: {value.reason}"
        return f"{value.rule}: {value.reason}" if value.changed and value.reason else value.rule

    rows = []
    for container in rec.containers:
        name = container_label(outcome.declared, container.name)
        for res in (container.cpu, container.memory):
            usage = _usage(res)
            rows.append(
                (
                    name,
                    f"{res.resource} request",
                    _value(res.resource, res.request),
                    usage,
                    why(res.request),
                )
            )
            rows.append(
                (
                    name,
                    f"{res.resource} limit",
                    _value(res.resource, res.limit),
                    "",
                    why(res.limit),
                )
            )
    rows += [
        (container_label(outcome.declared, c.name), "requests, limits", "", "", SKIPPED_INIT)
        for c in outcome.declared.containers
        if c.init
    ]
    if rec.hpa is not None:
        keda = outcome.declared.hpa is not None and outcome.declared.hpa.keda is not None
        for label, value in (
            ("minReplicas", rec.hpa.min_replicas),
            ("maxReplicas", rec.hpa.max_replicas),
        ):
            shown = f"{value.current} → {value.proposed}" if value.changed else str(value.current)
            rows.append(("(keda)" if keda else "(hpa)", label, shown, "", why(value)))
        for hpa_target in rec.hpa.targets:
            v = hpa_target.value
            rows.append(
                (
                    hpa_target.container,
                    f"{hpa_target.resource} target",
                    target(v.current, v.proposed),
                    "",
                    why(v),
                )
            )
    return rows


def replay_markdown(rec: Recommendation, plan: RepositoryOutcome) -> str:
    """The replay section of one workload with changes (``bot.report.replay.markdown``)."""
    shown = replay.markdown(rec, plan.prices, heading=f"### {escape(str(rec.ref))}", column="")
    tested = backtest.markdown(rec)
    return f"{shown}\n{tested}" if tested else shown


def replay_rows(outcome: WorkloadOutcome, prices: Prices) -> list[tuple[str, str, str]]:
    """The replay table of a workload with changes: ``(figure, current, proposed)``, headed by
    ``("last N days, replayed", "current", "proposed")``; empty without changes or without a
    replay."""
    rec = outcome.recommendation
    if outcome.status != "changes" or rec is None or rec.replay is None:
        return []
    head = (
        f"last {replay.window_days(rec.replay.current.window_s)}, replayed",
        "current",
        "proposed",
    )
    table = replay.rows(rec.replay, prices, kind=rec.ref.kind)
    return [head] + [(r.label, r.current, r.proposed) for r in table]


def replay_notes(outcome: WorkloadOutcome, prices: Prices) -> list[str]:
    """What goes under a workload's replay table: the cost formula (or that no prices are
    set) and what the gate did; for a workload with changes but no replay, that. A CronJob's or
    Job's first says what its sizes rest on (its ``job-runs`` note)."""
    rec = outcome.recommendation
    if outcome.status != "changes" or rec is None:
        return []
    runs = [n.message for n in rec.notes if n.code == "job-runs"]
    tested = runs + (
        [backtest.brief(rec) or backtest.heading(rec.backtest)] if rec.backtest is not None else []
    )
    if rec.replay is None:
        return ["no replay: cost and risk not estimated", *tested]
    return [
        replay.cost_formula(rec.replay, prices) or NOT_PRICED,
        *gate_lines(rec),
        *tested,
    ]


NOT_PRICED = (
    "no monthly cost: no prices are set (prices in the bot settings, or pull_requests.cost "
    "in the repository)"
)


def error_lines(errors: Sequence[SourceError]) -> list[str]:
    """Each distinct error once, in the order first seen: ``FILE:LINE: message`` when it
    occurs once, ``message (43 files; first FILE:LINE)`` when the same message comes from
    several files (one missing ``kubectl`` fails every overlay alike)."""
    where: dict[str, list[SourceError]] = {}
    for error in errors:
        where.setdefault(error.message, []).append(error)
    lines = []
    for message, found in where.items():
        first = f"{found[0].file}:{found[0].line}"
        lines.append(
            f"{first}: {message}"
            if len(found) == 1
            else f"{message} ({len(found)} files; first {first})"
        )
    return lines


def nothing_found(plan: RepositoryOutcome) -> str:
    """What an empty plan read: ``no workloads found in 12 files (paths.include **/*.yaml,
    **/*.yml; paths.exclude none) over 2 environments (default, prod)``; a plan whose
    workloads are all left out by a selection says so."""
    files = plan.discovery.files
    paths = files.paths
    read = len(files.listing())
    envs = plan.inventory.environments
    if plan.inventory.workloads:
        return f"no workload selected of the {len(plan.inventory.workloads)} found"
    return (
        f"no workloads found in {read} file{'s' if read != 1 else ''} "
        f"(paths.include {', '.join(paths.include) or 'none'}; "
        f"paths.exclude {', '.join(paths.exclude) or 'none'}) over {len(envs)} "
        f"environment{'s' if len(envs) != 1 else ''} ({', '.join(envs) or 'none'})"
    )
