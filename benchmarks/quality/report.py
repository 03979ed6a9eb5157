"""The benchmark's output: a table per service and pooled, the aims checked, and JSON.

The aims are those the recommendations are tuned towards (``docs/quality.md``), checked for the
two tortoise-bot candidates on the pooled figures (per service where an aim says so):

- CPU slack within 10 points of the oracle's, and below the current settings' and VPA's;
- memory slack within 10 points of the oracle's;
- OOM kills per week at most the lower of VPA's and KRR's, and none on a service that does not
  leak memory;
- CPU minutes over request at most 2 % of the container-minutes;
- requested core-hours below the current settings' on every over-provisioned service (one whose
  current core-hours exceed the oracle's), and converged within 3 merged pull requests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from benchmarks.quality.scores import AIM_ROUNDS, Results, Score, pool
from bot.model import FieldChange
from bot.recommend.units import amount

CANDIDATES = (
    "current",
    "tortoise-bot, one PR",
    "tortoise-bot, merged",
    "VPA defaults",
    "KRR simple",
    "oracle",
)
"""Candidates in the order printed."""

TORTOISE = ("tortoise-bot, one PR", "tortoise-bot, merged")

SLACK_POINTS = 0.10
OVER_REQUEST_AIM = 0.02


def _pct(value: object) -> str:
    return f"{100 * float(value):.1f} %"  # type: ignore[arg-type]


COLUMNS: tuple[tuple[str, str, Callable[[object], str]], ...] = (
    ("requested_cores", "CPU cores", lambda v: f"{v:.2f}"),
    ("core_hours", "core-h", lambda v: f"{v:,.0f}"),
    ("gib_hours", "GiB-h", lambda v: f"{v:,.0f}"),
    ("cpu_slack", "CPU slack", _pct),
    ("cpu_over_request", "CPU>req", lambda v: f"{100 * float(v):.2f} %"),  # type: ignore[arg-type]
    ("memory_slack", "mem slack", _pct),
    ("oom_per_week", "OOM/wk", lambda v: f"{v:.1f}"),
    ("shortfall_minutes", "short min", lambda v: f"{v:.0f}"),
    ("replicas_mean", "pods", lambda v: f"{v:.1f}"),
)
"""(figure key, column title, format) of each printed column."""


def service_names(results: Results) -> list[str]:
    """The services scored, in the order of the first seed."""
    return list(next(iter(results.values()), {}))


def _rounds(figures: Mapping[str, float | int | None], max_rounds: int) -> str:
    worst = figures["rounds_max"]
    if worst is None:
        return ""
    text = f">{max_rounds}" if worst > max_rounds else str(worst)
    return (
        f"{figures['rounds_mean']:.1f}, max {text}, "
        f"{figures['rounds_within_aim']}/{figures['decisions']} ≤ {AIM_ROUNDS}"
    )


def table(pooled: Mapping[str, Score], max_rounds: int) -> list[str]:
    """Text lines: a header, then one row per candidate."""
    rows = [["candidate", *(title for _, title, _ in COLUMNS), "PRs to converge"]]
    for name in CANDIDATES:
        figures = pooled[name].figures()
        cells = [fmt(figures[key]) for key, _, fmt in COLUMNS]
        rows.append([name, *cells, _rounds(figures, max_rounds)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])]
        cells += [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "-" * max(len(line) for line in lines))
    return lines


@dataclass(frozen=True)
class Aim:
    """One aim: what it asks, and per tortoise-bot candidate the figure and whether it holds."""

    text: str
    results: Mapping[str, tuple[str, bool]]


def aims(results: Results, leaking: Sequence[str]) -> list[Aim]:
    """The aims of the module doc, checked."""
    pooled = {n: s.figures() for n, s in pool(results, CANDIDATES).items()}
    services = service_names(results)
    per_service = {svc: pool(results, CANDIDATES, [svc]) for svc in services}
    oracle, current, vpa, krr = (
        pooled[n] for n in ("oracle", "current", "VPA defaults", "KRR simple")
    )
    over_provisioned = [
        svc for svc, s in per_service.items() if s["current"].core_hours > s["oracle"].core_hours
    ]
    oom_bound = min(float(vpa["oom_per_week"] or 0), float(krr["oom_per_week"] or 0))
    out: dict[str, dict[str, tuple[str, bool]]] = {}
    for name in TORTOISE:
        f = pooled[name]
        cpu, mem = float(f["cpu_slack"] or 0), float(f["memory_slack"] or 0)
        cpu_ok = (
            cpu <= float(oracle["cpu_slack"] or 0) + SLACK_POINTS
            and cpu < float(current["cpu_slack"] or 0)
            and cpu < float(vpa["cpu_slack"] or 0)
        )
        ooming = [
            f"{svc} {s[name].figures()['oom_per_week']:.1f}"
            for svc, s in per_service.items()
            if svc not in leaking and s[name].oom_kills
        ]
        costlier = [
            svc
            for svc in over_provisioned
            if per_service[svc][name].core_hours >= per_service[svc]["current"].core_hours
        ]
        over = float(f["cpu_over_request"] or 0)
        oom = float(f["oom_per_week"] or 0)
        checks = {
            "cpu": (_pct(cpu), cpu_ok),
            "memory": (_pct(mem), abs(mem - float(oracle["memory_slack"] or 0)) <= SLACK_POINTS),
            "oom": (f"{oom:.1f}", oom <= oom_bound),
            "oom0": (", ".join(ooming) or "none", not ooming),
            "over": (f"{100 * over:.2f} %", over <= OVER_REQUEST_AIM),
            "cost": (", ".join(costlier) or "none costlier", not costlier),
        }
        if name == "tortoise-bot, merged":
            within, decisions = f["rounds_within_aim"], f["decisions"]
            checks["rounds"] = (f"{within}/{decisions}", within == decisions)
        out[name] = checks
    texts = {
        "cpu": f"CPU slack ≤ oracle + 10 pts ({_pct(oracle['cpu_slack'])}), "
        f"< current ({_pct(current['cpu_slack'])}) and < VPA ({_pct(vpa['cpu_slack'])})",
        "memory": f"memory slack within 10 pts of the oracle's ({_pct(oracle['memory_slack'])})",
        "oom": f"OOM kills/week ≤ min(VPA, KRR) ({oom_bound:.1f})",
        "oom0": f"no OOM kill on services that do not leak (all but {', '.join(leaking)})",
        "over": "CPU minutes over request ≤ 2 %",
        "cost": "core-hours < current on over-provisioned services "
        f"({', '.join(over_provisioned) or 'none'})",
        "rounds": f"converged within {AIM_ROUNDS} merged PRs (services × seeds)",
    }
    return [
        Aim(text, {n: out[n][key] for n in TORTOISE if key in out[n]})
        for key, text in texts.items()
    ]


def aim_lines(found: Sequence[Aim]) -> list[str]:
    """Text lines: one per aim, each tortoise-bot candidate's figure and verdict."""
    lines = []
    for aim in found:
        parts = [
            f"{name.removeprefix('tortoise-bot, ')}: {figure} {'✓' if held else '✗'}"
            for name, (figure, held) in aim.results.items()
        ]
        lines.append(f"  {aim.text}\n      {' | '.join(parts)}")
    return lines


def as_json(results: Results, leaking: Sequence[str]) -> dict[str, object]:
    """Pooled, per-service and per-seed figures, and the aims."""
    services = service_names(results)
    return {
        "pooled": {n: s.figures() for n, s in pool(results, CANDIDATES).items()},
        "services": {
            svc: {n: s.figures() for n, s in pool(results, CANDIDATES, [svc]).items()}
            for svc in services
        },
        "seeds": {
            str(seed): {
                svc: {n: s.figures() for n, s in scores.items()} for svc, scores in per_seed.items()
            }
            for seed, per_seed in results.items()
        },
        "aims": [
            {"aim": a.text, **{n: {"figure": f, "held": h} for n, (f, h) in a.results.items()}}
            for a in aims(results, leaking)
        ],
    }


Proposals = Mapping[int, Mapping[str, Sequence[Sequence[FieldChange]]]]
"""Seed -> service -> the changes of each pull request, in order."""


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
    for seed, per_service in proposals.items():
        for service, rounds in per_service.items():
            lines.append(f"-- {service}, seed {seed}: {len(rounds)} pull request(s)")
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
        str(seed): {
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
        for seed, per_service in proposals.items()
    }
