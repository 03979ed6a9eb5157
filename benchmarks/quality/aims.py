"""The aims the recommendations are held to, checked for the two tortoise-bot candidates.

Over the services of one set (the test set is the one that counts: it is never tuned on), every
split weekday and seed of the run:

- CPU over request ≤ 2 % of the container-minutes, pooled, on the worst split weekday;
- no service above 5 % on its worst split weekday;
- requested core-hours ≤ 1.10× the budget-matched oracle's (the risk-matched ratio shown);
- no OOM kill on a service that does not leak; on a leaking service no more than VPA's defaults;
- memory above its request in at most 5 % of each service's container-minutes;
- no HPA target moved by more than ``recommend.replicas.target_step_points`` in one pull request
  (10 when the setting is absent);
- the backtest's over-request share against the proposal's on the scored days, per service
  (each the mean over the service's runs) and, stricter, per service and run: within a factor
  of 2 or within 0.5 points (skipped when recommendations have no ``backtest``);
- converged within 3 merged pull requests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from benchmarks.quality.options import CANDIDATES, TORTOISE
from benchmarks.quality.report import Proposals, figures, pct
from benchmarks.quality.run import Pair
from benchmarks.quality.scores import AIM_ROUNDS, Results, pool
from benchmarks.quality.sets import WEEKDAYS
from bot.config.recommend import RecommendSettings
from bot.model import FieldId

OVER_REQUEST_AIM = 0.02
SERVICE_OVER_REQUEST_AIM = 0.05
BUDGET_RATIO_AIM = 1.10
MEMORY_OVER_REQUEST_AIM = 0.05
DEFAULT_TARGET_STEP_POINTS = 10
BACKTEST_FACTOR, BACKTEST_POINTS = 2.0, 0.005


@dataclass(frozen=True)
class Aim:
    """One aim: what it asks, and per tortoise-bot candidate the figure and whether it holds."""

    text: str
    results: Mapping[str, tuple[str, bool]]


def target_step(settings: RecommendSettings) -> int:
    """Percentage points an HPA target may move in one pull request."""
    return int(getattr(settings.replicas, "target_step_points", DEFAULT_TARGET_STEP_POINTS))


def _pair_holds(pair: Pair) -> bool:
    low, high = sorted((pair.backtest, pair.truth))
    close = high - low <= BACKTEST_POINTS
    return close or (low > 0 and high / low <= BACKTEST_FACTOR)


def _service_means(pairs: Sequence[Pair]) -> list[Pair]:
    """Per service of ``pairs`` (in their order), one pair: the mean backtest share and the
    mean truth over its runs (key ``(0, 0)``)."""
    by: dict[str, list[Pair]] = {}
    for pair in pairs:
        by.setdefault(pair.service, []).append(pair)
    return [
        Pair(
            service,
            (0, 0),
            sum(p.backtest for p in runs) / len(runs),
            sum(p.truth for p in runs) / len(runs),
        )
        for service, runs in by.items()
    ]


def _big_steps(proposals: Proposals, services: Sequence[str], step: int, first: bool) -> list[str]:
    out = []
    for (seed, day), per in proposals.items():
        for service, rounds in per.items():
            if service not in services:
                continue
            for changes in rounds[:1] if first else rounds:
                for c in changes:
                    if c.field == FieldId.HPA_TARGET_CPU and None not in (c.current, c.proposed):
                        moved = abs(float(c.proposed) - float(c.current))  # type: ignore[arg-type]
                        if moved > step:
                            where = f"{service}/{c.container}" if c.container else service
                            out.append(f"{where} seed {seed} {WEEKDAYS[day]} {moved:g} pts")
    return out


def aims(
    results: Results,
    services: Sequence[str],
    leaking: Sequence[str],
    proposals: Proposals,
    pairs: Sequence[Pair],
    settings: RecommendSettings,
) -> list[Aim]:
    """The aims of the module doc over ``services``, checked."""
    found = figures(results, services)
    per_service = {svc: figures(results, [svc]) for svc in services}
    pooled = {svc: pool(results, CANDIDATES, [svc]) for svc in services}
    step, leaks = target_step(settings), [s for s in leaking if s in services]
    chosen = [p for p in pairs if p.service in services]
    out: dict[str, dict[str, tuple[str, bool]]] = {name: {} for name in TORTOISE}
    for name in TORTOISE:
        f = found[name]
        worst = float(f["worst_cpu_over_request"])  # type: ignore[arg-type]
        out[name]["over"] = (
            f"{pct(f['cpu_over_request'], 2)}, worst {f['worst_day']}",
            worst <= OVER_REQUEST_AIM,
        )
        hot = [
            f"{svc} {per[name]['worst_day']}"
            for svc, per in per_service.items()
            if float(per[name]["worst_cpu_over_request"]) > SERVICE_OVER_REQUEST_AIM  # type: ignore[arg-type]
        ]
        out[name]["service"] = (", ".join(hot) or "none", not hot)
        ratio = float(f["budget_ratio"] or 0.0)  # type: ignore[arg-type]
        risk = f["risk_ratio"]
        risk_text = "" if risk is None else f" (×risk {float(risk):.2f})"  # type: ignore[arg-type]
        out[name]["cost"] = (f"×{ratio:.2f}{risk_text}", ratio <= BUDGET_RATIO_AIM)
        ooming = [
            f"{svc} {pooled[svc][name].oom_kills}"
            for svc in services
            if svc not in leaks and pooled[svc][name].oom_kills
        ]
        out[name]["oom0"] = (", ".join(ooming) or "none", not ooming)
        worse = [
            f"{svc} {pooled[svc][name].oom_kills} > {pooled[svc]['VPA defaults'].oom_kills}"
            for svc in leaks
            if pooled[svc][name].oom_kills > pooled[svc]["VPA defaults"].oom_kills
        ]
        out[name]["leak"] = (", ".join(worse) or "none worse", not worse)
        above = [
            f"{svc} {pct(per[name]['memory_over_request'], 2)}"
            for svc, per in per_service.items()
            if float(per[name]["memory_over_request"]) > MEMORY_OVER_REQUEST_AIM  # type: ignore[arg-type]
        ]
        out[name]["memory"] = (", ".join(above) or "none", not above)
        big = _big_steps(proposals, services, step, first=name == TORTOISE[0])
        shown = f"{len(big)} changes, e.g. {', '.join(big[:2])}" if big else "none"
        out[name]["step"] = (shown, not big)
    means = _service_means(chosen)
    missed = [
        f"{p.service} {pct(p.backtest, 2)} against {pct(p.truth, 2)}"
        for p in means
        if not _pair_holds(p)
    ]
    out[TORTOISE[0]]["backtest_service"] = (
        f"{len(means) - len(missed)}/{len(means)}" + "".join(f", {m}" for m in missed)
        if means
        else "no backtest in the recommendations: skipped",
        not missed,
    )
    held = [p for p in chosen if _pair_holds(p)]
    out[TORTOISE[0]]["backtest"] = (
        f"{len(held)}/{len(chosen)}" if chosen else "no backtest in the recommendations: skipped",
        len(held) == len(chosen),
    )
    f = found[TORTOISE[1]]
    out[TORTOISE[1]]["rounds"] = (
        f"{f['rounds_within_aim']}/{f['decisions']}",
        f["rounds_within_aim"] == f["decisions"],
    )
    texts = {
        "over": "CPU minutes over request ≤ 2 % pooled, on every split weekday",
        "service": "no service over request > 5 % on any split weekday",
        "cost": f"requested core-hours ≤ {BUDGET_RATIO_AIM:.2f}× the budget-matched oracle's",
        "oom0": f"no OOM kill on services that do not leak (leaking: {', '.join(leaks) or 'none'})",
        "leak": "OOM kills on leaking services ≤ VPA defaults'",
        "memory": "memory above request ≤ 5 % of each service's container-minutes",
        "step": f"no HPA target moved > {step} points in one pull request",
        "backtest_service": "backtest vs scored over-request share within ×2 or 0.5 pts "
        "(services, each the mean of its runs)",
        "backtest": "backtest vs scored over-request share within ×2 or 0.5 pts (services × runs)",
        "rounds": f"converged within {AIM_ROUNDS} merged PRs (services × runs)",
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


def aims_json(found: Sequence[Aim]) -> list[dict[str, object]]:
    """``aim_lines`` as data."""
    return [
        {"aim": a.text, **{n: {"figure": f, "held": h} for n, (f, h) in a.results.items()}}
        for a in found
    ]
