"""A ``Recommendation`` as the plan's workload JSON object (``docs/schemas/plan.schema.json``).

Pure: imports only ``bot.model`` and the report's own modules. Values are cores, bytes,
replicas and percent, as in the recommendation; every value carries its ``rule`` and one-line
``reason``; each container resource also carries the VPA estimate (``vpa``) before any rounding
to manifest quantities. ``replay`` holds the current and proposed values replayed on the window
(``bot.report.replay``), with their monthly cost when prices are given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from bot.model import (
    RESOURCES,
    ContainerRecommendation,
    Explained,
    HpaRecommendation,
    Recommendation,
    ReplayFigures,
    ResourceRecommendation,
    Usage,
    VpaEstimate,
)
from bot.report import replay as replay_view
from bot.report.held import findings_json, held_values
from bot.report.proposal import Prices


def explained_json(value: Explained) -> dict[str, Any]:
    """``{current, proposed, rule, reason, inputs}``."""
    return {
        "current": value.current,
        "proposed": value.proposed,
        "rule": value.rule,
        "reason": value.reason,
        "inputs": dict(value.inputs),
    }


def usage_json(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {
        "p50": usage.p50,
        "p90": usage.p90,
        "p99": usage.p99,
        "max": usage.max,
        "samples": usage.samples,
    }


def vpa_json(vpa: VpaEstimate | None) -> dict[str, Any] | None:
    if vpa is None:
        return None
    return {
        "target": vpa.target,
        "lower_bound": vpa.lower_bound,
        "upper_bound": vpa.upper_bound,
        "uncapped_target": vpa.uncapped_target,
        "confidence": vpa.confidence,
    }


def resource_json(rr: ResourceRecommendation) -> dict[str, Any]:
    return {
        "policy": rr.policy,
        "request": explained_json(rr.request),
        "limit": explained_json(rr.limit),
        "usage": usage_json(rr.usage),
        "vpa": vpa_json(rr.vpa),
    }


def container_json(container: ContainerRecommendation) -> dict[str, Any]:
    out: dict[str, Any] = {"name": container.name}
    for resource in RESOURCES:
        out[resource] = resource_json(container.resource(resource))
    return out


def hpa_json(hpa: HpaRecommendation | None) -> dict[str, Any] | None:
    if hpa is None:
        return None
    return {
        "min_replicas": explained_json(hpa.min_replicas),
        "max_replicas": explained_json(hpa.max_replicas),
        "targets": [
            {
                "container": t.container,
                "resource": t.resource,
                "current": t.value.current,
                "proposed": t.value.proposed,
                "rule": t.value.rule,
                "reason": t.value.reason,
                "inputs": explained_json(t.value)["inputs"],
            }
            for t in hpa.targets
        ],
        "slots": {label: list(pair) for label, pair in hpa.slots.items()},
    }


def figures_json(
    figures: ReplayFigures, prices: Prices, extended: Mapping[str, float] | None = None
) -> dict[str, Any]:
    """One side of a replay: replicas, per-container CPU and memory, requested core-hours and
    GiB-hours with replicas, and their monthly cost (None without prices)."""
    r = figures.replicas
    return {
        "window_s": figures.window_s,
        "core_hours": figures.core_hours,
        "gib_hours": figures.gib_hours,
        "monthly_cost": replay_view.monthly_cost(figures, prices, extended),
        "replicas": {
            "mean": r.mean,
            "p95": r.p95,
            "max": r.max,
            "pod_hours": r.pod_hours,
            "shortfall_minutes": r.shortfall_minutes,
            "replayed": r.replayed,
            "time_zone": r.time_zone,
            "by_hour": replay_view.finite(r.by_hour),
        },
        "cpu": [
            {
                "container": c.container,
                "request_cores": c.request_cores,
                "limit_cores": c.limit_cores,
                "container_minutes": c.container_minutes,
                "over_request_minutes": c.over_request_minutes,
                "over_limit_minutes": c.over_limit_minutes,
                "p95_percent": c.p95_percent,
            }
            for c in figures.cpu
        ],
        "memory": [
            {
                "container": m.container,
                "request_bytes": m.request_bytes,
                "limit_bytes": m.limit_bytes,
                "oom_kills": m.oom_kills,
                "over_request_minutes": m.over_request_minutes,
                "peak_bytes": m.peak_bytes,
                "headroom_percent": m.headroom_percent,
            }
            for m in figures.memory
        ],
    }


def replay_json(rec: Recommendation, prices: Prices) -> dict[str, Any] | None:
    """``{gate, prices, current, proposed, findings, held}``; None without a replay."""
    replay = rec.replay
    if replay is None:
        return None
    return {
        "gate": replay.gate,
        "prices": {
            "core_month": prices.core_month,
            "gib_month": prices.gib_month,
            "currency": prices.currency,
            **({"extended": dict(prices.extended)} if prices.extended else {}),
        }
        if replay_view.priced(prices)
        else None,
        "current": figures_json(replay.current, prices, replay.extended),
        "proposed": figures_json(replay.proposed, prices, replay.extended),
        "extended_resources": dict(replay.extended),
        "findings": findings_json(replay.findings),
        "held": [
            {
                "field": h.field,
                "container": h.container,
                "wanted": h.wanted,
                "kept": h.kept,
                "reason": h.why,
            }
            for h in held_values(rec)
        ],
    }


def backtest_json(rec: Recommendation, prices: Prices) -> dict[str, Any] | None:
    """``{trained_until, status, unavailable, current, proposed}``; None without a backtest."""
    bt = rec.backtest
    if bt is None:
        return None
    units = rec.replay.extended if rec.replay is not None else None
    return {
        "trained_until": datetime.fromtimestamp(bt.trained_until_s, UTC).isoformat(),
        "status": bt.status,
        "unavailable": bt.unavailable,
        "expected_over_request": dict(bt.expected),
        "current": figures_json(bt.current, prices, units) if bt.current is not None else None,
        "proposed": figures_json(bt.proposed, prices, units) if bt.proposed is not None else None,
    }


def workload_json(
    rec: Recommendation, *, files: Sequence[str] = (), prices: Prices | None = None
) -> dict[str, Any]:
    """The plan's object for one workload (``prices``: for the replay's monthly cost)."""
    return {
        "kind": rec.ref.kind,
        "namespace": rec.ref.namespace,
        "name": rec.ref.name,
        "environment": rec.ref.environment,
        "status": rec.status,
        "reasons": list(rec.reasons),
        "files": list(files),
        "containers": [container_json(c) for c in rec.containers],
        "hpa": hpa_json(rec.hpa),
        "notes": [
            {"code": n.code, "message": n.message, "container": n.container} for n in rec.notes
        ],
        "replay": replay_json(rec, prices or Prices()),
        "backtest": backtest_json(rec, prices or Prices()),
    }


def plan_json(
    workloads: Sequence[tuple[Recommendation, Sequence[str]]],
    *,
    diff: str = "",
    prices: Prices | None = None,
) -> dict[str, Any]:
    """The whole plan: ``{"workloads": [...], "diff": "..."}``."""
    return {
        "workloads": [workload_json(rec, files=files, prices=prices) for rec, files in workloads],
        "diff": diff,
    }
