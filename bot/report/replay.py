"""A proposal's replay for people: the "last N days under this proposal" rows, the replica-aware
monthly cost, the risk figures, the values the gate held back and its findings.

Reads a ``ReplayComparison`` (``bot/recommend/replay``): the current and the proposed values
replayed on the recorded window. Every figure shown is one of the replay's, or one of these
formulas of them (``window_h = window_s / 3600``):

* requested cores with replicas (the mean over the window) = ``core_hours / window_h``; memory
  likewise ``gib_hours / window_h`` GiB;
* monthly cost = ``(core_hours × core_month + gib_hours × gib_month) / window_h``, i.e. the
  mean requested cores × the price of a core for a month plus the mean GiB × the price of a GiB
  for a month, with the configured prices (``prices`` in the bot settings, or a repository's
  ``pull_requests.cost``); no prices, no cost;
* CPU minutes over request as a share of the container-minutes of the same side (the replayed
  replicas change both).

A workload without a replay (nothing to replay, or no change) gets no figure here: callers say
so rather than estimate one per pod.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bot.model import (
    SECONDS_PER_DAY,
    SECONDS_PER_HOUR,
    Recommendation,
    ReplayComparison,
    ReplayFigures,
)
from bot.report import numbers
from bot.report.held import gate_lines
from bot.report.markdown import escape
from bot.report.proposal import Prices


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the replay table: what it measures, current and proposed, as shown."""

    label: str
    current: str
    proposed: str


@dataclass(frozen=True, slots=True)
class CostTotals:
    """Monthly cost of several workloads' replays, current and proposed (``currency``), and the
    mean requested cores and GiB with replicas; ``unreplayed`` names the workloads with changes
    but no replay (counted in neither)."""

    currency: str
    priced: bool
    current_month: float
    proposed_month: float
    current_cores: float
    proposed_cores: float
    current_gib: float
    proposed_gib: float
    replayed: int
    unreplayed: tuple[str, ...] = ()

    @property
    def delta_month(self) -> float:
        return self.proposed_month - self.current_month

    def cost_text(self) -> str | None:
        """``$120.00 → $150.00/month (+$30.00)``; None without prices or replays."""
        if not self.priced or not self.replayed:
            return None
        return (
            f"{numbers.unsigned_money(self.current_month, self.currency)} → "
            f"{numbers.unsigned_money(self.proposed_month, self.currency)}/month "
            f"({numbers.money(self.delta_month, self.currency)})"
        )

    def requests_text(self) -> str | None:
        """``CPU 4.757 → 7.013 cores, memory 3.96 → 5.26 GiB``; None without replays."""
        if not self.replayed:
            return None
        return (
            f"CPU {numbers.core_amount(self.current_cores)} → "
            f"{numbers.core_amount(self.proposed_cores)}, "
            f"memory {numbers.gib(self.current_gib)} → {numbers.gib(self.proposed_gib)}"
        )


# --------------------------------------------------------------------------- numbers


def priced(prices: Prices) -> bool:
    """Whether ``prices`` give a cost (a CPU, memory or extended-resource price set)."""
    return bool(prices.core_month or prices.gib_month or any(prices.extended.values()))


def window_hours(figures: ReplayFigures) -> float:
    return figures.window_s / SECONDS_PER_HOUR


def window_days(window_s: float) -> str:
    """``14 days``, ``1 day``, ``6.5 days``: the replayed window, whole days when it is one."""
    days = window_s / SECONDS_PER_DAY
    if abs(days - round(days)) < 0.05:
        whole = round(days)
        return f"{whole} day" if whole == 1 else f"{whole} days"
    return f"{days:.1f} days"


def monthly_cost(
    figures: ReplayFigures, prices: Prices, extended: Mapping[str, float] | None = None
) -> float | None:
    """``(core_hours × core_month + gib_hours × gib_month) / window_h`` + the ``extended``
    resources per pod × mean replicas × their price per unit-month (``extended_cost``): what
    the mean requests with replicas cost for a month; None without prices or window."""
    hours = window_hours(figures)
    if not priced(prices) or hours <= 0:
        return None
    base = (figures.core_hours * prices.core_month + figures.gib_hours * prices.gib_month) / hours
    return base + extended_cost(figures, prices, extended or {})


def extended_cost(figures: ReplayFigures, prices: Prices, extended: Mapping[str, float]) -> float:
    """Σ units per pod × price per unit-month × the replay's mean replicas, over the priced
    extended resources (``nvidia.com/gpu``); 0 without one."""
    per_pod = sum(units * prices.extended.get(name, 0.0) for name, units in extended.items())
    return per_pod * figures.replicas.mean if per_pod else 0.0


def mean_cores(figures: ReplayFigures) -> float:
    """Requested cores with replicas, averaged over the window: ``core_hours / window_h``."""
    hours = window_hours(figures)
    return figures.core_hours / hours if hours > 0 else 0.0


def mean_gib(figures: ReplayFigures) -> float:
    """Requested GiB with replicas, averaged over the window: ``gib_hours / window_h``."""
    hours = window_hours(figures)
    return figures.gib_hours / hours if hours > 0 else 0.0


def _eviction_minutes(figures: ReplayFigures) -> float | None:
    """Minutes above the memory request of containers without a memory limit (None: none)."""
    values = [m.over_request_minutes for m in figures.memory if m.oom_kills is None]
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _has_limit(figures: ReplayFigures) -> bool:
    return any(m.oom_kills is not None for m in figures.memory)


# --------------------------------------------------------------------------- the table


def rows(replay: ReplayComparison, prices: Prices, *, kind: str = "") -> list[Row]:
    """The replay table: replicas, requests with replicas, CPU minutes over request (of the
    container-minutes), OOM kills (and minutes above the memory request where there is no
    memory limit: eviction risk), capacity shortfall, monthly cost. A DaemonSet's (``kind``)
    replicas are its pods, one per node; a CronJob's or Job's table is per run (``run_rows``)."""
    if kind in ("CronJob", "Job"):
        from bot.report.run_replay import run_rows  # noqa: PLC0415 (it imports this module)

        return run_rows(replay)
    cur, new = replay.current, replay.proposed
    recorded = "" if cur.replicas.replayed or new.replicas.replayed else " (as recorded)"
    counted = "pods (one per node)" if kind == "DaemonSet" else "replicas"
    out = [
        Row(
            f"{counted} mean / p95 / max{recorded}",
            *(
                " / ".join(
                    numbers.replicas(v) for v in (f.replicas.mean, f.replicas.p95, f.replicas.max)
                )
                for f in (cur, new)
            ),
        ),
        Row(
            "requested CPU, mean with replicas",
            *(numbers.core_amount(mean_cores(f)) for f in (cur, new)),
        ),
        Row(
            "requested memory, mean with replicas", *(numbers.gib(mean_gib(f)) for f in (cur, new))
        ),
        Row(
            "CPU minutes over request",
            *(
                f"{f.over_request_minutes:,.0f} of {f.container_minutes:,.0f} "
                f"({numbers.share(f.over_request_minutes, f.container_minutes)})"
                for f in (cur, new)
            ),
        ),
    ]
    if _has_limit(cur) or _has_limit(new):
        out.append(Row("predicted OOM kills", str(cur.oom_kills), str(new.oom_kills)))
    evictions = (_eviction_minutes(cur), _eviction_minutes(new))
    if evictions != (None, None):
        out.append(
            Row(
                "eviction-risk minutes (no memory limit)",
                *(numbers.minutes(v or 0.0) for v in evictions),
            )
        )
    short = (cur.replicas.shortfall_minutes, new.replicas.shortfall_minutes)
    if short != (None, None):
        out.append(Row("capacity shortfall", *(numbers.minutes(v or 0.0) for v in short)))
    costs = (monthly_cost(cur, prices, replay.extended), monthly_cost(new, prices, replay.extended))
    if costs[0] is not None and costs[1] is not None:
        out.append(
            Row(
                "monthly cost",
                numbers.unsigned_money(costs[0], prices.currency),
                f"{numbers.unsigned_money(costs[1], prices.currency)} "
                f"({numbers.money(costs[1] - costs[0], prices.currency)})",
            )
        )
    return out


def container_rows(replay: ReplayComparison, marks: Mapping[str, str] | None = None) -> list[Row]:
    """Per container: CPU p95 as a share of the request, minutes over the CPU limit
    (throttling), memory headroom at the peak; only what the container has. A container with
    a mark in ``marks`` (``sidecar (init)``, ``init``: ``Proposal.marks``) is named with it."""

    def named(container: str) -> str:
        mark = (marks or {}).get(container, "")
        return f"{container} ({mark})" if mark else container

    out: list[Row] = []
    cur, new = replay.current, replay.proposed
    for cpu in new.cpu:
        old = cur.container_cpu(cpu.container)
        if old is None:
            continue
        if cpu.p95_percent is not None or old.p95_percent is not None:
            out.append(
                Row(
                    f"{named(cpu.container)}: CPU p95 of the request",
                    *(_percent(x.p95_percent) for x in (old, cpu)),
                )
            )
        if cpu.over_limit_minutes is not None or old.over_limit_minutes is not None:
            out.append(
                Row(
                    f"{named(cpu.container)}: CPU minutes over the limit (throttling)",
                    *(numbers.minutes(x.over_limit_minutes or 0.0) for x in (old, cpu)),
                )
            )
    for mem in new.memory:
        was = cur.container_memory(mem.container)
        if was is None:
            continue
        out.append(
            Row(
                f"{named(mem.container)}: memory peak {numbers.memory(mem.peak_bytes)}, "
                "headroom to the limit (or request)",
                *(_percent(x.headroom_percent) for x in (was, mem)),
            )
        )
    return out


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f} %"


def cost_formula(replay: ReplayComparison, prices: Prices, *, brief: bool = False) -> str | None:
    """How the monthly cost row is computed, with the prices (and, unless ``brief``, the
    replayed core-hours and GiB-hours behind the means); None without prices."""
    if not priced(prices):
        return None
    cur, new = replay.current, replay.proposed
    c = prices.currency
    head = (
        f"Monthly cost = requested cores with replicas × {numbers.unsigned_money(prices.core_month, c)} per "
        f"core-month + requested GiB with replicas × {numbers.unsigned_money(prices.gib_month, c)} per GiB-month"
    )
    priced_units = {n: u for n, u in replay.extended.items() if prices.extended.get(n)}
    for name, units in priced_units.items():
        price = numbers.unsigned_money(prices.extended[name], c)
        head += f" + {units:g} {name} per pod × replicas × {price} per unit-month"
    if brief:
        return head + "."
    hours = window_hours(cur)
    return (
        f"{head}; each mean is the replay's core-hours (GiB-hours) / {hours:,.0f} h: current "
        f"{cur.core_hours:,.1f} core-hours and {cur.gib_hours:,.1f} GiB-hours, proposed "
        f"{new.core_hours:,.1f} core-hours and {new.gib_hours:,.1f} GiB-hours."
    )


def cost_line(replay: ReplayComparison, prices: Prices) -> str:
    """``monthly cost with replicas $126.06 → $184.10 (+$58.04)``; without prices, the mean
    requests with replicas (``CPU 4.757 cores → 7.013 cores, memory …``)."""
    before = monthly_cost(replay.current, prices, replay.extended)
    after = monthly_cost(replay.proposed, prices, replay.extended)
    if before is not None and after is not None:
        c = prices.currency
        return (
            f"monthly cost with replicas {numbers.unsigned_money(before, c)} → {numbers.unsigned_money(after, c)} "
            f"({numbers.money(after - before, c)})"
        )
    cur, new = replay.current, replay.proposed
    return (
        f"requests with replicas CPU {numbers.core_amount(mean_cores(cur))} → {numbers.core_amount(mean_cores(new))}, "
        f"memory {numbers.gib(mean_gib(cur))} → {numbers.gib(mean_gib(new))} (means)"
    )


def cost_change(replay: ReplayComparison, prices: Prices) -> str | None:
    """``+$12.30/month``: the proposal's monthly cost change; None without prices."""
    before = monthly_cost(replay.current, prices, replay.extended)
    after = monthly_cost(replay.proposed, prices, replay.extended)
    if before is None or after is None:
        return None
    return f"{numbers.money(after - before, prices.currency)}/month"


def risk_figures(replay: ReplayComparison) -> str:
    """``OOM kills 2 → 0, CPU over request 0 % → 0.2 %, shortfall 2 → 2 min``: what the replay
    says about risk, current → proposed (only the figures the workload has)."""
    cur, new = replay.current, replay.proposed
    parts = []
    if _has_limit(cur) or _has_limit(new):
        parts.append(f"OOM kills {cur.oom_kills} → {new.oom_kills}")
    evictions = (_eviction_minutes(cur), _eviction_minutes(new))
    if evictions != (None, None):
        parts.append(
            f"above memory request (no limit) {evictions[0] or 0:,.0f} → {evictions[1] or 0:,.0f} min"
        )
    parts.append(
        "CPU over request "
        f"{numbers.share(cur.over_request_minutes, cur.container_minutes)} → "
        f"{numbers.share(new.over_request_minutes, new.container_minutes)}"
    )
    short = (cur.replicas.shortfall_minutes, new.replicas.shortfall_minutes)
    if short != (None, None):
        parts.append(f"shortfall {short[0] or 0:,.0f} → {short[1] or 0:,.0f} min")
    return ", ".join(parts)


def summary(replay: ReplayComparison | None, prices: Prices) -> str:
    """One line: the cost change (when priced) and the risk figures; says when there is no
    replay."""
    if replay is None:
        return "no replay (nothing to replay): cost and risk not estimated"
    cost = cost_change(replay, prices)
    risk = risk_figures(replay)
    return f"cost {cost}, {risk}" if cost else risk


def _title(heading: str, rest: str) -> str:
    """``### frontend: the last 8 days …`` or, with a bare ``###``, ``### The last 8 days …``."""
    if heading.rstrip("#") == "":
        return f"{heading} {rest[0].upper()}{rest[1:]}"
    return f"{heading}: {rest}"


def markdown(
    rec: Recommendation, prices: Prices, *, heading: str, column: str, brief: bool = False
) -> str:
    """One workload's replay section in Markdown: ``heading`` (already Markdown: ``###`` and a
    name, or ``###`` alone), the table with ``column`` heading its first column (escaped here),
    the cost formula (``brief``: without the replayed hours) and what the gate did; without a
    replay, a sentence saying so."""
    replay = rec.replay
    if replay is None:
        return (
            f"{_title(heading, 'no replay')}\n\nNothing to replay for this workload: cost and "
            "risk are not estimated.\n"
        )
    lines = [
        _title(heading, f"the last {window_days(replay.current.window_s)} under this proposal"),
        "",
        f"| {escape(column)} | current | proposed |",
        "|---|---|---|",
    ]
    lines += [
        f"| {escape(r.label)} | {escape(r.current)} | {escape(r.proposed)} |"
        for r in rows(replay, prices, kind=rec.ref.kind)
    ]
    formula = cost_formula(replay, prices, brief=brief)
    if formula:
        lines += ["", escape(formula)]
    gate = gate_lines(rec)
    if gate:
        lines.append("")
        lines += [f"- {escape(line)}" for line in gate]
    return "\n".join(lines) + "\n"


def text(rec: Recommendation, prices: Prices, *, indent: str = "  ") -> list[str]:
    """One workload's replay as plain lines (terminal): the table as ``label  current →
    proposed``, the cost formula and what the gate did; empty without a replay."""
    replay = rec.replay
    if replay is None:
        return []
    table = rows(replay, prices, kind=rec.ref.kind)
    width = max(len(r.label) for r in table)
    lines = [f"replay of the last {window_days(replay.current.window_s)}, current → proposed"]
    lines += [f"{indent}{r.label:<{width}}  {r.current} → {r.proposed}" for r in table]
    formula = cost_formula(replay, prices)
    if formula:
        lines.append(f"{indent}{formula}")
    lines += [f"{indent}{line}" for line in gate_lines(rec)]
    return lines


# --------------------------------------------------------------------------- several workloads


def cost_totals(recs: Sequence[Recommendation], prices: Prices) -> CostTotals:
    """Sum of the replays of ``recs`` (monthly cost, mean cores and GiB with replicas); the
    recommendations without a replay are named in ``unreplayed``."""
    cost = [0.0, 0.0]
    cores = [0.0, 0.0]
    gibs = [0.0, 0.0]
    replayed = 0
    missing: list[str] = []
    for rec in recs:
        if rec.replay is None:
            missing.append(f"{rec.ref.kind}/{rec.ref.namespace}/{rec.ref.name}")
            continue
        replayed += 1
        for i, figures in enumerate((rec.replay.current, rec.replay.proposed)):
            cost[i] += monthly_cost(figures, prices, rec.replay.extended) or 0.0
            cores[i] += mean_cores(figures)
            gibs[i] += mean_gib(figures)
    return CostTotals(
        prices.currency,
        priced(prices),
        cost[0],
        cost[1],
        cores[0],
        cores[1],
        gibs[0],
        gibs[1],
        replayed,
        tuple(missing),
    )


def finite(values: Iterable[float]) -> list[float | None]:
    """``values`` with NaN as None (JSON has no NaN)."""
    return [None if math.isnan(v) else v for v in values]
