"""The GitHub emulator on its own: REST state, GitHub's error behaviour, OpenAPI checks, git."""

from __future__ import annotations

import os
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
import requests
from github import Auth, Github, GithubException, GithubIntegration, GithubRetry
from github.GithubException import (
    BadCredentialsException,
    RateLimitExceededException,
    UnknownObjectException,
)

from tests.support.github import EmulatorViolation, GitHubEmulator

pytestmark = pytest.mark.github


def client(gh: GitHubEmulator, token: str | None = None, retry: int | GithubRetry = 0) -> Github:
    return Github(
        base_url=gh.api_url,
        auth=Auth.Token(token or gh.token),
        seconds_between_requests=None,
        seconds_between_writes=None,
        retry=retry,
    )


def git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=False
    )


def test_pull_request_round_trip_is_recorded(github_emulator):
    gh = github_emulator
    gh.create_repository("octo", "shop", {"app.yaml": b"cpu: 1\n"})
    gh.push("octo/shop", "feature", {"app.yaml": b"cpu: 2\n"})
    repo = client(gh).get_repo("octo/shop")
    pr = repo.create_pull(title="Right-size", body="why", head="feature", base="main", draft=True)
    assert (pr.number, pr.draft, pr.head.ref, pr.base.ref) == (1, True, "feature", "main")
    assert pr.head.sha == gh.repository("octo/shop").git.ref("feature")
    assert [str(c) for c in gh.rest_calls()] == [
        "GET /repos/octo/shop -> 200",
        "POST /repos/octo/shop/pulls -> 201",
    ]
    assert gh.writes()[0].body == {
        "title": "Right-size",
        "body": "why",
        "head": "feature",
        "base": "main",
        "draft": True,
    }


def test_second_pull_request_for_the_same_head_is_422(github_emulator):
    gh = github_emulator
    gh.create_repository("octo", "shop", {"a": b"1"})
    gh.push("octo/shop", "feature", {"a": b"2"})
    repo = client(gh).get_repo("octo/shop")
    repo.create_pull(title="t", body="b", head="feature", base="main")
    with pytest.raises(GithubException) as err:
        repo.create_pull(title="t", body="b", head="octo:feature", base="main")
    assert err.value.status == 422
    assert "A pull request already exists for octo:feature." in str(err.value.data)


def test_pull_request_for_a_missing_branch_or_without_commits_is_422(github_emulator):
    gh = github_emulator
    gh.create_repository("octo", "shop", {"a": b"1"})
    repo = client(gh).get_repo("octo/shop")
    with pytest.raises(GithubException) as err:
        repo.create_pull(title="t", body="b", head="nope", base="main")
    assert err.value.status == 422
    repo.create_git_ref("refs/heads/same", gh.repository("octo/shop").git.ref("main") or "")
    with pytest.raises(GithubException) as err2:
        repo.create_pull(title="t", body="b", head="same", base="main")
    assert "No commits between main and same" in str(err2.value.data)


def test_existing_ref_is_422_and_body_over_65536_chars_is_422(github_emulator):
    gh = github_emulator
    gh.create_repository("octo", "shop", {"a": b"1"})
    repo = client(gh).get_repo("octo/shop")
    sha = gh.repository("octo/shop").git.ref("main") or ""
    with pytest.raises(GithubException) as err:
        repo.create_git_ref("refs/heads/main", sha)
    assert (err.value.status, err.value.data["message"]) == (422, "Reference already exists")
    with pytest.raises(GithubException) as err2:
        repo.create_issue(title="big", body="x" * 65537)
    assert err2.value.status == 422
    assert repo.create_issue(title="fits", body="x" * 65536).number == 1


def test_unknown_repository_is_404_and_bad_token_is_401(github_emulator):
    gh = github_emulator
    gh.create_repository("octo", "shop", {"a": b"1"})
    with pytest.raises(UnknownObjectException):
        client(gh).get_repo("octo/nope")
    with pytest.raises(BadCredentialsException):
        client(gh, token="ghp_wrong").get_repo("octo/shop")
    assert [c.status for c in gh.rest_calls()] == [404, 401]


def test_lists_are_paginated_with_link_headers(github_emulator):
    gh = github_emulator
    gh.create_repository("octo", "shop", {"a": b"1"})
    repo = client(gh).get_repo("octo/shop")
    for i in range(35):
        repo.create_issue(title=f"issue {i}")
    gh.reset_calls()
    titles = [i.title for i in repo.get_issues(state="open")]
    assert len(titles) == 35 and titles[0] == "issue 34"
    pages = [c.query.get("page") for c in gh.rest_calls()]
    assert pages == [None, "2"]
    response = requests.get(
        f"{gh.api_url}/repos/octo/shop/issues?per_page=10&page=2",
        headers={"Authorization": f"token {gh.token}"},
        timeout=10,
    )
    assert 'rel="next"' in response.headers["Link"] and 'rel="prev"' in response.headers["Link"]
    assert len(response.json()) == 10


def test_primary_rate_limit_answers_403_with_reset_headers(github_emulator):
    gh = github_emulator
    gh.create_repository("octo", "shop", {"a": b"1"})
    gh.rate_limit_remaining = 1
    g = client(gh)
    g.get_repo("octo/shop")
    with pytest.raises(RateLimitExceededException) as err:
        g.get_repo("octo/shop")
    assert err.value.headers is not None
    assert err.value.headers["x-ratelimit-remaining"] == "0"
    assert int(err.value.headers["x-ratelimit-reset"]) > 0


def test_secondary_rate_limit_and_5xx_are_retried(github_emulator):
    gh = github_emulator
    gh.create_repository("octo", "shop", {"a": b"1"})
    gh.fail("GET", r"^/repos/octo/shop$", 403, headers={"Retry-After": "0"})
    gh.fail("GET", r"^/repos/octo/shop$", 502)
    g = client(gh, retry=GithubRetry(total=3, backoff_factor=0.001))
    assert g.get_repo("octo/shop").full_name == "octo/shop"
    assert [c.status for c in gh.rest_calls()] == [403, 502, 200]


def test_429_is_answered_with_retry_after(github_emulator):
    gh = github_emulator
    gh.create_repository("octo", "shop", {"a": b"1"})
    gh.fail("GET", r"^/repos/octo/shop$", 429, headers={"Retry-After": "7"})
    response = requests.get(
        f"{gh.api_url}/repos/octo/shop", headers={"Authorization": f"token {gh.token}"}, timeout=10
    )
    assert (response.status_code, response.headers["Retry-After"]) == (429, "7")


def test_request_that_breaks_the_openapi_description_fails_the_test(tmp_path):
    gh = GitHubEmulator(tmp_path / "gh").start()
    gh.create_repository("octo", "shop", {"a": b"1"})
    response = requests.post(
        f"{gh.api_url}/repos/octo/shop/pulls",
        json={"title": "no head", "base": "main"},
        headers={"Authorization": f"token {gh.token}"},
        timeout=10,
    )
    assert response.status_code == 500
    with pytest.raises(EmulatorViolation, match="'head' is a required property"):
        gh.__exit__(None, None, None)


def test_labels_as_a_bare_list_are_rejected_by_the_description(tmp_path):
    gh = GitHubEmulator(tmp_path / "gh").start()
    gh.create_repository("octo", "shop", {"a": b"1"})
    issue = client(gh).get_repo("octo/shop").create_issue(title="t")
    with pytest.raises(GithubException):
        issue.add_to_labels("bug")  # PyGithub posts ["bug"]; the schema wants {"labels": [...]}
    with pytest.raises(EmulatorViolation, match="labels"):
        gh.__exit__(None, None, None)


def test_git_clone_and_push_over_smart_http_need_the_token(github_emulator, tmp_path):
    gh = github_emulator
    gh.create_repository("octo", "shop", {"app.yaml": b"cpu: 1\n"})
    url = gh.git_url("octo", "shop")
    assert git("clone", url, str(tmp_path / "anon")).returncode != 0
    header = f"http.extraHeader=Authorization: Bearer {gh.token}"
    assert git("-c", header, "clone", "--depth=1", url, str(tmp_path / "c")).returncode == 0
    work = tmp_path / "c"
    (work / "app.yaml").write_text("cpu: 2\n")
    git(
        "-c",
        "user.name=Bot",
        "-c",
        "user.email=bot@example.com",
        "commit",
        "-qam",
        "edit",
        cwd=work,
    )
    pushed = git("-c", header, "push", "origin", "HEAD:refs/heads/edit", cwd=work)
    assert pushed.returncode == 0, pushed.stderr
    assert gh.repository("octo/shop").git.read_file("refs/heads/edit", "app.yaml") == b"cpu: 2\n"
    assert gh.token not in (work / ".git" / "config").read_text()
    assert {c.status for c in gh.git_calls()} >= {200, 401}


def test_app_installation_token_flow(github_emulator):
    gh = github_emulator
    gh.create_repository("octo", "shop", {"a": b"1"})
    gh.create_repository("octo", "other", {"a": b"1"})
    app = gh.create_app(77)
    gh.install_app(77, 4242, "octo", ["octo/shop"])
    auth = Auth.AppAuth(77, app.private_key_pem)
    integration = GithubIntegration(
        base_url=gh.api_url,
        auth=auth,
        seconds_between_requests=None,
        seconds_between_writes=None,
        retry=0,
    )
    installation = integration.get_repo_installation("octo", "shop")
    assert installation.id == 4242
    g = Github(
        base_url=gh.api_url,
        auth=auth.get_installation_auth(4242),
        seconds_between_requests=None,
        seconds_between_writes=None,
        retry=0,
    )
    assert g.get_repo("octo/shop").full_name == "octo/shop"
    with pytest.raises(UnknownObjectException):
        g.get_repo("octo/other")  # not part of the installation
    calls = [str(c) for c in gh.rest_calls()]
    assert calls[:2] == [
        "GET /repos/octo/shop/installation -> 200",
        "POST /app/installations/4242/access_tokens -> 201",
    ]


def test_expired_installation_token_is_401(github_emulator):
    gh = github_emulator
    gh.create_repository("octo", "shop", {"a": b"1"})
    app = gh.create_app(5)
    gh.install_app(5, 6, "octo", ["octo/shop"])
    gh.installation_token_lifetime = timedelta(seconds=-1)
    token = (
        GithubIntegration(
            base_url=gh.api_url,
            auth=Auth.AppAuth(5, app.private_key_pem),
            retry=0,
            seconds_between_requests=None,
            seconds_between_writes=None,
        )
        .get_access_token(6)
        .token
    )
    with pytest.raises(BadCredentialsException):
        client(gh, token=token).get_repo("octo/shop")


def test_merge_and_close_as_a_human(github_emulator):
    gh = github_emulator
    gh.create_repository("octo", "shop", {"a": b"1"})
    gh.push("octo/shop", "f1", {"a": b"2"})
    gh.push("octo/shop", "f2", {"b": b"3"})
    repo = client(gh).get_repo("octo/shop")
    p1 = repo.create_pull(title="1", body="", head="f1", base="main")
    p2 = repo.create_pull(title="2", body="", head="f2", base="main")
    gh.merge("octo/shop", p1.number)
    gh.close("octo/shop", p2.number)
    got = {p.number: (p.state, p.merged) for p in (repo.get_pull(1), repo.get_pull(2))}
    assert got == {1: ("closed", True), 2: ("closed", False)}
    assert gh.repository("octo/shop").git.read_file("refs/heads/main", "a") == b"2"


def test_large_push_uses_chunked_bodies(github_emulator, tmp_path):
    gh = github_emulator
    gh.create_repository("octo", "shop", {"a": b"1"})
    header = f"http.extraHeader=Authorization: Bearer {gh.token}"
    work = tmp_path / "c"
    assert git("-c", header, "clone", gh.git_url("octo", "shop"), str(work)).returncode == 0
    (work / "blob.bin").write_bytes(os.urandom(3 * 1024 * 1024))
    git("add", "blob.bin", cwd=work)
    git("-c", "user.name=Bot", "-c", "user.email=bot@example.com", "commit", "-qm", "big", cwd=work)
    pushed = git("-c", header, "push", "origin", "HEAD:refs/heads/big", cwd=work)
    assert pushed.returncode == 0, pushed.stderr
    assert (
        gh.repository("octo/shop").git.read_file("refs/heads/big", "blob.bin")
        == (work / "blob.bin").read_bytes()
    )


def test_deleting_the_head_branch_closes_the_pull_request(github_emulator):
    gh = github_emulator
    gh.create_repository("octo", "shop", {"a": b"1"})
    gh.push("octo/shop", "feature", {"a": b"2"})
    repo = client(gh).get_repo("octo/shop")
    pr = repo.create_pull(title="t", body="b", head="feature", base="main")
    repo.get_git_ref("heads/feature").delete()
    assert repo.get_pull(pr.number).state == "closed"
    with pytest.raises(GithubException) as err:
        repo.get_git_ref("heads/feature").delete()
    assert err.value.status == 404


class _BrokenEmulator(GitHubEmulator):
    """An emulator whose repository objects lack a required field."""

    def _repo_json(self, repo):
        obj = super()._repo_json(repo)
        del obj["default_branch"]
        return obj


def test_response_that_breaks_the_openapi_description_fails_the_test(tmp_path):
    gh = _BrokenEmulator(tmp_path / "gh").start()
    gh.create_repository("octo", "shop", {"a": b"1"})
    response = requests.get(
        f"{gh.api_url}/repos/octo/shop", headers={"Authorization": f"token {gh.token}"}, timeout=10
    )
    assert response.status_code == 500
    with pytest.raises(EmulatorViolation, match="'default_branch' is a required property"):
        gh.__exit__(None, None, None)
