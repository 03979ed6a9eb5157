"""The benchmark's output: tables per service and pooled, the worst split weekday, and JSON.

Every figure is of the scored days, per run (seed and split weekday) and per week; ``×budget``
is a candidate's requested core-hours over the budget-matched oracle's on the same services and
runs, ``×risk`` over its own risk-matched oracle's (``benchmarks.quality.oracles``). ``worst
day`` is the split weekday with the highest CPU over request and that figure (pooled over the
seeds and services of the table). The aims are in ``benchmarks.quality.aims``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from benchmarks.quality.options import CANDIDATES, ORACLE
from benchmarks.quality.scores import AIM_ROUNDS, Results, pool, worst_weekday
from benchmarks.quality.sets import WEEKDAYS
from bot.model import FieldChange
from bot.recommend.units import amount


def pct(value: object, digits: int = 1) -> str:
    """``0.0134`` as ``1.3 %``."""
    return f"{100 * float(value):.{digits}f} %"  # type: ignore[arg-type]


def _ratio(value: object) -> str:
    return "" if value is None else f"{float(value):.2f}"  # type: ignore[arg-type]


COLUMNS: tuple[tuple[str, str, Callable[[object], str]], ...] = (
    ("requested_cores", "CPU cores", lambda v: f"{v:.2f}"),
    ("core_hours", "core-h", lambda v: f"{v:,.0f}"),
    ("budget_ratio", "×budget", _ratio),
    ("risk_ratio", "×risk", _ratio),
    ("cpu_slack", "CPU slack", pct),
    ("cpu_over_request", "CPU>req", lambda v: pct(v, 2)),
    ("worst_day", "worst day", str),
    ("gib_hours", "GiB-h", lambda v: f"{v:,.0f}"),
    ("memory_slack", "mem slack", pct),
    ("memory_over_request", "mem>req", lambda v: pct(v, 2)),
    ("oom_per_week", "OOM/wk", lambda v: f"{v:.1f}"),
    ("shortfall_minutes", "short min", lambda v: f"{v:.0f}"),
    ("replicas_mean", "pods", lambda v: f"{v:.1f}"),
)
"""(figure key, column title, format) of each printed column."""


def service_names(results: Results) -> list[str]:
    """The services scored, in the order of the first run."""
    return list(next(iter(results.values()), {}))


def figures(
    results: Results, services: Sequence[str] | None = None
) -> dict[str, dict[str, object]]:
    """Per candidate, the pooled figures over ``services`` (default all) with ``budget_ratio``
    and ``worst_day`` (``mon 3.27 %``) and ``worst_weekday`` / ``worst_cpu_over_request``."""
    pooled = pool(results, CANDIDATES, services)
    worst = worst_weekday(results, CANDIDATES, services)
    oracle = pooled[ORACLE].core_hours
    out: dict[str, dict[str, object]] = {}
    for name in CANDIDATES:
        f: dict[str, object] = dict(pooled[name].figures())
        f["budget_ratio"] = pooled[name].core_hours / oracle if oracle else None
        day, score = worst[name]
        over = score.figures()["cpu_over_request"]
        f["worst_weekday"], f["worst_cpu_over_request"] = WEEKDAYS[day], over
        f["worst_day"] = f"{WEEKDAYS[day]} {pct(over, 2)}"
        out[name] = f
    return out


def _rounds(f: Mapping[str, object], max_rounds: int) -> str:
    worst = f["rounds_max"]
    if worst is None:
        return ""
    text = f">{max_rounds}" if int(worst) > max_rounds else str(worst)  # type: ignore[call-overload]
    return f"{f['rounds_mean']:.1f}, max {text}, {f['rounds_within_aim']}/{f['decisions']} ≤ {AIM_ROUNDS}"


def table(found: Mapping[str, Mapping[str, object]], max_rounds: int) -> list[str]:
    """Text lines: a header, then one row per candidate."""
    rows = [["candidate", *(title for _, title, _ in COLUMNS), "PRs to converge"]]
    for name in CANDIDATES:
        f = found[name]
        cells = [fmt(f[key]) if f[key] is not None else "" for key, _, fmt in COLUMNS]
        rows.append([name, *cells, _rounds(f, max_rounds)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])]
        cells += [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "-" * max(len(line) for line in lines))
    return lines


def as_json(results: Results, sets: Mapping[str, Sequence[str]]) -> dict[str, object]:
    """Pooled figures per set, per service, per run."""
    return {
        "sets": {name: figures(results, services) for name, services in sets.items()},
        "services": {svc: figures(results, [svc]) for svc in service_names(results)},
        "runs": {
            f"{seed}/{WEEKDAYS[day]}": {
                svc: {n: s.figures() for n, s in scores.items()} for svc, scores in per.items()
            }
            for (seed, day), per in results.items()
        },
    }


Proposals = Mapping[tuple[int, int], Mapping[str, Sequence[Sequence[FieldChange]]]]
"""Run -> service -> the changes of each pull request, in order."""


def _value(change: FieldChange, value: float | int | None) -> str:
    if value is None:
        return "none" if change.proposed is not None else "removed"
    resource = change.field.rsplit(".", 1)[-1]
    if change.field.startswith(("requests.", "limits.")) and resource in ("cpu", "memory"):
        return amount(value, "cpu" if resource == "cpu" else "memory")
    return f"{value:g}" + (" %" if change.field.startswith("hpa.target.") else "")


def _rule(change: FieldChange) -> str:
    """The rule id the reason ends with (``... [rule]``)."""
    head, _, tail = change.reason.rpartition(" [")
    return tail.rstrip("]") if head and tail.endswith("]") else ""


def proposal_lines(proposals: Proposals) -> list[str]:
    """Per service and seed, each pull request's changes: field, current → proposed, rule."""
    lines = []
    for (seed, day), per_service in proposals.items():
        for service, rounds in per_service.items():
            where = f"seed {seed}, split {WEEKDAYS[day]}"
            lines.append(f"-- {service}, {where}: {len(rounds)} pull request(s)")
            for k, changes in enumerate(rounds, 1):
                for change in changes:
                    where = f"{change.container} " if change.container else ""
                    lines.append(
                        f"  PR {k}  {where}{change.field}  {_value(change, change.current)} → "
                        f"{_value(change, change.proposed)}  [{_rule(change)}]"
                    )
    return lines


def proposals_json(proposals: Proposals) -> dict[str, dict[str, list[list[dict[str, object]]]]]:
    """``proposal_lines`` as data: field, container, current, proposed and rule per change."""
    return {
        f"{seed}/{WEEKDAYS[day]}": {
            service: [
                [
                    {
                        "field": c.field,
                        "container": c.container,
                        "current": c.current,
                        "proposed": c.proposed,
                        "rule": _rule(c),
                    }
                    for c in changes
                ]
                for changes in rounds
            ]
            for service, rounds in per_service.items()
        }
        for (seed, day), per_service in proposals.items()
    }
