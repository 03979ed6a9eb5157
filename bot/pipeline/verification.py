"""Verifying the merged bot pull requests of a repository (``docs/pull-requests.md``,
"Verification"): from the listing the run already made, the recent merges; from Prometheus, when
their values went live (``bot.metrics.live``) and the history around that moment (the same
batched fetch as a plan); the verdict of each workload (``bot.recommend.verify``, pure).

Only the latest merged pull request of a workload is verified (a later merge supersedes an
earlier one), and only while it is recent: merged within ``verify.waiting_days`` +
``verify.window_days``. The live moment and the throttling come through the history source
(``bot.metrics.cluster_state``): a source that cannot say what ran (a snapshot recorded without
those series) verifies nothing, and ``verification_unavailable`` says why.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.config.bot import BotSettings
from bot.forge.errors import ForgeError, RateLimitError
from bot.forge.previous import POD_LEVEL_IN_ID, PreviousProposal, split_change_id
from bot.forge.protocol import PullRequestPlatform
from bot.metrics.cluster_state import ClusterStateSource, cluster_state_missing
from bot.metrics.live import MergedValues
from bot.metrics.source import HistoryRequest, HistorySource
from bot.metrics.throttling import Periods
from bot.model import (
    POD_LEVEL,
    SECONDS_PER_DAY,
    DeclaredWorkload,
    FieldId,
    Inventory,
    Number,
    WorkloadRef,
)
from bot.recommend.outcome import Sizing, Throttling, common_hours, window_figures
from bot.recommend.verify import verify, windows
from bot.report.proposal import PullRequestState
from bot.report.verification import PullVerification, comment_text
from bot.verification import Finding, Verdict

log = logging.getLogger("bot.pipeline")

Values = Mapping[tuple[str | None, FieldId], Number | None]
"""``(container or None, field)`` -> value, of one workload in one pull-request state."""


@dataclass(frozen=True, slots=True)
class _Merge:
    """One workload of one merged pull request: what it set and what was there before."""

    pull: PreviousProposal
    workload: DeclaredWorkload
    values: Values
    previous: Values


def _values(
    changes: Mapping[str, Number | None], key: str
) -> dict[tuple[str | None, FieldId], Number | None]:
    out: dict[tuple[str | None, FieldId], Number | None] = {}
    for change, value in changes.items():
        parts = split_change_id(change)
        if parts is None or parts[0] != key:
            continue
        container = None if parts[1] == POD_LEVEL_IN_ID else parts[1]
        out[(container, parts[2])] = value
    return out


def recent_merges(
    pulls: Sequence[PreviousProposal], inventory: Inventory, *, now_s: float, horizon_s: float
) -> list[_Merge]:
    """Per declared workload, its latest merged bot pull request when merged within
    ``horizon_s`` of ``now_s`` and its state lists the values."""
    declared = {w.ref.key: w for w in inventory.workloads}
    latest: dict[str, PreviousProposal] = {}
    for pull in pulls:
        if not pull.merged or pull.merged_at_s is None or pull.state is None:
            continue
        for change in pull.state.changes:
            parts = split_change_id(change)
            if parts is None or parts[0] not in declared:
                continue
            seen = latest.get(parts[0])
            if seen is None or (seen.merged_at_s or 0.0, seen.number) < (
                pull.merged_at_s,
                pull.number,
            ):
                latest[parts[0]] = pull
    out = []
    for key, pull in sorted(latest.items()):
        assert pull.state is not None and pull.merged_at_s is not None
        if not 0.0 <= now_s - pull.merged_at_s <= horizon_s:
            continue
        out.append(
            _Merge(
                pull,
                declared[key],
                _values(pull.state.changes, key),
                _values(pull.state.previous, key),
            )
        )
    return out


def _sizing(workload: DeclaredWorkload, values: Values) -> Sizing:
    """The CPU requests, maxReplicas and CPU targets ``workload`` runs with once ``values``
    apply over what it declares."""
    requests = {c.name: c.requests.cpu_cores for c in workload.containers if c.requests.cpu_cores}
    hpa = workload.hpa
    max_replicas = hpa.max_replicas if hpa is not None else None
    targets = {
        t.container or POD_LEVEL: t.utilization_percent
        for t in (hpa.targets if hpa is not None else ())
        if t.resource == "cpu"
    }
    for (container, field_id), value in values.items():
        if field_id is FieldId.REQUESTS_CPU and container is not None:
            if value is None:
                requests.pop(container, None)
            else:
                requests[container] = float(value)
        elif field_id is FieldId.HPA_MAX_REPLICAS and value is not None:
            max_replicas = int(value)
        elif field_id is FieldId.HPA_TARGET_CPU and value is not None:
            targets[container or POD_LEVEL] = int(value)
    return Sizing(requests, max_replicas if hpa is not None else None, targets)


def verify_merged(
    pulls: Sequence[PreviousProposal],
    inventory: Inventory,
    source: HistorySource,
    requests: Sequence[HistoryRequest],
    settings: BotSettings,
    *,
    now_s: float,
) -> list[PullVerification]:
    """The verdicts on the recent merged bot pull requests of one repository (see the module
    docstring); ``requests`` are the plan's history requests (``history_requests``: each
    workload's containers and its environment's selector); empty when verification is off or
    the source cannot say what ran (``verification_unavailable``)."""
    config = settings.verify
    if not config.enabled:
        return []
    missing = cluster_state_missing(source)
    if missing is not None or not isinstance(source, ClusterStateSource):
        log.info("verification: %s", missing)
        return []
    horizon = (config.waiting_days + config.window_days) * SECONDS_PER_DAY
    merges = recent_merges(pulls, inventory, now_s=now_s, horizon_s=horizon)
    if not merges:
        return []
    selectors = {r.ref: r for r in requests}
    asked = [
        MergedValues(
            m.workload.ref,
            m.pull.merged_at_s or 0.0,
            m.values,
            hpa=m.workload.hpa.name if m.workload.hpa is not None else None,
            selector=selectors[m.workload.ref].selector if m.workload.ref in selectors else {},
        )
        for m in merges
    ]
    live = source.live_moments(asked, now_s=now_s).live_s
    verdicts = _verdicts(merges, live, (source, source), selectors, settings, now_s=now_s)
    by_pull: dict[int, list[_Merge]] = {}
    for merge in merges:
        by_pull.setdefault(merge.pull.number, []).append(merge)
    out = []
    for number, items in sorted(by_pull.items()):
        pull = items[0].pull
        assert pull.state is not None
        verdicts_of = {m.workload.ref.key: verdicts[m.workload.ref] for m in items}
        out.append(
            PullVerification(
                number,
                pull.url,
                pull.key,
                pull.merged_at_s or 0.0,
                verdicts_of,
                {
                    k: v
                    for k, v in pull.state.predicted.items()
                    if any(m.workload.ref.key == k for m in items)
                },
                restore_values(pull.state, verdicts_of) if config.revert != "off" else {},
            )
        )
    return out


def verification_unavailable(source: HistorySource, settings: BotSettings) -> str | None:
    """Why ``verify_merged`` verifies nothing with ``source`` and ``settings``; None when it
    verifies."""
    if not settings.verify.enabled:
        return "verify.enabled is false"
    return cluster_state_missing(source)


def _named(finding: Finding, container: str | None, field_id: FieldId) -> bool:
    """Whether ``finding`` names the field ``(container, field_id)`` of a change id (a
    pod-level target in a finding stands for the workload's every target of that field)."""
    return any(
        f is field_id and (c == container or (c == POD_LEVEL and field_id.is_hpa_target))
        for c, f in finding.fields
    )


def restore_values(
    state: PullRequestState, verdicts: Mapping[str, Verdict]
) -> dict[str, tuple[Number | None, Number | None]]:
    """Change id -> (merged, previous) value of each field that a regression of ``verdicts``
    names and the pull request of ``state`` changed (and recorded the previous value of):
    what a revert restores, regressed fields only."""
    out: dict[str, tuple[Number | None, Number | None]] = {}
    for change, merged in sorted(state.changes.items()):
        parts = split_change_id(change)
        if parts is None or change not in state.previous:
            continue
        verdict = verdicts.get(parts[0])
        if verdict is None or verdict.status != "regressed":
            continue
        container = None if parts[1] == POD_LEVEL_IN_ID else parts[1]
        if any(_named(f, container, parts[2]) for f in verdict.findings):
            out[change] = (merged, state.previous[change])
    return out


def _verdicts(
    merges: Sequence[_Merge],
    live: Mapping[WorkloadRef, float | None],
    sources: tuple[HistorySource, ClusterStateSource],
    selectors: Mapping[WorkloadRef, HistoryRequest],
    settings: BotSettings,
    *,
    now_s: float,
) -> dict[WorkloadRef, Verdict]:
    """The verdict of each merge's workload: one history fetch for every live one (``sources``:
    the history source, as what says what ran)."""
    history_source, state = sources
    config = settings.verify
    window_s = config.window_days * SECONDS_PER_DAY
    running = [m for m in merges if live.get(m.workload.ref) is not None]
    fetched = None
    periods: Mapping[WorkloadRef, Mapping[str, Periods]] = {}
    if running:
        starts = [(live[m.workload.ref] or 0.0) - window_s for m in running]
        ends = [min(now_s, (live[m.workload.ref] or 0.0) + window_s) for m in running]
        requests = [selectors[m.workload.ref] for m in running if m.workload.ref in selectors]
        fetched = history_source.fetch(requests, start_s=min(starts), end_s=max(ends))
        periods = state.throttling(requests, start_s=min(starts), end_s=max(ends))
    out: dict[WorkloadRef, Verdict] = {}
    for merge in merges:
        ref = merge.workload.ref
        live_s = live.get(ref)
        prediction = merge.pull.state.predicted.get(ref.key) if merge.pull.state else None
        before = after = None
        if live_s is not None and fetched is not None and ref in fetched.histories:
            history = fetched.histories[ref]
            back, ahead = windows(live_s, now_s, config.window_days)
            hours = common_hours(history, back, ahead)
            throttling = {c: Throttling(*p) for c, p in periods.get(ref, {}).items()}
            sizing_before = _sizing(merge.workload, dict(merge.previous))
            before, after = (
                window_figures(history, sizing, *span, hours=hours, throttling=throttling)
                for sizing, span in ((sizing_before, back), (_sizing(merge.workload, {}), ahead))
            )
        elif live_s is not None and fetched is not None and ref in fetched.errors:
            log.warning("%s: verification: %s", ref, fetched.errors[ref])
        out[ref] = verify(
            prediction,
            merged_s=merge.pull.merged_at_s or 0.0,
            live_s=live_s,
            now_s=now_s,
            before=before,
            after=after,
            settings=config,
        )
    return out


def comment_on_merges(
    session: PullRequestPlatform,
    pulls: Sequence[PullVerification],
    reverts: Mapping[int, str] | None = None,
) -> list[str]:
    """Write each pull request's verification comment (created once, edited when it changes),
    with what was done about a regression (``reverts``: pull-request number -> line); the
    problems met, one line per pull request (a rate limit stops the run as elsewhere)."""
    from bot.forge.publish import upsert_comment  # noqa: PLC0415 (jinja2: not for plan)

    problems = []
    for pull in pulls:
        try:
            text = comment_text(pull, revert=(reverts or {}).get(pull.number, ""))
            done = upsert_comment(session, pull.number, text)
        except RateLimitError:
            raise
        except ForgeError as exc:
            problems.append(f"verification comment on #{pull.number}: {exc}")
            continue
        if done != "unchanged":
            log.info("%s: verification of #%d: %s comment", session.full_name, pull.number, done)
    return problems


__all__ = [
    "comment_on_merges",
    "recent_merges",
    "restore_values",
    "verification_unavailable",
    "verify_merged",
]
