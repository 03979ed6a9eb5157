"""The prediction a pull request records for each of its workloads, and its compact JSON.

``prediction_of(recommendation)`` reads the replay of the proposed values and the backtest
(``bot.model.Recommendation``) into a ``bot.model.Prediction``; ``prediction_json`` /
``prediction_from_json`` write and read it in the state JSON of the pull-request body
(``bot.report.proposal.PullRequestState.predicted``), with short keys and four significant
digits so a pull request of many workloads stays within ``MAX_STATE_CHANGES_CHARS``:

``{"w": 14, "cpu": {"app": 0.0123}, "thr": {"app": 0.0}, "oom": 0, "short": 12.5,
"bt": {"app": 0.02}}`` (``thr``, ``short`` and ``bt`` absent when there is nothing to say).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.model import SECONDS_PER_DAY, Prediction, Recommendation


def _round(value: float) -> float:
    """``value`` with four significant digits (the state is small, the figures approximate)."""
    return float(f"{value:.4g}")


def prediction_of(rec: Recommendation) -> Prediction | None:
    """What ``rec`` predicts for its proposed values; None without a replay (nothing to
    predict from)."""
    if rec.replay is None:
        return None
    figures = rec.replay.proposed
    throttle = {
        c.container: _round(c.over_limit_minutes / c.container_minutes)
        for c in figures.cpu
        if c.over_limit_minutes is not None and c.container_minutes
    }
    backtest = rec.backtest.expected if rec.backtest is not None else ()
    short = figures.replicas.shortfall_minutes
    return Prediction(
        window_days=_round(figures.window_s / SECONDS_PER_DAY),
        cpu_share={c.container: _round(c.over_request_share) for c in figures.cpu},
        throttle_share=throttle,
        oom_kills=figures.oom_kills,
        shortfall_minutes=None if short is None else _round(short),
        backtest_share={name: _round(share) for name, share in backtest},
    )


def prediction_json(prediction: Prediction) -> dict[str, Any]:
    """The compact JSON of ``prediction`` (see the module docstring)."""
    out: dict[str, Any] = {
        "w": prediction.window_days,
        "cpu": dict(prediction.cpu_share),
        "oom": prediction.oom_kills,
    }
    if prediction.throttle_share:
        out["thr"] = dict(prediction.throttle_share)
    if prediction.shortfall_minutes is not None:
        out["short"] = prediction.shortfall_minutes
    if prediction.backtest_share:
        out["bt"] = dict(prediction.backtest_share)
    return out


def _shares(data: object) -> dict[str, float]:
    if not isinstance(data, Mapping):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}


def prediction_from_json(data: object) -> Prediction | None:
    """The prediction written by ``prediction_json``; None when ``data`` is not one (the body
    is anyone's to edit: a malformed entry is dropped, not fatal)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("w"), int | float):
        return None
    short = data.get("short")
    oom = data.get("oom", 0)
    return Prediction(
        window_days=float(data["w"]),
        cpu_share=_shares(data.get("cpu")),
        throttle_share=_shares(data.get("thr")),
        oom_kills=int(oom) if isinstance(oom, int | float) else 0,
        shortfall_minutes=float(short) if isinstance(short, int | float) else None,
        backtest_share=_shares(data.get("bt")),
    )


__all__ = ["prediction_from_json", "prediction_json", "prediction_of"]
