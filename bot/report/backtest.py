"""The backtest as a reviewer reads it: what this method proposed one horizon ago and what
happened on the days since, beside the current values (``bot.model.Backtest``,
``docs/recommendations.md`` §9).

CPU over request is the share of a container's minutes on the scored days with one pod's CPU
above the request; "this proposal on the same days" is the same share for this proposal's own
values replayed there (its raise included; the current ones where it proposes none; with an
HPA, its targets and replica bounds): what the backtest predicts for the proposal; OOM kills are predicted episodes at the limit; capacity shortfall as in the
replay. The same lines in the pull request (Markdown) and in ``explain``/``plan`` (text).
"""

from __future__ import annotations

from datetime import datetime

from bot.clock import zone
from bot.model import Backtest, CpuReplay, Recommendation, ReplayFigures
from bot.report import numbers
from bot.report.markdown import escape
from bot.report.replay import window_days


def _when(unix_s: float, time_zone: str) -> str:
    """``2026-01-01 09:00 Asia/Tokyo``: on the display clock (``report.time_zone``), named."""
    clock = zone(time_zone)
    return f"{datetime.fromtimestamp(unix_s, clock):%Y-%m-%d %H:%M} {clock.key}"


def _share(cpu: CpuReplay | None) -> str:
    if cpu is None or not cpu.container_minutes:
        return "–"
    return f"{cpu.over_request_share * 100:.2f} %"


def _shortfall(figures: ReplayFigures) -> str:
    minutes = figures.replicas.shortfall_minutes
    return "–" if minutes is None else f"{minutes:.0f} min"


def heading(bt: Backtest, time_zone: str = "UTC") -> str:
    """``decided on the history up to …, replayed on the N days since``, or why there is none."""
    if bt.unavailable is not None or bt.proposed is None:
        return f"no backtest: {bt.unavailable or 'nothing to replay'}"
    return (
        f"decided by the same method on the history up to {_when(bt.trained_until_s, time_zone)}, "
        f"replayed on the {window_days(bt.proposed.window_s)} since"
    )


def rows(bt: Backtest) -> list[tuple[str, str, str]]:
    """``(label, that proposal, current values)`` per container's CPU request and its minutes
    over request, then OOM kills and capacity shortfall; empty without a backtest."""
    then, now = bt.proposed, bt.current
    if then is None or now is None:
        return []
    out = []
    for cpu in then.cpu:
        current = now.container_cpu(cpu.container)
        out.append(
            (
                f"{cpu.container}: CPU request",
                numbers.cores(cpu.request_cores),
                numbers.cores(current.request_cores if current else None),
            )
        )
        out.append((f"{cpu.container}: CPU minutes over request", _share(cpu), _share(current)))
        expected = dict(bt.expected).get(cpu.container)
        if expected is not None:
            out.append(
                (
                    f"{cpu.container}: this proposal on the same days",
                    f"{expected * 100:.2f} %",
                    "",
                )
            )
    out.append(("OOM kills", str(then.oom_kills), str(now.oom_kills)))
    if then.replicas.shortfall_minutes is not None:
        out.append(("capacity shortfall", _shortfall(then), _shortfall(now)))
    return out


def _worst(figures: ReplayFigures) -> str:
    """The largest share of a container's minutes over its CPU request, in percent."""
    return f"{max((c.over_request_share for c in figures.cpu), default=0.0) * 100:.1f} %"


def short(rec: Recommendation) -> str | None:
    """``backtest: CPU over request 1.2 % (current values 6.2 %)`` for the dashboard; None
    without a backtest with figures."""
    bt = rec.backtest
    if bt is None or bt.proposed is None or bt.current is None:
        return None
    return f"backtest: CPU over request {_worst(bt.proposed)} (current values {_worst(bt.current)})"


def brief(rec: Recommendation) -> str | None:
    """The backtest in a few words for the summary line: the largest CPU over request of that
    proposal and of the current values, OOM kills; None without one (why there is none is in
    the details)."""
    bt = rec.backtest
    if bt is None or bt.proposed is None or bt.current is None:
        return None
    then, now = bt.proposed, bt.current

    return (
        f"backtest (this method {window_days(then.window_s)} ago, on the days since): CPU over "
        f"request {_worst(then)} of the minutes (current values {_worst(now)}), "
        f"{then.oom_kills} OOM kills"
    )


def markdown(rec: Recommendation, time_zone: str = "UTC") -> str:
    """The backtest section of one workload's details; empty without a backtest."""
    bt = rec.backtest
    if bt is None:
        return ""
    said = heading(bt, time_zone)
    said = escape(said[0].upper() + said[1:])
    table = rows(bt)
    if not table:
        return f"{said}.\n"
    lines = [
        f"{said}: out-of-sample evidence beside the replay (fitted on the days it replays).",
        "",
        "| backtest | that proposal | current values |",
        "|---|---|---|",
    ]
    lines += [f"| {escape(a)} | {escape(b)} | {escape(c)} |" for a, b, c in table]
    return "\n".join(lines) + "\n"


def text(rec: Recommendation, *, indent: str = "  ", time_zone: str = "UTC") -> list[str]:
    """The backtest as plain lines (terminal): ``label  that proposal → current``."""
    bt = rec.backtest
    if bt is None:
        return []
    table = rows(bt)
    if not table:
        return [heading(bt, time_zone)]
    width = max(len(a) for a, _, _ in table)
    lines = [f"backtest, {heading(bt, time_zone)}: that proposal | current values"]
    lines += [f"{indent}{a:<{width}}  {b} | {c}" for a, b, c in table]
    return lines
