"""Every GitHub REST answer is read within ``github.max_response_bytes``: an endless or declared
oversize answer fails the call with a ``ForgeError`` naming the request (never the token), the
connection is dropped at the bound, and answers under it are read as before."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from github.Requester import Requester

from bot.config.forge import GitHubConfig, PullRequestConfig
from bot.forge.errors import ForgeError
from bot.forge.github import GitHubForge
from bot.forge.github.answers import AnswerTooLarge, BoundedRetry
from bot.forge.github.api import make_retry
from bot.forge.github.auth import AppCredentials, TokenCredentials
from bot.model import MIB
from tests.forge.flood import DECLARED_BYTES, FloodProxy
from tests.support.github import GitHubEmulator
from tests.support.github.scenario import settings

BOOM, FINE = "octo/boom", "octo/fine"
LISTING = r"/repos/octo/boom/pulls$"

T = TypeVar("T")


def within(seconds: float, fn: Callable[[], T]) -> T:
    """``fn()`` (its result or its exception), failing the test when it still runs after
    ``seconds``: an unbounded read of an endless answer never returns."""
    outcome: list[T | BaseException] = []

    def run() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"still reading the answer after {seconds} s"
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


@pytest.fixture
def two_repos(github_emulator: GitHubEmulator) -> GitHubEmulator:
    for full_name in (BOOM, FINE):
        owner, name = full_name.split("/")
        github_emulator.create_repository(owner, name, {"a.yaml": b"a: 1\n"})
    return github_emulator


@pytest.fixture(params=[False, True], ids=["endless", "declared"])
def flood(request: pytest.FixtureRequest, two_repos: GitHubEmulator) -> Iterator[FloodProxy]:
    with FloodProxy(two_repos.api_url, LISTING, declare=request.param) as proxy:
        yield proxy


def forge_on(gh: GitHubEmulator, api_url: str, workdir: Path, limit: int) -> GitHubForge:
    config = settings(gh, api_url=api_url, max_response_bytes=limit)
    return GitHubForge(config, TokenCredentials(gh.token), workdir=workdir)


def test_an_oversize_answer_fails_its_call_and_names_the_request(two_repos, flood, tmp_path):
    gh = two_repos
    forge = forge_on(gh, flood.api_url, tmp_path, 1 * MIB)
    boom = forge.open(BOOM, PullRequestConfig())
    with pytest.raises(ForgeError) as caught:
        within(30, boom.pull_requests)
    message = str(caught.value)
    assert message.startswith("octo/boom: list pull requests: the answer to GET /api/v3/repos/")
    assert "/repos/octo/boom/pulls?" in message and "per_page=100" in message
    assert "larger than github.max_response_bytes (1,048,576 bytes)" in message
    if flood.declare:
        assert f"it declares {DECLARED_BYTES:,} bytes, not read" in message
    else:
        assert message.endswith("stopped reading there")
        assert flood.ended.wait(10)  # the proxy's writer saw the hang-up: its count is final
        assert flood.sent >= 1 * MIB  # it did read up to the bound
    assert gh.token not in message and "127.0.0.1" not in message
    assert isinstance(caught.value.__cause__, AnswerTooLarge)
    assert flood.flooded == 1  # not retried: the same answer again would not be smaller
    # the client stays usable: the same repository's other calls and another repository
    assert boom.read_dashboard() is None
    fine = forge.open(FINE, PullRequestConfig())
    assert fine.pull_requests() == ()
    assert fine.checkout().joinpath("a.yaml").read_bytes() == b"a: 1\n"


def test_the_flood_stops_at_the_bound_not_at_the_end(two_repos, tmp_path):
    """An endless answer ends for the client when it passes the bound: the server's writes
    fail soon after (the bytes in flight are the sockets' buffers)."""
    with FloodProxy(two_repos.api_url, LISTING) as proxy:
        forge = forge_on(two_repos, proxy.api_url, tmp_path, 4 * MIB)
        with pytest.raises(ForgeError, match="stopped reading there"):
            within(30, forge.open(BOOM, PullRequestConfig()).pull_requests)
    assert 4 * MIB <= proxy.sent < 4 * MIB + 32 * MIB


def large_pull(gh: GitHubEmulator, full_name: str, body_chars: int) -> None:
    """A bot pull request whose body is ``body_chars`` long."""
    repo = gh.repository(full_name)
    main = repo.git.ref("main")
    assert main is not None
    repo.git.set_ref("tortoise-bot/prod/shop/web", main)
    gh.open_pull(full_name, "tortoise-bot/prod/shop/web", body="y" * body_chars)


def test_an_answer_under_the_bound_is_read_and_one_over_it_is_not(two_repos, tmp_path):
    gh = two_repos
    large_pull(gh, FINE, 65_000)  # the listing's answer: about 67 KB
    roomy = forge_on(gh, gh.api_url, tmp_path / "roomy", 128 * 1024)
    (pull,) = roomy.open(FINE, PullRequestConfig()).pull_requests()
    assert pull.body == "y" * 65_000
    tight = forge_on(gh, gh.api_url, tmp_path / "tight", 64 * 1024)
    with pytest.raises(ForgeError, match=r"larger than github\.max_response_bytes \(65,536"):
        tight.open(FINE, PullRequestConfig()).pull_requests()


def test_the_bound_reaches_every_connection_the_client_derives(github_emulator, tmp_path):
    """An App's installation tokens are asked for by a requester PyGithub derives from the
    integration's; the bound travels with the retry policy it copies."""
    gh = github_emulator
    app = gh.create_app(8)
    config = settings(gh, max_response_bytes=5 * MIB)
    forge = GitHubForge(config, AppCredentials(8, app.private_key_pem), workdir=tmp_path)
    assert forge._integration is not None
    derived = forge._integration.requester.withAuth(None)
    assert derived.kwargs["retry"].max_response_bytes == 5 * MIB
    retry = make_retry(GitHubConfig(max_response_bytes=5 * MIB))
    assert isinstance(retry, BoundedRetry)
    assert retry.new(total=1).max_response_bytes == 5 * MIB  # urllib3's copies keep it


def test_a_pygithub_that_opens_connections_elsewhere_is_refused(monkeypatch):
    """Should PyGithub stop naming its connection classes where the bound is installed, the
    bot refuses to start its GitHub client rather than read answers unbounded."""
    monkeypatch.setattr(Requester, "_Requester__httpsConnectionClass", object)
    with pytest.raises(RuntimeError, match="the bound on GitHub's answers cannot be installed"):
        make_retry(GitHubConfig())
