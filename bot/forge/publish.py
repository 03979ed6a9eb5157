"""The pull-request lifecycle of one repository in one run, on any forge's primitives
(``protocol.PullRequestPlatform``): ``publish`` and ``update_dashboard``.

``publish`` lists the bot's branches and pull requests and the keys ticked on the dashboard,
observes each branch key (``observe``), decides its action (``lifecycle.decide``), orders the
steps and holds back new pull requests over the limits (``schedule``), reserves the API budget
of each step's writes (``act.StepWriter.writes_of``), acts, and stops at the first rate limit.
A forge implements only the primitives; this loop is the same on all of them.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from typing import Literal, TypeAlias

from bot.forge.act import StepWriter, prices_of
from bot.forge.branches import BranchNames
from bot.forge.dashboard import dashboard_body
from bot.forge.errors import ForgeError, RateLimitError
from bot.forge.lifecycle import Observed, ObservedPull, ThresholdCheck, decide, same_proposal
from bot.forge.protocol import PullRequestPlatform
from bot.forge.pulls import ListedPull, latest
from bot.forge.results import KeyResult, PublishReport, WorkloadStatus
from bot.forge.schedule import WAIT_ACTIONS, Slots, Step, branch_keys, ordered
from bot.report import parse_state, state_of
from bot.report import ticked_keys as ticked_in
from bot.report.proposal import Proposal
from bot.report.verification import is_verification

LOG = logging.getLogger(__name__)


def ticked_keys(platform: PullRequestPlatform) -> set[str]:
    """Keys a human ticked on the dashboard (none without a dashboard)."""
    if not platform.dashboard_enabled:
        return set()
    return ticked_in(platform.read_dashboard())


def observe(
    platform: PullRequestPlatform,
    key: str,
    ref: str,
    pull: ListedPull | None,
    *,
    remote: Mapping[str, str],
    requested: Collection[str],
    in_error: Collection[str] = (),
) -> Observed:
    """What ``publish`` sees of branch ``ref`` of ``key``: its latest pull request (its
    commits read only when it is open and its branch moved away from the commit the bot
    pushed), its SHA on the remote, whether a human ticked it, whether a workload of it is in
    error."""
    observed_pull = None
    if pull is not None:
        body_state = parse_state(pull.body)
        # the branch still at the commit the bot pushed cannot hold human commits
        pushed = body_state is not None and body_state.head is not None
        untouched = pushed and remote.get(ref) == (body_state.head if body_state else None)
        human = False
        if pull.state == "open" and not untouched:
            bot_email = platform.config.author_email
            human = any(email != bot_email for email in platform.commit_emails(pull))
        observed_pull = ObservedPull(
            number=pull.number,
            state=pull.state,
            url=pull.url,
            state_json=body_state,
            human_commits=human,
            head_sha=pull.head_sha,
        )
    return Observed(
        key,
        observed_pull,
        remote.get(ref),
        requested=key in requested,
        in_error=key in in_error,
    )


def publish(
    platform: PullRequestPlatform,
    proposals: Sequence[Proposal],
    *,
    within_thresholds: ThresholdCheck = same_proposal,
    in_error: Collection[str] = (),
    held: Mapping[str, str] | None = None,
    scope: Collection[str] | None = None,
    urgent: Collection[str] = (),
) -> PublishReport:
    """Bring the repository's bot pull requests in line with ``proposals`` (lifecycle table).

    Closes and updates come first, then new pull requests: dashboard requests first, then
    by key, while fewer than ``max_open`` bot pull requests are open and fewer than
    ``max_new_per_run`` were opened in this run (requests ignore both limits;
    ``bot.forge.schedule``). A rate limit stops the run; every key not handled is listed in
    ``not_done``. ``in_error``: keys with a workload in error in this run; without a
    proposal they are left as they are. ``held``: keys whose new pull request is held back,
    with why (below ``pull_requests.min_monthly_change``): such a key is not opened (``held``,
    pending on the dashboard) unless a human ticked it; an open one is still updated.
    ``scope``: the only keys this run may act on (a run with a selection of workloads;
    ``bot.pipeline.serve.selection_scope``); the branches and pull requests of other keys are
    neither read nor touched. None: every key. ``urgent``: keys handled as if a human had
    ticked them (first, past the limits, the noise threshold and the suppression of a closed
    pull request): the reverts of regressed merges.
    """
    config = platform.config
    names = BranchNames.of_settings(config)
    results: list[KeyResult] = []
    not_done: list[str] = []
    try:
        remote = platform.bot_branches()
        pulls = latest(platform.pull_requests())
        requested = ticked_keys(platform) | set(urgent)
    except RateLimitError as exc:
        return PublishReport((), tuple(p.key for p in proposals), str(exc))
    by_key = {p.key: p for p in proposals}
    keys = branch_keys(
        {names.of(k): k for k in by_key},
        {ref: pull.key(names) for ref, pull in pulls.items()},
        {ref: names.key_of(ref) for ref in remote},
    )
    if scope is not None:
        keys = {ref: key for ref, key in keys.items() if key in scope}
    steps: list[Step] = []
    stopped: str | None = None
    for ref, key in sorted(keys.items(), key=lambda kv: kv[1]):
        try:
            observed = observe(
                platform,
                key,
                ref,
                pulls.get(ref),
                remote=remote,
                requested=requested,
                in_error=in_error,
            )
        except RateLimitError as exc:
            stopped = str(exc)
            break
        except ForgeError as exc:
            results.append(KeyResult(key, "error", "error", str(exc), done=False))
            continue
        proposal = by_key.get(key)
        action = decide(
            observed,
            state_of(proposal) if proposal else None,
            within_thresholds=within_thresholds,
        )
        steps.append(Step(key, ref, observed, action))
    if stopped:
        handled = {r.key for r in results} | {s.key for s in steps}
        not_done.extend(k for k in keys.values() if k not in handled)
    open_now = sum(1 for p in pulls.values() if p.state == "open")
    slots = Slots(config.max_open, config.max_new_per_run, open_now)
    dashboard_url = platform.dashboard_url if platform.dashboard_enabled else None
    writer = StepWriter(platform, config, dashboard_url)
    for step in ordered(steps):
        if stopped:
            not_done.append(step.key)
            continue
        hold = (held or {}).get(step.key)
        if hold is not None and step.action.kind == "create" and not step.observed.requested:
            results.append(KeyResult(step.key, "held", "pending", hold))
            continue
        wait = slots.wait_reason(step)
        if wait is not None:
            results.append(KeyResult(step.key, WAIT_ACTIONS[wait], "pending", wait))
            continue
        kind, pull = step.action.kind, pulls.get(step.ref)
        try:
            writes = writer.writes_of(step, pull, by_key.get(step.key))
            if writes:
                platform.reserve(writes, f"{kind} {step.key}")
            result = writer.act(step, pull, by_key.get(step.key))
        except RateLimitError as exc:
            stopped = str(exc)
            not_done.append(step.key)
            continue
        except ForgeError as exc:
            LOG.warning("%s", exc)
            results.append(KeyResult(step.key, kind, "error", str(exc), done=False))
            continue
        results.append(result)
        slots = slots.after(kind)
    return PublishReport(tuple(results), tuple(not_done), stopped)


def update_dashboard(
    platform: PullRequestPlatform,
    statuses: Sequence[WorkloadStatus],
    report: PublishReport,
    *,
    findings: Sequence[str] = (),
    verification: Sequence[str] = (),
) -> set[str]:
    """Create or edit the dashboard (only when its body changes), with the repository's
    ``findings`` (problems in what it declares) and the ``verification`` of merged pull
    requests (Markdown lines); the ticked keys read."""
    if not platform.dashboard_enabled:
        return set()
    ticked = ticked_keys(platform)
    config = platform.config
    body = dashboard_body(
        statuses,
        report,
        title=config.dashboard_title,
        prices=prices_of(config),
        findings=findings,
        verification=verification,
    )
    platform.write_dashboard(body)
    return ticked


CommentWrite: TypeAlias = Literal["created", "edited", "unchanged"]


def upsert_comment(platform: PullRequestPlatform, number: int, text: str) -> CommentWrite:
    """Make ``text`` the bot's verification comment on pull request ``number``
    (``bot.report.verification``): edit the first comment carrying its marker when it says
    something else, create one when there is none, leave it when it already says ``text``, so
    a pull request never gets a second one."""
    for comment in platform.comments(number):
        if not is_verification(comment.body):
            continue
        if comment.body.strip() == text.strip():
            return "unchanged"
        platform.edit_comment(comment.id, text)
        return "edited"
    platform.comment(number, text)
    return "created"


__all__ = ["observe", "publish", "ticked_keys", "update_dashboard", "upsert_comment"]
