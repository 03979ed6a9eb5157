"""A whole ``serve_repository`` run verifies the merged bot pull requests of a repository of
real Deployment manifests against a real Prometheus, comments on each, lists them on the
dashboard and opens at once the revert of what regressed (the regressed field only, ranked
before the engine's own proposals, past the per-run limit); the revert, once merged and live,
is verified in turn."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.config.bot import BotSettings
from bot.config.forge import PullRequestConfig
from bot.config.recommend import NoiseSettings
from bot.forge.github import GitHubForge
from bot.forge.github.auth import TokenCredentials
from bot.forge.previous import PreviousProposal
from bot.metrics import PrometheusSource
from bot.model import ChangeSet, FieldChange, FieldId, FileChange, Recommendation, WorkloadRef
from bot.pipeline.proposals import proposals_within_thresholds
from bot.pipeline.revert import (
    REVERT_NOTE,
    held_after_revert,
    held_after_revert_lines,
    reverted_keys,
)
from bot.pipeline.serve import serve_repository
from bot.report import Proposal, parse_state, state_of
from bot.report.verification import VERIFICATION_MARKER, said_verdicts
from tests.forge.test_verification import (
    DAY,
    LATER,
    MERGED,
    NAMES,
    NOW,
    PROPOSED,
    REVERT_MERGED,
    merge_open,
    prom,
)
from tests.forge.verify_history import STEP_S
from tests.report.replays import comparison
from tests.support.github.scenario import REPO, run_once
from tests.support.github.scenario import settings as fast_settings

__all__ = ["prom"]

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: shop
spec:
  replicas: 2
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
        - name: app
          image: example/{name}:1
          resources:
            requests:
              cpu: 500m
              memory: 256Mi
"""


def ref(name: str) -> WorkloadRef:
    return WorkloadRef("Deployment", "shop", name)


def _proposals(checkout: Path) -> list[Proposal]:
    """What an earlier run proposed: each workload's CPU request, predicted safe by its replay."""
    out = []
    for name in NAMES:
        path = f"apps/{name}.yaml"
        old = (checkout / path).read_bytes()
        new = old.replace(b"cpu: 500m", f"cpu: {PROPOSED[name]}m".encode())
        change = FieldChange(ref(name), FieldId.REQUESTS_CPU, PROPOSED[name] / 1000, 0.5, "app")
        rec = replace(Recommendation(ref(name), "changes"), replay=comparison())
        key = f"default/shop/{name}"
        out.append(
            Proposal(
                key,
                f"Right-size {name}",
                ChangeSet(key, (change,), (rec,)),
                (FileChange(path, old, new),),
            )
        )
    return out


def _settings(gh, prom_url: str, **verify: object) -> BotSettings:
    return BotSettings.model_validate(
        {
            "prometheus": {"url": prom_url, "gzip": False, "step_s": STEP_S},
            "github": fast_settings(gh).model_dump(mode="json"),
            "verify": verify,
        }
    )


@pytest.fixture
def merged(github_emulator, tmp_path):
    gh = github_emulator
    files = {f"apps/{n}.yaml": DEPLOYMENT.format(name=n).encode() for n in NAMES}
    files[".tortoise-bot.yaml"] = b"update_mode: auto\npull_requests:\n  max_new_per_run: 0\n"
    owner, name = REPO.split("/")
    gh.create_repository(owner, name, files)
    run_once(gh, tmp_path / "earlier", _proposals, config=PullRequestConfig())
    return gh, merge_open(gh, lambda name: NOW - DAY if name == "api" else MERGED)


def _serve(gh, prom, workdir: Path, now_s: float, **verify: object):
    settings = _settings(gh, prom.url, **verify)
    forge = GitHubForge(settings.github, TokenCredentials(gh.token), workdir=workdir)
    source = PrometheusSource(settings.prometheus)
    try:
        return serve_repository(REPO, forge, source, settings, now_s=now_s)
    finally:
        source.close()


def _comment(gh, number: int) -> str:
    issue = next(i for i in gh.pulls(REPO) if i.number == number)
    (body,) = [c.body for c in issue.comments if VERIFICATION_MARKER in c.body]
    return body


def test_a_run_reverts_the_regressed_field_at_once_and_says_so(merged, prom, tmp_path):
    gh, numbers = merged
    report = _serve(gh, prom, tmp_path / "run", NOW)
    assert report.ok, report.message
    assert "verification: regressed 2, waiting 1, verified 1" in report.message
    reverts = [p for p in gh.pulls(REPO, state="open") if p.title.startswith("Revert #")]
    (revert,) = reverts  # max_new_per_run 0: only the revert, past the limit
    assert revert.title == f"Revert #{numbers['pay']}"
    assert revert.labels == ["tortoise-bot:revert"]  # verify.revert_label, no labels set
    state = parse_state(revert.body)
    assert state is not None
    pay_cpu = f"{ref('pay').key}/app/requests.cpu"
    assert dict(state.changes) == {pay_cpu: 0.5} and dict(state.previous) == {pay_cpu: 0.1}
    assert state.reverts == numbers["pay"]  # the regression, recorded in the forge
    number = numbers["pay"]
    assert f"restores the value before \\#{number}, whose outcome regressed" in revert.body
    assert f"`{REVERT_NOTE}` reverts \\#{number}" in revert.body  # the folded note says why:
    assert "CPU above request 100.0 % of the minutes, predicted 0.0 %" in revert.body
    text = gh.repository(REPO).git.read_file(revert.pull.head, "apps/pay.yaml").decode()
    assert "cpu: 500m" in text
    assert f"Revert: [#{revert.number}](http" in _comment(gh, numbers["pay"])
    assert said_verdicts(_comment(gh, numbers["cart"])) == {ref("cart").key: "regressed"}
    (dashboard,) = gh.issues(REPO)
    assert "## Verification" in dashboard.body and f"#{numbers['pay']}" in dashboard.body

    # a second run with nothing new writes nothing about the verification
    gh.reset_calls()
    again = _serve(gh, prom, tmp_path / "again", NOW)
    assert again.ok, again.message
    comment_writes = [c for c in gh.writes() if "/comments" in c.path]
    assert comment_writes == []
    assert len([p for p in gh.pulls(REPO, state="open") if p.title.startswith("Revert #")]) == 1


def test_propose_only_says_it_and_opens_nothing(merged, prom, tmp_path):
    gh, numbers = merged
    report = _serve(gh, prom, tmp_path / "run", NOW, revert="propose-only")
    assert report.ok, report.message
    assert not [p for p in gh.pulls(REPO, state="open") if p.title.startswith("Revert #")]
    comment = _comment(gh, numbers["pay"])
    assert "verify.revert is propose-only" in comment and "`requests.cpu`: 0.1 → 0.5" in comment


def test_a_merged_revert_is_verified_in_turn_and_a_merge_never_live_is_said(merged, prom, tmp_path):
    gh, numbers = merged
    _serve(gh, prom, tmp_path / "run", NOW)
    (revert,) = [p for p in gh.pulls(REPO, state="open") if p.title.startswith("Revert #")]
    gh.merge(REPO, revert.number, at=datetime.fromtimestamp(REVERT_MERGED, UTC))
    report = _serve(gh, prom, tmp_path / "later", LATER)
    assert report.ok, report.message
    said = said_verdicts(_comment(gh, revert.number))
    assert said == {ref("pay").key: "verified"}
    assert said_verdicts(_comment(gh, numbers["api"])) == {ref("api").key: "never-live"}
    # the reverted merge is no longer the latest of its workload: its comment stays as it was
    assert said_verdicts(_comment(gh, numbers["pay"])) == {ref("pay").key: "regressed"}
    assert not [p for p in gh.pulls(REPO, state="open") if p.title.startswith("Revert #")]


def _previous(number: int, at: float, proposal: Proposal, reverts: int | None = None):
    state = state_of(replace(proposal, reverts=reverts))
    return PreviousProposal(proposal.key, number, "b", False, True, state, at, at)


def _cpu(millicores: int) -> Proposal:
    change = FieldChange(ref("pay"), FieldId.REQUESTS_CPU, millicores / 1000, 0.5, "app")
    key = "default/shop/pay"
    return Proposal(key, "Right-size pay", ChangeSet(key, (change,)), ())


def test_after_a_revert_the_same_proposal_is_held_until_the_history_moves():
    within = proposals_within_thresholds(NoiseSettings())
    reverted, revert = _previous(3, 100.0, _cpu(100)), _previous(6, 200.0, _cpu(500), reverts=3)
    held = held_after_revert([_cpu(100)], [revert, reverted], within)
    assert (
        list(held) == ["default/shop/pay"]
        and "#3, whose values #6 reverted" in held["default/shop/pay"]
        and held["default/shop/pay"].startswith("held after revert #6:")
    )
    numbers = reverted_keys([_cpu(100)], [revert, reverted], within)
    assert numbers == {"default/shop/pay": (3, 6)}
    # the run line says why, not "below min_monthly_change"; other held keys are not named
    lines = held_after_revert_lines(["default/shop/pay", "default/shop/web"], numbers)
    assert lines == ["1 held after revert #6: default/shop/pay"]
    assert held_after_revert([_cpu(300)], [revert, reverted], within) == {}  # the history moved
    later = _previous(7, 300.0, _cpu(400))  # a proposal merged after the revert: free again
    assert held_after_revert([_cpu(100)], [later, revert, reverted], within) == {}
