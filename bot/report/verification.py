"""The verification of a merged pull request as people read it: one comment on the pull request
(found again by its marker and edited, never duplicated), one line per workload on the
dashboard and in the run's summary (``docs/pull-requests.md``, "Verification").

The comment ends with the verdicts as JSON (``<!-- tortoise-bot-verification: {...} -->``,
workload key -> status) so the next run reads what was said without a database. Its text is
deterministic (no "now", no "N days ago"), so an unchanged verdict is not rewritten.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from bot.model import FieldId, Number, Prediction
from bot.nesting import check_json
from bot.report import numbers
from bot.report.markdown import escape
from bot.verification import Verdict, WindowFigures

VERIFICATION_MARKER = "tortoise-bot-verification"
"""Name of the HTML comment that marks the bot's verification comment and holds its verdicts."""

_STATE_RE = re.compile(r"<!-- " + VERIFICATION_MARKER + r": (\{.*?\}) -->", re.DOTALL)

HEADLINES = {
    "waiting": "waiting",
    "never-live": "never live",
    "verified": "verified",
    "regressed": "regressed",
    "load-left-range": "load left the range",
}
"""How each verdict reads in a heading."""

_WORST_FIRST = ("regressed", "load-left-range", "never-live", "waiting", "verified")


@dataclass(frozen=True, slots=True)
class PullVerification:
    """The verdicts on one merged bot pull request: per workload key its ``Verdict`` and the
    prediction its state recorded (absent in bodies written before predictions were kept)."""

    number: int
    url: str
    key: str
    merged_s: float
    verdicts: Mapping[str, Verdict]
    predictions: Mapping[str, Prediction]
    restore: Mapping[str, tuple[Number | None, Number | None]] = field(default_factory=dict)
    """Change id -> (merged, previous) value of each field a regression names that this pull
    request changed: what a revert restores (empty with ``verify.revert: off``)."""

    @property
    def status(self) -> str:
        """The worst verdict of its workloads."""
        said = {v.status for v in self.verdicts.values()}
        return next((s for s in _WORST_FIRST if s in said), "waiting")


def _when(unix_s: float) -> str:
    return f"{datetime.fromtimestamp(unix_s, UTC):%Y-%m-%d %H:%M} UTC"


FigureUnit = Literal["share", "count", "min/day", "replicas"]
"""How a verification figure counts: a share of minutes (0..1), a count, minutes a day, or a
mean number of replicas."""


@dataclass(frozen=True, slots=True)
class FigureRow:
    """One figure of a workload's verification: what the pull request predicted (None: not
    recorded; ``predicts`` False: a figure nothing predicts), the same hours before the merge
    and after it, in ``unit``."""

    figure: str
    unit: FigureUnit
    predicted: float | None
    before: float | None
    after: float | None
    predicts: bool = True

    def _text(self, value: float | None) -> str:
        if value is None:
            return "–"
        if self.unit == "share":
            return f"{value * 100:.1f} %"
        if self.unit == "count":
            return str(int(value))
        return f"{value:.0f}" if self.unit == "min/day" else f"{value:.1f}"

    def texts(self) -> tuple[str, str, str, str]:
        """``(figure, predicted, before the merge, after)`` as the comment shows them."""
        predicted = self._text(self.predicted) if self.predicts else ""
        return (self.figure, predicted, self._text(self.before), self._text(self.after))

    def to_json(self) -> dict[str, object]:
        """The row for JSON output: the numbers, not their text."""
        return {
            "figure": self.figure,
            "unit": self.unit,
            "predicted": self.predicted,
            "before": self.before,
            "after": self.after,
        }


def figure_rows(
    prediction: Prediction | None, before: WindowFigures, after: WindowFigures
) -> list[FigureRow]:
    """The figures of one workload's verification (``FigureRow``), in the comment's order."""
    out = []
    for name in sorted(set(before.cpu_share) | set(after.cpu_share)):
        predicted = prediction.cpu_share.get(name) if prediction else None
        out.append(
            FigureRow(
                f"{name}: CPU minutes over request",
                "share",
                predicted,
                before.cpu_share.get(name),
                after.cpu_share.get(name),
            )
        )
    for name in sorted(set(before.throttle_share) | set(after.throttle_share)):
        predicted = prediction.throttle_share.get(name) if prediction else None
        out.append(
            FigureRow(
                f"{name}: CPU throttled",
                "share",
                predicted,
                before.throttle_share.get(name),
                after.throttle_share.get(name),
            )
        )
    out.append(
        FigureRow(
            "OOM kills",
            "count",
            prediction.oom_kills if prediction else None,
            before.total_oom_kills,
            after.total_oom_kills,
        )
    )
    for name in sorted(set(before.restarts) | set(after.restarts)):
        out.append(
            FigureRow(
                f"{name}: restarts",
                "count",
                None,
                before.restarts.get(name, 0),
                after.restarts.get(name, 0),
                predicts=False,
            )
        )
    short_before, short_after = before.shortfall_per_day(), after.shortfall_per_day()
    if short_after is not None:
        predicted_short = (
            prediction.shortfall_minutes / prediction.window_days
            if prediction and prediction.shortfall_minutes is not None and prediction.window_days
            else None
        )
        out.append(
            FigureRow(
                "capacity shortfall at maxReplicas (min/day)",
                "min/day",
                predicted_short,
                short_before,
                short_after,
            )
        )
    if after.replicas_mean is not None:
        out.append(
            FigureRow(
                "mean replicas",
                "replicas",
                None,
                before.replicas_mean,
                after.replicas_mean,
                predicts=False,
            )
        )
    return out


def comment_text(pull: PullVerification, *, revert: str = "") -> str:
    """The verification comment of ``pull`` (marker and verdict JSON included); ``revert``
    says what was done about a regression (a revert opened, or only proposed), as Markdown
    whose names are already escaped."""
    lines = [f"### tortoise-bot verification: {HEADLINES.get(pull.status, pull.status)}", ""]
    lines.append(
        f"Merged {_when(pull.merged_s)}. Each workload is watched from the moment its new "
        "values run in the cluster, against what this pull request predicted and the same "
        "hours of the week before the merge."
    )
    for key, verdict in sorted(pull.verdicts.items()):
        lines += ["", f"**{escape(key)}**: {HEADLINES[verdict.status]}: {escape(verdict.reason)}"]
        if verdict.live_s is not None:
            lines[-1] += f" (live since {_when(verdict.live_s)})"
        if verdict.before is None or verdict.after is None:
            continue
        rows = figure_rows(pull.predictions.get(key), verdict.before, verdict.after)
        lines += ["", "| figure | predicted | before the merge | after |", "|---|---|---|---|"]
        lines += [f"| {escape(a)} | {b} | {c} | {d} |" for a, b, c, d in map(FigureRow.texts, rows)]
    if pull.restore:
        lines += ["", "Previous values of the regressed fields (what a revert restores):", ""]
        for change, (merged, previous) in sorted(pull.restore.items()):
            workload, container, name = change.rsplit("/", 2)
            field_id = FieldId.parse(name)
            shown = (
                (numbers.field_value(field_id, merged), numbers.field_value(field_id, previous))
                if field_id is not None
                else (str(merged), str(previous))
            )
            where = escape(workload if container == "-" else f"{workload} {container}")
            lines.append(f"- {where} `{name}`: {shown[0]} → {shown[1]}")
    if revert:
        lines += ["", revert]
    state = {k: v.status for k, v in sorted(pull.verdicts.items())}
    text = json.dumps(state, sort_keys=True, separators=(",", ":"))
    text = text.replace("--", "-\\u002d").replace(">", "\\u003e").replace("<", "\\u003c")
    lines += ["", f"<!-- {VERIFICATION_MARKER}: {text} -->", ""]
    return "\n".join(lines)


def said_verdicts(body: str | None) -> dict[str, str]:
    """The verdicts (workload key -> status) a verification comment recorded; empty when
    ``body`` is not one or unreadable."""
    match = _STATE_RE.search(body or "")
    if match is None:
        return {}
    try:
        check_json(match.group(1))
        data = json.loads(match.group(1))
    except (ValueError, TypeError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}


def is_verification(body: str | None) -> bool:
    """Whether ``body`` is the bot's verification comment."""
    return _STATE_RE.search(body or "") is not None


def dashboard_lines(pulls: list[PullVerification]) -> list[str]:
    """One Markdown line per verified workload, regressions first: ``#12 prod/shop/…:
    regressed: …``."""
    items = [
        (_WORST_FIRST.index(v.status), pull.number, key, pull, v)
        for pull in pulls
        for key, v in pull.verdicts.items()
    ]
    return [
        f"[#{pull.number}]({pull.url}) **{escape(key)}**: {HEADLINES[v.status]}: {escape(v.reason)}"
        for _, _, key, pull, v in sorted(items, key=lambda i: i[:3])
    ]


def summary(pulls: list[PullVerification]) -> str:
    """``verified 2, waiting 1, regressed 1`` over every workload of ``pulls`` ('' without)."""
    counts: dict[str, int] = {}
    for pull in pulls:
        for verdict in pull.verdicts.values():
            counts[verdict.status] = counts.get(verdict.status, 0) + 1
    return ", ".join(f"{HEADLINES[s]} {counts[s]}" for s in _WORST_FIRST if s in counts)


__all__ = [
    "VERIFICATION_MARKER",
    "FigureRow",
    "PullVerification",
    "comment_text",
    "dashboard_lines",
    "figure_rows",
    "is_verification",
    "said_verdicts",
    "summary",
]
