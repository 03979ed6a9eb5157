"""End to end against the GitHub emulator: every lifecycle row, limits, recovery, auth, budget."""

from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from bot.config.forge import PullRequestConfig
from bot.forge.branches import group_change_sets
from bot.forge.github import GitHubForge
from bot.forge.github.auth import AppCredentials, TokenCredentials
from bot.forge.publish import update_dashboard
from bot.forge.results import PublishReport, WorkloadStatus
from bot.report import Proposal, parse_state
from tests.support.github import GitHubEmulator
from tests.support.github.scenario import (
    REPO,
    create_repository,
    proposal_for,
    ref,
    run_once,
    settings,
)

pytestmark = pytest.mark.github

BRANCH = "tortoise-bot/prod/shop/web"


def web(cpu: int):
    return lambda path: [proposal_for(path, ["web"], cpu)]


def nothing(path: Path) -> list[Proposal]:
    return []


def calls(gh: GitHubEmulator) -> list[str]:
    return [str(c) for c in gh.rest_calls()]


def test_first_run_opens_a_decorated_pull_request(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    config = PullRequestConfig(
        labels=("resources",),
        reviewers=("alice",),
        team_reviewers=("sre",),
        assignees=("bob",),
        draft=True,
    )
    report, session = run_once(gh, tmp_path / "w", web(250), config=config)
    assert [(r.key, r.action, r.status) for r in report.results] == [
        ("prod/shop/web", "create", "proposal-open")
    ]
    assert calls(gh) == [
        "GET /repos/octo/shop -> 200",
        "GET /repos/octo/shop/pulls?direction=desc&per_page=100&sort=created&state=all -> 200",
        "GET /repos/octo/shop/issues?direction=asc&labels=tortoise-bot-dashboard&per_page=100&sort=created&state=open -> 200",
        "POST /repos/octo/shop/pulls -> 201",
        "PATCH /repos/octo/shop/issues/1 -> 200",
        "POST /repos/octo/shop/pulls/1/requested_reviewers -> 201",
        "POST /repos/octo/shop/issues -> 201",
        # another run may have created a dashboard at the same time: the oldest one stays
        "GET /repos/octo/shop/issues?direction=asc&labels=tortoise-bot-dashboard&per_page=100&sort=created&state=open -> 200",
    ]
    (pr,) = gh.pulls(REPO)
    assert (pr.pull.head, pr.pull.draft, pr.labels, pr.assignees) == (
        BRANCH,
        True,
        ["resources"],
        ["bob"],
    )
    assert (pr.pull.reviewers, pr.pull.teams) == (["alice"], ["sre"])
    assert parse_state(pr.body) is not None
    git = gh.repository(REPO).git
    assert (
        git.read_file(f"refs/heads/{BRANCH}", "apps/web.yaml")
        == b"kind: Deployment\nname: web\ncpu: 250m\n"
    )
    (commit,) = git.commits_between("refs/heads/main", f"refs/heads/{BRANCH}")
    assert commit.author_email == "tortoise-bot@users.noreply.github.com"
    assert commit.message.startswith("chore(resources): Right-size web")
    assert session.checkout_path is not None
    assert gh.token not in (session.checkout_path / ".git" / "config").read_text()
    checkout = session.checkout_path
    session.close()
    assert not checkout.exists() and session.checkout_path is None
    (dashboard,) = gh.issues(REPO)
    assert (
        "tortoise-bot-dashboard" in dashboard.labels
        and f"[#1]({pr.pull and gh.web_url}/octo/shop/pull/1)" in (dashboard.body or "")
    )


def test_unchanged_second_run_makes_no_write(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    run_once(gh, tmp_path / "w", web(250))
    gh.reset_calls()
    report, _ = run_once(gh, tmp_path / "w", web(250))
    assert [r.action for r in report.results] == ["up-to-date"]
    assert gh.writes() == []
    assert [c.path for c in gh.reads()] == [
        "/repos/octo/shop",
        "/repos/octo/shop/pulls",
        "/repos/octo/shop/issues",
    ]
    assert not [c for c in gh.git_calls() if "receive-pack" in c.path]


def test_changed_proposal_updates_branch_and_body_in_place(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    run_once(gh, tmp_path / "w", web(250))
    gh.reset_calls()
    report, _ = run_once(gh, tmp_path / "w", web(300))
    assert [r.action for r in report.results] == ["update"]
    assert (report.opened, report.updated, report.closed) == ((), ("prod/shop/web",), ())
    assert [str(c) for c in gh.writes()] == ["PATCH /repos/octo/shop/pulls/1 -> 200"]
    (pr,) = gh.pulls(REPO)
    assert (
        gh.repository(REPO)
        .git.read_file(f"refs/heads/{BRANCH}", "apps/web.yaml")
        .endswith(b"cpu: 300m\n")
    )
    assert (
        len(gh.repository(REPO).git.commits_between("refs/heads/main", f"refs/heads/{BRANCH}")) == 1
    )
    state = parse_state(pr.body)
    assert state is not None and state.changes == {"prod/shop/Deployment/web/app/requests.cpu": 0.3}


def test_no_change_needed_closes_with_a_comment_and_deletes_the_branch(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    run_once(gh, tmp_path / "w", web(250))
    report, _ = run_once(
        gh, tmp_path / "w", nothing, statuses=[WorkloadStatus(ref("web"), "no-change")]
    )
    assert [r.action for r in report.results] == ["close"]
    (pr,) = gh.pulls(REPO)
    assert pr.state == "closed" and "no change is needed any more" in pr.comments[0].body
    assert gh.repository(REPO).git.ref(BRANCH) is None


def test_a_workload_in_error_keeps_its_pull_request_and_branch(github_emulator, tmp_path):
    """Its history could not be read: no proposal means "unknown", not "no change needed"."""
    gh = github_emulator
    create_repository(gh, ["web"])
    opened, _ = run_once(gh, tmp_path / "w", web(250))
    (key,) = [r.key for r in opened.results]
    head = gh.repository(REPO).git.ref(BRANCH)
    error = [WorkloadStatus(ref("web"), "error", "metrics: timed out")]
    report, _ = run_once(gh, tmp_path / "w", nothing, statuses=error, in_error=frozenset({key}))
    assert [r.action for r in report.results] == ["undecided"]
    (pr,) = gh.pulls(REPO)
    assert pr.state == "open" and pr.comments == []
    assert gh.repository(REPO).git.ref(BRANCH) == head


def test_rejected_proposal_is_suppressed_until_ticked(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    run_once(gh, tmp_path / "w", web(250))
    gh.close(REPO, 1)
    gh.reset_calls()
    report, _ = run_once(gh, tmp_path / "w", web(260), within=lambda old, new: True)
    assert [(r.action, r.status) for r in report.results] == [("suppress", "suppressed")]
    assert not [c for c in gh.writes() if "/pulls" in c.path]
    (dashboard,) = gh.issues(REPO)
    assert "- [ ] <!-- tortoise-bot-request: prod/shop/web -->" in (dashboard.body or "")
    assert "tick the box" in (dashboard.body or "")
    gh.edit_body(REPO, dashboard.number, (dashboard.body or "").replace("- [ ] <!--", "- [x] <!--"))
    report, _ = run_once(gh, tmp_path / "w", web(260), within=lambda old, new: True)
    assert [r.action for r in report.results] == ["create"]
    assert [p.state for p in gh.pulls(REPO)] == ["closed", "open"]
    assert "- [x]" not in (gh.issues(REPO)[0].body or "")


def test_rejected_proposal_outside_thresholds_opens_a_new_pull_request(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    run_once(gh, tmp_path / "w", web(250))
    gh.close(REPO, 1)
    report, _ = run_once(gh, tmp_path / "w", web(100), within=lambda old, new: False)
    assert [r.action for r in report.results] == ["create"]


def test_human_commits_are_never_overwritten_and_noted_once(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    run_once(gh, tmp_path / "w", web(250))
    human = gh.push(REPO, BRANCH, {"apps/web.yaml": b"kind: Deployment\nname: web\ncpu: 400m\n"})
    report, _ = run_once(gh, tmp_path / "w", web(300))
    assert [r.action for r in report.results] == ["note-human"]
    report, _ = run_once(gh, tmp_path / "w", web(350))
    assert [(r.action, r.status) for r in report.results] == [("leave-human", "human-edited")]
    (pr,) = gh.pulls(REPO)
    assert len(pr.comments) == 1 and "did not make" in pr.comments[0].body
    assert gh.repository(REPO).git.ref(BRANCH) == human


def test_base_moved_under_the_edit_rebuilds_the_branch(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    run_once(gh, tmp_path / "w", web(250))
    main = gh.push(
        REPO,
        "main",
        {"apps/web.yaml": b"# owned by shop\nkind: Deployment\nname: web\ncpu: 500m\n"},
    )
    report, _ = run_once(gh, tmp_path / "w", web(250))
    assert [r.action for r in report.results] == ["rebuild"]
    git = gh.repository(REPO).git
    (commit,) = git.commits_between("refs/heads/main", f"refs/heads/{BRANCH}")
    assert commit.parents == (main,)
    assert (
        git.read_file(f"refs/heads/{BRANCH}", "apps/web.yaml")
        == b"# owned by shop\nkind: Deployment\nname: web\ncpu: 250m\n"
    )
    assert gh.repository(REPO).git.mergeable("main", BRANCH)


def test_merged_pull_request_needs_nothing_until_the_next_proposal(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    run_once(gh, tmp_path / "w", web(250))
    gh.merge(REPO, 1)
    gh.reset_calls()
    report, _ = run_once(
        gh, tmp_path / "w", nothing, statuses=[WorkloadStatus(ref("web"), "no-change")]
    )
    assert [(r.key, r.action) for r in report.results] == [("prod/shop/web", "nothing")]
    assert not [c for c in gh.writes() if "/pulls" in c.path]
    report, _ = run_once(gh, tmp_path / "w", web(200))
    assert [r.action for r in report.results] == ["create"]
    assert [p.number for p in gh.pulls(REPO, state="open")] == [3]


def test_grouping_per_namespace_makes_one_pull_request(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web", "api"])

    def build(path):
        single = [proposal_for(path, [n], 250) for n in ("web", "api")]
        (grouped,) = group_change_sets([p.change_set for p in single], "namespace")
        files = tuple(f for p in single for f in p.files)
        return [Proposal(grouped.key, "Right-size shop", grouped, files)]

    report, _ = run_once(gh, tmp_path / "w", build, config=PullRequestConfig(grouping="namespace"))
    assert [r.key for r in report.results] == ["prod/shop"]
    (pr,) = gh.pulls(REPO)
    assert pr.pull.head == "tortoise-bot/prod/shop"
    git = gh.repository(REPO).git
    assert git.read_file("refs/heads/tortoise-bot/prod/shop", "apps/api.yaml").endswith(
        b"cpu: 250m\n"
    )


def test_open_pull_request_limit_leaves_the_rest_pending_with_a_checkbox(github_emulator, tmp_path):
    gh = github_emulator
    names = ["a", "b", "c"]
    create_repository(gh, names)
    config = PullRequestConfig(max_open=2)
    report, _ = run_once(
        gh, tmp_path / "w", lambda p: [proposal_for(p, [n], 250) for n in names], config=config
    )
    assert [(r.key, r.status) for r in report.results] == [
        ("prod/shop/a", "proposal-open"),
        ("prod/shop/b", "proposal-open"),
        ("prod/shop/c", "pending"),
    ]
    assert len(gh.pulls(REPO)) == 2
    assert "- [ ] <!-- tortoise-bot-request: prod/shop/c -->" in (gh.issues(REPO)[0].body or "")


def test_new_pull_requests_per_run_are_limited(github_emulator, tmp_path):
    gh = github_emulator
    names = ["a", "b", "c"]
    create_repository(gh, names)
    config = PullRequestConfig(max_new_per_run=1)
    build = lambda p: [proposal_for(p, [n], 250) for n in names]  # noqa: E731
    run_once(gh, tmp_path / "w", build, config=config)
    assert len(gh.pulls(REPO)) == 1
    run_once(gh, tmp_path / "w", build, config=config)
    assert len(gh.pulls(REPO)) == 2


def test_crash_between_push_and_pull_request_recovers_without_duplicate(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    gh.fail(
        "POST", r"/pulls$", 500, times=3
    )  # the first run's retries all fail: it "dies" after the push
    report, _ = run_once(gh, tmp_path / "w", web(250))
    assert [(r.action, r.status) for r in report.results] == [("create", "error")]
    assert gh.repository(REPO).git.ref(BRANCH) is not None and gh.pulls(REPO) == []
    report, _ = run_once(gh, tmp_path / "w", web(250))
    assert [(r.action, r.status) for r in report.results] == [("create", "proposal-open")]
    assert "earlier run" in report.results[0].message
    assert len(gh.pulls(REPO)) == 1


def test_concurrent_runs_open_no_duplicate(github_emulator, tmp_path):
    gh = github_emulator
    names = ["a", "b"]
    create_repository(gh, names)
    barrier = threading.Barrier(2)
    reports = []

    def build(path):
        barrier.wait(timeout=30)
        return [proposal_for(path, [n], 250) for n in names]

    def one(i):
        reports.append(run_once(gh, tmp_path / f"w{i}", build, dashboard=False)[0])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(reports) == 2
    assert sorted(p.pull.head for p in gh.pulls(REPO)) == [
        "tortoise-bot/prod/shop/a",
        "tortoise-bot/prod/shop/b",
    ]
    assert all(r.status == "proposal-open" for rep in reports for r in rep.results)


def test_app_authentication_end_to_end(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    app = gh.create_app(31)
    gh.install_app(31, 99, "octo", [REPO])
    report, _ = run_once(
        gh, tmp_path / "w", web(250), credentials=AppCredentials(31, app.private_key_pem)
    )
    assert [r.status for r in report.results] == ["proposal-open"]
    assert calls(gh)[:2] == [
        "GET /repos/octo/shop/installation -> 200",
        "POST /app/installations/99/access_tokens -> 201",
    ]
    assert gh.pulls(REPO)[0].login.startswith("app-installation-99")
    assert {c.login for c in gh.git_calls()} == {"app-installation-99[bot]"}


def test_expired_installation_token_is_refreshed(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])
    app = gh.create_app(31)
    gh.install_app(31, 99, "octo", [REPO])
    gh.installation_token_lifetime = timedelta(seconds=1)  # inside PyGithub's refresh threshold
    run_once(
        gh,
        tmp_path / "w",
        web(250),
        credentials=AppCredentials(31, app.private_key_pem, installation_id=99),
    )
    tokens = [c for c in gh.rest_calls() if c.path.endswith("/access_tokens")]
    assert len(tokens) > 1 and all(c.status == 201 for c in tokens)
    assert all(c.status != 401 for c in gh.rest_calls())


def test_hostile_names_reach_github_escaped(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web"])

    def build(path):
        p = proposal_for(path, ["web"], 250)
        hostile = ref("<img src=x onerror=alert(1)>@octo/admins")
        change = p.change_set.changes[0]
        changes = (replace(change, ref=hostile, container="[x](http://evil)|"),)
        return [Proposal(p.key, p.title, replace(p.change_set, changes=changes), p.files)]

    run_once(
        gh, tmp_path / "w", build, statuses=[WorkloadStatus(ref("<b>@team"), "error", "`boom`|")]
    )
    body = gh.pulls(REPO)[0].body or ""
    visible = body.split("<!-- tortoise-bot-state")[0]
    assert "<img" not in visible and "@octo" not in visible and "](http://evil)" not in visible
    dashboard = gh.issues(REPO)[0].body or ""
    assert "<b>" not in dashboard and "@team" not in dashboard


def test_the_token_never_appears_in_git_argv(github_emulator, tmp_path, monkeypatch):
    gh = github_emulator
    create_repository(gh, ["web"])
    log = tmp_path / "argv.log"
    shim = tmp_path / "bin"
    shim.mkdir()
    real = subprocess.run(
        ["which", "git"], capture_output=True, text=True, check=True
    ).stdout.strip()
    (shim / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexec {real} "$@"\n')
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    run_once(gh, tmp_path / "w", web(250))
    argv = log.read_text()
    assert "clone" in argv and "push" in argv
    assert gh.token not in argv and "Authorization" not in argv


def test_a_proposal_computed_against_another_base_is_refused(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web", "api"])

    def stale(path):
        good = proposal_for(path, ["api"], 250)
        bad = proposal_for(path, ["web"], 250)
        old = replace(bad.files[0], old=b"something else\n")
        return [good, replace(bad, files=(old,))]

    report, _ = run_once(gh, tmp_path / "w", stale)
    assert {r.key: r.status for r in report.results} == {
        "prod/shop/api": "proposal-open",
        "prod/shop/web": "error",
    }
    assert (
        "changed since the proposal was computed"
        in (report.result("prod/shop/web") or report.results[0]).message
    )
    assert [p.pull.head for p in gh.pulls(REPO)] == ["tortoise-bot/prod/shop/api"]
    assert gh.repository(REPO).git.ref(BRANCH) is None


def test_dashboard_only_when_pull_requests_are_off(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web", "api"])
    session = GitHubForge(settings(gh), TokenCredentials(gh.token), workdir=tmp_path / "w").open(
        REPO, PullRequestConfig()
    )
    session.checkout()
    statuses = [
        WorkloadStatus(ref("web"), "changes", "cpu 500m -> 250m", key="prod/shop/web"),
        WorkloadStatus(ref("api"), "gathering-data", "3 of 7 days", key="prod/shop/api"),
    ]
    update_dashboard(session, statuses, PublishReport())
    assert gh.pulls(REPO) == []
    body = gh.issues(REPO)[0].body or ""
    assert "## Pending" in body and "cpu 500m -&gt; 250m" in body
    assert "tortoise-bot-request" not in body and "3 of 7 days" in body


def test_repositories_reachable_by_an_app_or_a_token(github_emulator, tmp_path):
    gh = github_emulator
    for name in ("shop", "pay", "other"):
        gh.create_repository("octo", name, {"a": b"1"})
    app = gh.create_app(8)
    gh.install_app(8, 80, "octo", ["octo/shop", "octo/pay"])
    forge = GitHubForge(settings(gh), AppCredentials(8, app.private_key_pem), workdir=tmp_path)
    assert forge.repositories() == ["octo/pay", "octo/shop"]
    token = GitHubForge(settings(gh), TokenCredentials(gh.token), workdir=tmp_path)
    assert token.repositories() == ["octo/other", "octo/pay", "octo/shop"]


def test_leftover_bot_branch_is_deleted_but_a_human_branch_is_kept(github_emulator, tmp_path):
    gh = github_emulator
    create_repository(gh, ["web", "api"])
    gh.fail("POST", r"/pulls$", 500, times=3)  # the bot pushed, then died
    run_once(gh, tmp_path / "w", web(250), dashboard=False)
    human = gh.push(REPO, "tortoise-bot/my-own-fix", {"apps/api.yaml": b"cpu: 1\n"})
    report, _ = run_once(gh, tmp_path / "w", nothing, dashboard=False)
    assert sorted((r.key, r.action) for r in report.results) == [
        ("my-own-fix", "nothing"),
        ("prod/shop/web", "delete-branch"),
    ]
    git = gh.repository(REPO).git
    assert git.ref(BRANCH) is None and git.ref("tortoise-bot/my-own-fix") == human


@pytest.mark.parametrize(
    ("template", "branch"),
    [
        ("{prefix}-{key}", "tortoise-bot-prod/shop/web"),
        ("bots/{key}/{prefix}", "bots/prod/shop/web/tortoise-bot"),
    ],
    ids=["dash", "prefix-last"],
)
def test_custom_branch_templates_round_trip(github_emulator, tmp_path, template, branch):
    gh = github_emulator
    create_repository(gh, ["web"])
    config = PullRequestConfig(branch_template=template)
    run_once(gh, tmp_path / "w", web(250), config=config)
    assert [p.pull.head for p in gh.pulls(REPO)] == [branch]
    gh.reset_calls()
    report, _ = run_once(gh, tmp_path / "w", web(250), config=config)
    assert [r.action for r in report.results] == ["up-to-date"] and gh.writes() == []
    report, _ = run_once(gh, tmp_path / "w", nothing, config=config)
    assert [r.action for r in report.results] == ["close"]
    assert gh.repository(REPO).git.ref(branch) is None
