"""End to end against the GitHub emulator: GitHub's rate limits (primary budget, secondary
limits, 429), server errors retried, refused credentials, and a pull request another run opened
meanwhile."""

from __future__ import annotations

import pytest

from bot.forge.errors import AuthError
from bot.forge.github.auth import TokenCredentials
from tests.support.github.scenario import REPO, create_repository, proposal_for, run_once, settings

pytestmark = pytest.mark.github

BRANCH = "tortoise-bot/prod/shop/web"


def web(cpu: int):
    return lambda path: [proposal_for(path, ["web"], cpu)]


def test_rate_limit_budget_stops_cleanly_and_reports_what_was_not_done(github_emulator, tmp_path):
    gh = github_emulator
    names = ["a", "b", "c"]
    create_repository(gh, names)
    gh.rate_limit_remaining = 3  # repository, pull listing, and too few for a pull request
    report, _ = run_once(
        gh, tmp_path / "w", lambda p: [proposal_for(p, [n], 250) for n in names], dashboard=False
    )
    assert report.stopped and "rate limit" in report.stopped
    assert report.not_done
    done = {r.key for r in report.results if r.status == "proposal-open"}
    assert done.isdisjoint(report.not_done) and done | set(report.not_done) == {
        f"prod/shop/{n}" for n in names
    }


def test_server_errors_are_retried_without_duplicates(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    gh.fail("POST", r"/pulls$", 502, times=1)
    gh.fail("GET", r"/pulls$", 503, times=1)
    report, _ = run_once(gh, tmp_path / "w", web(250))
    assert [r.status for r in report.results] == ["proposal-open"]
    assert len(gh.pulls(REPO)) == 1


def test_primary_rate_limit_waits_for_a_near_reset(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    gh.rate_limit_reset_s = 0.5  # the window starts at the first call, which finds no budget
    gh.rate_limit_refill = 100
    gh.rate_limit_remaining = 0
    report, _ = run_once(
        gh, tmp_path / "w", web(250), dashboard=False, github=settings(gh, max_rate_limit_wait_s=5)
    )
    assert [r.status for r in report.results] == ["proposal-open"] and report.stopped is None
    assert [c.status for c in gh.rest_calls()][:2] == [403, 200]


def test_secondary_rate_limit_and_429_honour_retry_after(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    gh.fail("POST", r"/pulls$", 403, headers={"Retry-After": "1"})
    gh.fail("GET", r"/pulls$", 429, headers={"Retry-After": "0"})
    report, _ = run_once(gh, tmp_path / "w", web(250), dashboard=False)
    assert [r.status for r in report.results] == ["proposal-open"]
    statuses = [(c.method, c.status) for c in gh.rest_calls() if c.path.endswith("/pulls")]
    assert statuses == [("GET", 429), ("GET", 200), ("POST", 403), ("POST", 201)]
    assert len(gh.pulls(REPO)) == 1


def test_pull_request_opened_by_another_run_in_between_is_adopted(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    gh.before("POST", r"/pulls$", lambda g: g.open_pull(REPO, BRANCH, title="Right-size web"))
    report, _ = run_once(gh, tmp_path / "w", web(250))
    assert [(r.action, r.status, r.number) for r in report.results] == [
        ("adopted", "proposal-open", 1)
    ]
    assert len(gh.pulls(REPO)) == 1
    assert [
        c.status for c in gh.rest_calls() if c.method == "POST" and c.path.endswith("/pulls")
    ] == [422]


def test_secondary_limit_on_fast_writes_is_waited_out(github_emulator, tmp_path):
    gh = github_emulator
    names = ["a", "b", "c"]
    create_repository(gh, names)
    gh.secondary_write_limit = (1, 1.0)  # one write per second
    report, _ = run_once(
        gh, tmp_path / "w", lambda p: [proposal_for(p, [n], 250) for n in names], dashboard=False
    )
    assert [r.status for r in report.results] == ["proposal-open"] * 3
    posts = [c.status for c in gh.rest_calls() if c.method == "POST"]
    assert 403 in posts and posts.count(201) == 3
    assert len(gh.pulls(REPO)) == 3


def test_bad_token_is_an_auth_error(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    with pytest.raises(AuthError):
        run_once(
            gh,
            tmp_path / "w",
            web(250),
            credentials=TokenCredentials("ghp_wrong"),
            github=settings(gh),
        )
