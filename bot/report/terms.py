"""The terms line of a pull-request body: each term its text uses, defined once, with a link to
``docs/pull-requests.md#terms``. A body is rendered with ``TERMS_SLOT`` where the line goes;
``with_terms`` fills it in from the text around it, so a body defines what it uses and nothing
else (a revert, which restores values, has no backtest and no step).
"""

from __future__ import annotations

import re

from bot.report.markdown import escape

TERMS_URL = "https://github.com/tortoise-bot/tortoise-bot/blob/main/docs/pull-requests.md#terms"
"""The section of ``docs/pull-requests.md`` that defines every term a body uses."""

TERMS = (
    (
        r"\breplay",
        "replay = the last days of recorded usage run again under the current and the proposed "
        "values (the HPA controller included)",
    ),
    (
        r"CPU minutes over request",
        "CPU minutes over request = container-minutes whose CPU usage was above its request",
    ),
    (
        r"predicted OOM kills",
        "predicted OOM kills = times the memory reached the limit in the replay",
    ),
    (
        r"capacity shortfall",
        "capacity shortfall = minutes at maxReplicas above the target, or with new pods still "
        "starting while the others run above their requests",
    ),
    (
        r"\bbacktest",
        "backtest = the same method decided on the older history, replayed on the days after",
    ),
    (r"\bP50 / P90 / P99\b", "P50/P90/P99 = percentiles of the samples"),
    (
        r"\bconfidence\b",
        "confidence = days of history the VPA target rests on (fewer samples count less); its "
        "bounds narrow as it grows",
    ),
    (
        r"\bstep \d+ of \d+",
        "step k of n = an HPA target moved toward the replay's target a bounded step per pull "
        "request; the next runs continue",
    ),
)
"""``(how a body shows the term, its definition)``: the terms line of a body's folded data
(``docs/pull-requests.md#terms``) defines those its text uses."""

TERMS_SLOT = "\x00terms\x00"
"""Where a rendered body's terms line goes, once the text around it tells which terms it uses."""


def terms(body: str) -> str:
    """The terms line of ``body``: each term its text uses (``TERMS``), defined once, and the
    section with more; '' when it uses none."""
    used = [definition for shown, definition in TERMS if re.search(shown, body)]
    if not used:
        return ""
    return f"Terms ([docs/pull-requests.md#terms]({TERMS_URL})): " + escape("; ".join(used)) + "."


def with_terms(body: str) -> str:
    """``body`` rendered with ``TERMS_SLOT`` as its terms line, the line filled in."""
    return body.replace(TERMS_SLOT, terms(body.replace(TERMS_SLOT, "")))
