"""What one pull request proposes, and the state the bot keeps in the pull-request body.

The pipeline builds a ``Proposal`` per change set; ``render_pull_request`` turns it into a
title and body; the forge compares the ``PullRequestState`` embedded in an existing body with
``state_of(new proposal)`` to decide what to do (see ``bot/forge/lifecycle.py``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

from bot.model import (
    ChangeSet,
    EmergencyPhase,
    FieldId,
    FileChange,
    Note,
    Prediction,
    Recommendation,
    Resource,
    WorkloadRef,
    emergency_phase,
)
from bot.nesting import check_json
from bot.report.prediction import prediction_from_json, prediction_json, prediction_of

STATE_VERSION = 2
"""Version of the JSON kept in pull-request bodies. 2 added ``previous`` and ``predicted``;
a version-1 body still reads (neither is known there)."""

STATE_MARKER = "tortoise-bot-state"
"""Name of the HTML comment that holds the state JSON: ``<!-- tortoise-bot-state: {...} -->``."""

MAX_STATE_CHANGES_CHARS = 20_000
"""Above this size the state keeps only digests, not every proposed and previous value; the
predictions are dropped first when only they make it too large."""

_STATE_RE = re.compile(r"<!-- " + STATE_MARKER + r": (\{.*?\}) -->", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Prices:
    """Prices for the cost estimate: per core-month and per GiB-month, in ``currency``."""

    core_month: float = 0.0
    gib_month: float = 0.0
    currency: str = "$"
    extended: Mapping[str, float] = field(default_factory=dict)
    """Per extended resource name (``nvidia.com/gpu``), the price of one unit for a month."""


@dataclass(frozen=True, slots=True)
class WeekUsage:
    """One container resource's usage by hour of the week, for the chart of a workload whose
    change is about its requests: 168 values (Sunday 00:00 first, on the wall clock of
    ``time_zone``; NaN for an hour without a sample) in cores or bytes; ``percentile`` 100 is
    the peak."""

    container: str
    resource: Resource
    values: tuple[float, ...]
    percentile: float
    time_zone: str = "UTC"


@dataclass(frozen=True, slots=True)
class HistorySummary:
    """What the reports keep of one workload's history once its recommendation is made (the
    samples themselves are dropped then): the data window ``(start_s, end_s)`` in unix seconds,
    the data-quality notes, the OOM kills recorded per container (containers without one left
    out) and, per ``(container, resource)`` a pull request's chart may show
    (``bot.report.build.chart_candidates``), that usage by hour of the week."""

    start_s: float
    end_s: float
    quality: tuple[Note, ...] = ()
    oom_kills: Mapping[str, int] = field(default_factory=dict)
    week_usage: Mapping[tuple[str, Resource], WeekUsage] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Proposal:
    """One pull request's worth of changes, computed against the current base branch.

    ``key`` names the branch (see ``bot.forge.branches``); ``files`` holds the new bytes of
    every changed file; ``week_usage`` maps a workload key to the usage its chart shows (see
    ``WeekUsage``; absent when the chart shows replicas, or without history); ``oom_kills``
    maps a workload key to the OOM kills recorded per container in the window;
    ``window_s`` is the data window ``(start, end)`` in unix seconds; ``time_zone`` the
    clock of the replica time slots and the charts by hour of the week
    (``recommend.admin.time_zone``), ``display_zone`` the clock every other time in the body
    is shown on (``report.time_zone``); ``emergency_phases``
    maps a workload key to the emergency phase this proposal leaves it in (``normal``,
    ``emergency`` or ``back-to-normal``), kept in the state so the next run knows it.
    """

    key: str
    title: str
    change_set: ChangeSet
    files: tuple[FileChange, ...]
    diff: str = ""
    notes: tuple[Note, ...] = ()
    week_usage: Mapping[str, WeekUsage] = field(default_factory=dict)
    oom_kills: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    window_s: tuple[float, float] | None = None
    time_zone: str = "UTC"
    display_zone: str = "UTC"
    emergency_phases: Mapping[str, EmergencyPhase] = field(default_factory=dict)
    reverts: int | None = None
    """The merged pull request whose regressed values this proposal restores (a revert)."""
    labels: tuple[str, ...] = ()
    """Labels this pull request carries beyond ``pull_requests.labels`` (a revert's
    ``verify.revert_label``)."""

    marks: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Per workload key, the mark of each container that has one (``sidecar (init)``,
    ``init``: ``DeclaredContainer.mark``), shown beside its name."""

    def mark(self, ref: WorkloadRef, container: str | None) -> str:
        """The mark of ``container`` of ``ref``, empty when it has none."""
        return self.marks.get(ref.key, {}).get(container or "", "")

    @property
    def workloads(self) -> tuple[WorkloadRef, ...]:
        refs = {c.ref for c in self.change_set.changes} | {
            r.ref for r in self.change_set.recommendations
        }
        return tuple(sorted(refs))


DashboardStatus: TypeAlias = Literal[
    "proposal-open",
    "pending",
    "suppressed",
    "up-to-date",
    "gathering-data",
    "skipped",
    "error",
    "human-edited",
]
"""What the dashboard says about one workload."""


@dataclass(frozen=True, slots=True)
class DashboardRow:
    """One dashboard line: a workload, its status, a message, and where to look.

    ``key`` is the branch key of its change set; ``checkbox`` asks for a pull request on the
    next run (pending or suppressed items); ``url`` links the pull request when there is one;
    ``proposal`` is the recommendation behind a proposed change (its replay's cost and risk
    figures and the values the gate held back are shown).
    """

    ref: WorkloadRef
    status: DashboardStatus
    message: str = ""
    key: str | None = None
    url: str | None = None
    number: int | None = None
    checkbox: bool = False
    proposal: Recommendation | None = None


@dataclass(frozen=True, slots=True)
class PullRequestState:
    """The state JSON in a pull-request body.

    ``proposal`` digests what is proposed (workload, container, field, value) and not the
    current values, so a moved base with the same proposal keeps it; ``files`` digests the
    edited files (old and new bytes), so it changes when the base moved under them;
    ``changes`` maps ``<workload key>/<container or ->/<field>`` to the proposed value (empty
    when too large); ``human_noted`` is set once the bot has commented on human commits;
    ``head`` is the SHA of the commit the bot pushed (a branch still there has no human commit);
    ``phases`` maps a workload key to the emergency phase the proposal leaves it in (absent in
    bodies written before it existed: nothing known). Neither ``head`` nor ``phases`` enters
    the ``proposal`` digest. ``previous`` maps the same change ids to the value each field had
    before (None: absent), what a revert restores; ``predicted`` maps a workload key to what the
    proposal predicted for it (``bot.model.Prediction``); both are empty in version-1 bodies and
    in states too large to keep them, and neither enters the ``proposal`` digest. ``reverts``
    is the number of the merged pull request a revert restores the values before (None
    otherwise): the regression, recorded where the next run reads it.
    """

    key: str
    proposal: str
    files: str
    changes: Mapping[str, float | int | None] = field(default_factory=dict)
    human_noted: bool = False
    version: int = STATE_VERSION
    head: str | None = None
    phases: Mapping[str, EmergencyPhase] = field(default_factory=dict)
    previous: Mapping[str, float | int | None] = field(default_factory=dict)
    predicted: Mapping[str, Prediction] = field(default_factory=dict)
    reverts: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **self._version_2_json(),
            "v": self.version,
            "key": self.key,
            "proposal": self.proposal,
            "files": self.files,
            "changes": dict(self.changes),
            "human_noted": self.human_noted,
            "head": self.head,
            "phases": dict(self.phases),
        }

    def _version_2_json(self) -> dict[str, Any]:
        """``previous`` and ``predicted``, left out when empty (a version-1 body stays as it
        was read)."""
        out: dict[str, Any] = {}
        if self.previous:
            out["previous"] = dict(self.previous)
        if self.predicted:
            out["predicted"] = {k: prediction_json(v) for k, v in self.predicted.items()}
        if self.reverts is not None:
            out["reverts"] = self.reverts
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PullRequestState:
        return cls(
            key=str(data["key"]),
            proposal=str(data["proposal"]),
            files=str(data["files"]),
            changes=dict(data.get("changes") or {}),
            human_noted=bool(data.get("human_noted", False)),
            version=int(data.get("v", 0)),
            head=str(data["head"]) if data.get("head") else None,
            phases={str(k): emergency_phase(v) for k, v in (data.get("phases") or {}).items()},
            previous=dict(data.get("previous") or {}),
            predicted=_predictions(data.get("predicted")),
            reverts=data["reverts"] if isinstance(data.get("reverts"), int) else None,
        )

    def with_human_noted(self) -> PullRequestState:
        return replace(self, human_noted=True)

    def with_head(self, sha: str) -> PullRequestState:
        return replace(self, head=sha)


def _predictions(data: object) -> dict[str, Prediction]:
    """The readable predictions of a state's ``predicted`` (malformed entries dropped)."""
    if not isinstance(data, Mapping):
        return {}
    read = {str(k): prediction_from_json(v) for k, v in data.items()}
    return {k: v for k, v in read.items() if v is not None}


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def change_id(ref: WorkloadRef, container: str | None, field_id: FieldId) -> str:
    """``<workload key>/<container or ->/<field>``: how the state names a change (container
    None: the pod-level target)."""
    return f"{ref.key}/{container or '-'}/{field_id.text}"


def state_of(proposal: Proposal) -> PullRequestState:
    """The state a pull request carrying ``proposal`` should have."""
    changes = {
        change_id(c.ref, c.container, c.field): c.proposed for c in proposal.change_set.changes
    }
    digest = _digest([f"{k}={v!r}" for k, v in sorted(changes.items())])
    files = _digest(
        [
            f"{f.path}:{hashlib.sha256(f.old).hexdigest()}:{hashlib.sha256(f.new).hexdigest()}"
            for f in sorted(proposal.files, key=lambda f: f.path)
        ]
    )
    previous = {
        change_id(c.ref, c.container, c.field): c.current for c in proposal.change_set.changes
    }
    predicted = {
        rec.ref.key: found
        for rec in proposal.change_set.recommendations
        if (found := prediction_of(rec)) is not None
    }
    values_size = len(json.dumps(changes)) + len(json.dumps(previous))
    if values_size > MAX_STATE_CHANGES_CHARS:
        changes, previous = {}, {}
    predicted_json = {k: prediction_json(v) for k, v in predicted.items()}
    if values_size + len(json.dumps(predicted_json)) > MAX_STATE_CHANGES_CHARS:
        predicted = {}
    return PullRequestState(
        key=proposal.key,
        proposal=digest,
        files=files,
        changes=changes,
        phases=dict(proposal.emergency_phases),
        previous=previous,
        predicted=predicted,
        reverts=proposal.reverts,
    )


def embed_state(state: PullRequestState) -> str:
    """The HTML comment carrying ``state`` (``--`` and ``>`` cannot occur in it)."""
    text = json.dumps(state.to_json(), sort_keys=True, separators=(",", ":"))
    text = text.replace("--", "-\\u002d").replace(">", "\\u003e").replace("<", "\\u003c")
    return f"<!-- {STATE_MARKER}: {text} -->"


def parse_state(body: str | None) -> PullRequestState | None:
    """The state embedded in a pull-request body; None when absent or unreadable."""
    if not body:
        return None
    match = _STATE_RE.search(body)
    if match is None:
        return None
    try:
        check_json(match.group(1))  # the body is anyone's to edit
        return PullRequestState.from_json(json.loads(match.group(1)))
    except (ValueError, KeyError, TypeError):
        return None


def replace_state(body: str, state: PullRequestState) -> str:
    """``body`` with its state comment replaced by ``state`` (appended when absent)."""
    comment = embed_state(state)
    if _STATE_RE.search(body):
        return _STATE_RE.sub(lambda _: comment, body, count=1)
    return body.rstrip("\n") + "\n\n" + comment + "\n"
