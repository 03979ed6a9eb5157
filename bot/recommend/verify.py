"""The verdict on one merged proposal: what it predicted against what happened once its values
ran (``docs/pull-requests.md``, "Verification").

``verify(...)`` takes the prediction the pull request recorded (``bot.model.Prediction``), the
merge time, the moment the merged values were first seen running (None while not yet), the
figures of the window after that moment and of the same hours before it
(``bot.recommend.outcome.window_figures``), and the settings (``bot.config.verify``), and says:

- ``waiting``: the values are not running yet (an Argo CD / Flux sync can lag), or they are
  and the window is not over and nothing regressed so far;
- ``never-live``: merged ``waiting_days`` ago and still not running;
- ``regressed``: an OOM kill where none was predicted; CPU over request, or throttling, above
  the prediction by more than its margin; capacity shortfall per day above the prediction by
  more than its margin; restarts per day above those before the merge by more than their
  margin with no OOM kill to explain them; each with the load within the range seen before the merge;
- ``load-left-range``: a figure is worse than predicted, but the load peaked above the range
  before the merge by more than ``margins.load_fraction``: answered by a new proposal, not by
  a revert;
- ``verified``: the whole window ran and nothing regressed.

A regression names the fields a revert restores (``Finding.fields``): memory request and
limit for an OOM kill, the CPU request and CPU target for CPU over request, the CPU limit for
throttling, maxReplicas and the targets for shortfall, the container's CPU and memory
requests and limits for restarts. Pure: no I/O, no clock.
"""

from __future__ import annotations

from bot.config.verify import VerifyMargins, VerifySettings
from bot.model import POD_LEVEL, SECONDS_PER_DAY, FieldId, Prediction
from bot.verification import Finding, Verdict, VerdictStatus, WindowFigures


def windows(live_s: float, now_s: float, window_days: float) -> tuple[tuple[float, float], ...]:
    """``(before, after)``: the window after the values went live (cut at ``now_s``) and the
    same length before it, each ``(start_s, end_s)``."""
    length = window_days * SECONDS_PER_DAY
    return (live_s - length, live_s), (live_s, min(live_s + length, max(now_s, live_s)))


def _pct(share: float) -> str:
    return f"{share * 100:.1f} %"


def _load_left(before: WindowFigures, after: WindowFigures, margins: VerifyMargins) -> str | None:
    """Why the load after the merge is out of the range before it; None when within."""
    factor = 1.0 + margins.load_fraction
    if before.cpu_peak_cores > 0 and after.cpu_peak_cores > before.cpu_peak_cores * factor:
        return (
            f"the workload's CPU peaked at {after.cpu_peak_cores:.2f} cores, above "
            f"{before.cpu_peak_cores:.2f} before the merge"
        )
    for name, peak in after.memory_peak_bytes.items():
        was = before.memory_peak_bytes.get(name)
        if was and peak > was * factor:
            return (
                f"{name}'s working set peaked at {peak / 2**20:.0f} MiB, above "
                f"{was / 2**20:.0f} MiB before the merge"
            )
    return None


def _oom(
    prediction: Prediction | None, before: WindowFigures, after: WindowFigures
) -> list[Finding]:
    predicted = prediction.oom_kills if prediction is not None else before.total_oom_kills
    if predicted > 0:
        return []
    return [
        Finding(
            "oom",
            name,
            0.0,
            float(kills),
            float(before.oom_kills.get(name, 0)),
            0.0,
            ((name, FieldId.REQUESTS_MEMORY), (name, FieldId.LIMITS_MEMORY)),
            f"{name}: {kills} OOM kill(s) where the proposal predicted none",
        )
        for name, kills in sorted(after.oom_kills.items())
    ]


def _cpu(
    prediction: Prediction | None,
    before: WindowFigures,
    after: WindowFigures,
    margins: VerifyMargins,
) -> list[Finding]:
    out = []
    for name, share in sorted(after.cpu_share.items()):
        if prediction is not None and name in prediction.cpu_share:
            predicted = max(prediction.cpu_share[name], prediction.backtest_share.get(name, 0.0))
        elif name in before.cpu_share:
            predicted = before.cpu_share[name]
        else:
            continue
        allowed = predicted + margins.cpu_share
        if share > allowed:
            out.append(
                Finding(
                    "cpu",
                    name,
                    predicted,
                    share,
                    before.cpu_share.get(name),
                    allowed,
                    ((name, FieldId.REQUESTS_CPU), (name, FieldId.HPA_TARGET_CPU)),
                    f"{name}: CPU above request {_pct(share)} of the minutes, predicted "
                    f"{_pct(predicted)} (margin {_pct(margins.cpu_share)})",
                )
            )
    return out


def _throttle(
    prediction: Prediction | None,
    before: WindowFigures,
    after: WindowFigures,
    margins: VerifyMargins,
) -> list[Finding]:
    out = []
    for name, share in sorted(after.throttle_share.items()):
        if prediction is not None and name in prediction.throttle_share:
            predicted = prediction.throttle_share[name]
        else:
            predicted = before.throttle_share.get(name, 0.0)
        allowed = predicted + margins.throttle_share
        if share > allowed:
            out.append(
                Finding(
                    "throttle",
                    name,
                    predicted,
                    share,
                    before.throttle_share.get(name),
                    allowed,
                    ((name, FieldId.LIMITS_CPU),),
                    f"{name}: {_pct(share)} of CFS periods throttled, predicted "
                    f"{_pct(predicted)} over the limit (margin {_pct(margins.throttle_share)})",
                )
            )
    return out


def _shortfall(
    prediction: Prediction | None,
    before: WindowFigures,
    after: WindowFigures,
    margins: VerifyMargins,
) -> list[Finding]:
    observed = after.shortfall_per_day()
    if observed is None:
        return []
    if prediction is not None and prediction.shortfall_minutes is not None:
        predicted = prediction.shortfall_minutes / max(prediction.window_days, 1e-9)
    else:
        predicted = before.shortfall_per_day() or 0.0
    allowed = predicted + margins.shortfall_minutes_per_day
    if observed <= allowed:
        return []
    fields = (
        (None, FieldId.HPA_MAX_REPLICAS),
        (POD_LEVEL, FieldId.HPA_TARGET_CPU),
        (POD_LEVEL, FieldId.HPA_TARGET_MEMORY),
    )
    return [
        Finding(
            "shortfall",
            None,
            predicted,
            observed,
            before.shortfall_per_day(),
            allowed,
            fields,
            f"capacity shortfall at maxReplicas {observed:.0f} min/day, predicted "
            f"{predicted:.0f} (margin {margins.shortfall_minutes_per_day:.0f})",
        )
    ]


def _restarts(before: WindowFigures, after: WindowFigures, margins: VerifyMargins) -> list[Finding]:
    """Containers restarting more after the merge than before it by more than the margin,
    with no OOM kill after it to explain them (an OOM kill is its own finding)."""
    out = []
    for name in sorted(after.restarts):
        if after.oom_kills.get(name, 0):
            continue
        was, now = before.restarts_per_day(name), after.restarts_per_day(name)
        allowed = was + margins.restarts_per_day
        if now > allowed:
            out.append(
                Finding(
                    "restarts",
                    name,
                    was,
                    now,
                    was,
                    allowed,
                    (
                        (name, FieldId.REQUESTS_CPU),
                        (name, FieldId.LIMITS_CPU),
                        (name, FieldId.REQUESTS_MEMORY),
                        (name, FieldId.LIMITS_MEMORY),
                    ),
                    f"{name}: {now:.1f} restarts per day, {was:.1f} before the merge "
                    f"(margin {margins.restarts_per_day:g}) and no OOM kill to explain them",
                )
            )
    return out


def verify(
    prediction: Prediction | None,
    *,
    merged_s: float,
    live_s: float | None,
    now_s: float,
    before: WindowFigures | None,
    after: WindowFigures | None,
    settings: VerifySettings,
) -> Verdict:
    """The verdict on one workload of a merged proposal (see the module docstring). Without a
    prediction (a body written before predictions were kept) the figures before the merge
    stand in for it."""
    if live_s is None:
        waited = (now_s - merged_s) / SECONDS_PER_DAY
        if waited >= settings.waiting_days:
            return Verdict(
                "never-live",
                f"merged {waited:.1f} days ago and the new values are still not running",
            )
        return Verdict("waiting", "waiting for the new values to be live")
    if before is None or after is None:
        return Verdict("waiting", "no usage recorded since the values went live", live_s)
    margins = settings.margins
    findings = [
        *_oom(prediction, before, after),
        *_cpu(prediction, before, after, margins),
        *_throttle(prediction, before, after, margins),
        *_shortfall(prediction, before, after, margins),
        *_restarts(before, after, margins),
    ]
    days = after.days

    def said(status: VerdictStatus, reason: str) -> Verdict:
        return Verdict(status, reason, live_s, days, tuple(findings), before, after)

    if findings:
        left = _load_left(before, after, margins)
        if left is not None:
            return said(
                "load-left-range", f"{findings[0].message}, but the load left the range: {left}"
            )
        return said("regressed", "; ".join(f.message for f in findings))
    if days + 1e-9 < settings.window_days:
        return said(
            "waiting",
            f"live for {days:.1f} of {settings.window_days:g} days, nothing worse than predicted "
            "so far",
        )
    return said("verified", f"{settings.window_days:g} days live, nothing worse than predicted")


__all__ = ["verify", "windows"]
