"""The emulator: one in-process HTTP server for GitHub's REST API and git smart HTTP.

``/api/v3/...`` is the REST API (as on GitHub Enterprise Server); ``/{owner}/{name}.git/...``
is git through ``git http-backend`` on real bare repositories. Every REST exchange is checked
against GitHub's OpenAPI description (``openapi.py``); a mismatch answers 500 and is kept in
``violations``, and leaving the context manager raises ``EmulatorViolation``.
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import re
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.github import objects
from tests.support.github.gitrepo import BareRepository, FileContent, run_http_backend
from tests.support.github.openapi import validate_request, validate_response

API_PREFIX = "/api/v3"
"""REST prefix, as on GitHub Enterprise Server."""

MAX_BODY_CHARS = 65536
"""GitHub's limit on issue and pull-request bodies (422 'body is too long')."""

MAX_PER_PAGE = 100

RATE_LIMIT = 5000
"""Primary rate limit reported in ``X-RateLimit-Limit`` (GitHub's per-token hourly budget)."""


class EmulatorViolation(AssertionError):  # noqa: N818  (reads as a test failure)
    """A request or response did not match GitHub's OpenAPI description."""


@dataclass(frozen=True, slots=True)
class Call:
    """One recorded exchange: ``kind`` is ``rest`` or ``git``; ``path`` has no ``/api/v3``."""

    kind: str
    method: str
    path: str
    query: dict[str, str]
    status: int
    body: Any = None
    login: str | None = None

    @property
    def is_write(self) -> bool:
        return self.kind == "rest" and self.method != "GET"

    def __str__(self) -> str:
        q = f"?{urlencode(self.query)}" if self.query else ""
        return f"{self.method} {self.path}{q} -> {self.status}"


@dataclass(slots=True)
class Fault:
    """An injected answer for matching calls (``times`` left; None = forever)."""

    method: str
    path_regex: str
    status: int
    headers: dict[str, str]
    body: dict[str, Any]
    times: int | None


@dataclass(slots=True)
class Gate:
    """Calls held until ``barrier.parties`` of them have arrived (``GitHubEmulator.gate``)."""

    method: str
    path_regex: str
    barrier: threading.Barrier
    timeout_s: float
    arrived: int = 0
    met: bool = False
    """True once the parties met (False: the wait timed out)."""

    def matches(self, method: str, path: str) -> bool:
        return self.method == method and re.search(self.path_regex, path) is not None


@dataclass(slots=True)
class Comment:
    id: int
    body: str
    login: str
    created: datetime


@dataclass(slots=True)
class Issue:
    """An issue or the issue half of a pull request."""

    number: int
    id: int
    title: str
    body: str | None
    login: str
    state: str = "open"
    labels: list[str] = field(default_factory=list)
    assignees: list[str] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    created: datetime = field(default_factory=lambda: datetime.now(UTC))
    updated: datetime = field(default_factory=lambda: datetime.now(UTC))
    closed: datetime | None = None
    state_reason: str | None = None
    pull: Pull | None = None


@dataclass(slots=True)
class Pull:
    head: str
    base: str
    head_sha: str
    base_sha: str
    draft: bool = False
    merged: bool = False
    merged_at: datetime | None = None
    merge_commit_sha: str | None = None
    merged_by: str | None = None
    reviewers: list[str] = field(default_factory=list)
    teams: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Repository:
    owner: str
    name: str
    id: int
    default_branch: str
    git: BareRepository
    created: datetime
    issues: dict[int, Issue] = field(default_factory=dict)
    labels: dict[str, int] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass(slots=True)
class App:
    app_id: int
    private_key_pem: str
    public_key_pem: str
    installations: dict[int, tuple[str, set[str]]] = field(default_factory=dict)
    """installation id -> (account login, repository full names)."""


class _Reply(Exception):  # noqa: N818  (an answer, not an error)
    """Raised by handlers to answer with an error status."""

    def __init__(
        self,
        status: int,
        message: str,
        errors: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = objects.error(message, status, errors)
        self.headers = headers or {}


Handler = Callable[["_Request"], tuple[Any, ...]]


@dataclass(slots=True)
class _Request:
    method: str
    path: str
    query: dict[str, str]
    json: Any
    login: str
    match: re.Match[str]
    token: str

    def arg(self, name: str) -> str:
        return self.match.group(name)


class GitHubEmulator:
    """A local GitHub: REST under ``api_url``, git under ``git_url(owner, name)``.

    Use as a context manager (or the ``github_emulator`` fixture)::

        with GitHubEmulator() as gh:
            gh.create_repository("octo", "shop", {"app.yaml": b"..."})
            Github(base_url=gh.api_url, auth=Auth.Token(gh.token), ...)
            assert [str(c) for c in gh.rest_calls()] == [...]
    """

    def __init__(
        self, root: Path | None = None, *, token: str = "ghp_emulator", login: str = "tortoise-bot"
    ) -> None:
        self._tmp = (
            None if root is not None else tempfile.TemporaryDirectory(prefix="github-emulator-")
        )
        self.root = Path(root or self._tmp.name)  # type: ignore[union-attr]
        self.lock = threading.RLock()
        self.token = token
        self.login = login
        self.tokens: dict[str, str] = {token: login}
        """Personal access tokens: token -> login."""
        self.installation_tokens: dict[str, tuple[int, datetime]] = {}
        self.installation_token_lifetime = timedelta(hours=1)
        self.repos: dict[str, Repository] = {}
        self.apps: dict[int, App] = {}
        self.users: dict[str, int] = {}
        self.teams: dict[str, int] = {}
        self.calls: list[Call] = []
        self.violations: list[str] = []
        self.faults: list[Fault] = []
        self.hooks: list[tuple[str, str, Callable[[GitHubEmulator], None]]] = []
        self.after_hooks: list[tuple[Callable[[Call], bool], Callable[[Call], None]]] = []
        self.gates: list[Gate] = []
        self.rate_limit_remaining: int | None = None
        """Primary budget left; None = unlimited. At 0 every REST call answers 403."""
        self.rate_limit_reset_s = 3600.0
        self.rate_limit_refill: int | None = None
        """Budget restored when the window resets; None = the budget never comes back."""
        self._rate_reset_at: float | None = None
        self.secondary_write_limit: tuple[int, float] | None = None
        """(writes, seconds): more writes than this in the window answer 403 with ``Retry-After``
        (GitHub's secondary limit on content creation); None = no such limit."""
        self._recent_writes: list[float] = []
        """Seconds until the reported ``X-RateLimit-Reset``."""
        self.validate = True
        self._ids = itertools.count(1000)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._routes: list[tuple[str, re.Pattern[str], str, Handler]] = []
        self._register_routes()

    # ------------------------------------------------------------------ life cycle

    def start(self) -> GitHubEmulator:
        emulator = self

        class RequestHandler(_HTTPHandler):
            gh = emulator

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), RequestHandler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="github-emulator", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> GitHubEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.assert_valid()

    def assert_valid(self) -> None:
        """Raise ``EmulatorViolation`` when any exchange broke GitHub's OpenAPI description."""
        if self.violations:
            raise EmulatorViolation("\n".join(self.violations))

    @property
    def base_url(self) -> str:
        assert self._server is not None, "emulator not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def api_url(self) -> str:
        """The REST base URL to give PyGithub (``Github(base_url=...)``)."""
        return self.base_url + API_PREFIX

    @property
    def web_url(self) -> str:
        return self.base_url

    def git_url(self, owner: str, name: str) -> str:
        return f"{self.base_url}/{owner}/{name}.git"

    # ------------------------------------------------------------------ set-up helpers

    def create_repository(
        self,
        owner: str,
        name: str,
        files: Mapping[str, FileContent],
        *,
        default_branch: str = "main",
    ) -> Repository:
        """A repository whose default branch holds ``files`` in one commit."""
        with self.lock:
            bare = BareRepository.create(
                self.root / owner / f"{name}.git", files, default_branch=default_branch
            )
            repo = Repository(owner, name, next(self._ids), default_branch, bare, datetime.now(UTC))
            self.repos[repo.full_name] = repo
            self._user_id(owner)
            return repo

    def repository(self, full_name: str) -> Repository:
        return self.repos[full_name]

    def add_token(self, token: str, login: str) -> None:
        with self.lock:
            self.tokens[token] = login

    def create_app(self, app_id: int) -> App:
        """A GitHub App with a fresh RSA key; its ``private_key_pem`` is what the bot is given."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        private = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        public = (
            key.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )
        app = App(app_id, private, public)
        with self.lock:
            self.apps[app_id] = app
        return app

    def install_app(
        self, app_id: int, installation_id: int, account: str, repositories: list[str]
    ) -> None:
        with self.lock:
            self.apps[app_id].installations[installation_id] = (account, set(repositories))
            self._user_id(account)

    def expire_installation_tokens(self) -> int:
        """Every installation token issued so far stops working now, whatever ``expires_at``
        said (a token that expired early for the client: its clock is behind GitHub's, or the
        token was revoked). Returns how many were still valid."""
        now = _now()
        with self.lock:
            valid = [t for t, (_, expires) in self.installation_tokens.items() if expires > now]
            for token in valid:
                installation_id, _ = self.installation_tokens[token]
                self.installation_tokens[token] = (installation_id, now)
        return len(valid)

    def before(
        self, method: str, path_regex: str, action: Callable[[GitHubEmulator], None]
    ) -> None:
        """Run ``action(emulator)`` once, just before the next matching REST call is handled.

        Simulates what happens in between: another run or a human acting at that moment.
        """
        with self.lock:
            self.hooks.append((method.upper(), path_regex, action))

    def after(self, matches: Callable[[Call], bool], action: Callable[[Call], None]) -> None:
        """Run ``action(call)`` once, after the first REST or git call for which
        ``matches(call)`` holds has been handled and before its answer is sent.

        The server has done what was asked; the client has not heard back. A test kills the
        client here to crash it right after a write (a git push is the call whose ``path``
        ends in ``git-receive-pack``).
        """
        with self.lock:
            self.after_hooks.append((matches, action))

    def gate(
        self, method: str, path_regex: str, *, parties: int = 2, timeout_s: float = 20.0
    ) -> Gate:
        """Hold the first ``parties`` matching calls (REST or git) until all have arrived, then
        let them through together: concurrent clients meet at that call. After ``timeout_s``
        the waiting calls go on alone (``Gate.met`` stays False)."""
        gate = Gate(method.upper(), path_regex, threading.Barrier(parties), timeout_s)
        with self.lock:
            self.gates.append(gate)
        return gate

    def _pass_gates(self, method: str, path: str) -> None:
        with self.lock:
            gate = next((g for g in self.gates if g.matches(method, path)), None)
            if gate is None:
                return
            gate.arrived += 1
            if gate.arrived >= gate.barrier.parties:
                self.gates.remove(gate)
        try:
            gate.barrier.wait(gate.timeout_s)
            gate.met = True
        except threading.BrokenBarrierError:
            pass

    def _run_after_hooks(self, call: Call) -> None:
        with self.lock:
            hook = next((h for h in self.after_hooks if h[0](call)), None)
            if hook is not None:
                self.after_hooks.remove(hook)
        if hook is not None:
            hook[1](call)

    def open_pull(
        self,
        full_name: str,
        head: str,
        *,
        title: str = "Opened elsewhere",
        body: str = "",
        login: str | None = None,
    ) -> int:
        """Open a pull request from ``head`` to the default branch as ``login``; its number."""
        with self.lock:
            repo = self.repos[full_name]
            head_sha, base_sha = repo.git.ref(head), repo.git.ref(repo.default_branch)
            assert head_sha and base_sha
            issue = self._new_issue(repo, title, body, login or self.login)
            issue.pull = Pull(head, repo.default_branch, head_sha, base_sha)
            return issue.number

    def fail(
        self,
        method: str,
        path_regex: str,
        status: int,
        *,
        times: int | None = 1,
        headers: dict[str, str] | None = None,
        message: str | None = None,
    ) -> None:
        """Answer the next ``times`` matching REST calls with ``status`` (``re.search`` on the path)."""
        default = {
            403: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
            429: "Too many requests",
        }.get(status, "Server Error")
        with self.lock:
            self.faults.append(
                Fault(
                    method.upper(),
                    path_regex,
                    status,
                    headers or {},
                    objects.error(message or default, status),
                    times,
                )
            )

    # ------------------------------------------------------------------ what happened

    def rest_calls(self) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.kind == "rest"]

    def git_calls(self) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.kind == "git"]

    def writes(self) -> list[Call]:
        return [c for c in self.rest_calls() if c.is_write]

    def reads(self) -> list[Call]:
        return [c for c in self.rest_calls() if not c.is_write]

    def reset_calls(self) -> None:
        with self.lock:
            self.calls.clear()

    # ------------------------------------------------------------------ acting as a human

    def pulls(self, full_name: str, *, state: str | None = None) -> list[Issue]:
        with self.lock:
            repo = self.repos[full_name]
            self._refresh(repo)
            return [
                i for i in repo.issues.values() if i.pull and (state is None or i.state == state)
            ]

    def issues(self, full_name: str) -> list[Issue]:
        with self.lock:
            return [i for i in self.repos[full_name].issues.values() if i.pull is None]

    def close(self, full_name: str, number: int, login: str = "reviewer") -> None:
        """A human closes issue or pull request ``number`` without merging."""
        with self.lock:
            issue = self.repos[full_name].issues[number]
            issue.state, issue.closed, issue.updated = "closed", _now(), _now()
            issue.state_reason = "not_planned" if issue.pull is None else None

    def merge(
        self, full_name: str, number: int, login: str = "reviewer", *, at: datetime | None = None
    ) -> str:
        """A human merges pull request ``number`` (merge commit on the base branch), at ``at``
        (default now) as GitHub's ``merged_at`` and ``closed_at`` show it."""
        with self.lock:
            repo = self.repos[full_name]
            issue = repo.issues[number]
            assert issue.pull is not None and issue.state == "open"
            sha = repo.git.merge(
                issue.pull.base,
                issue.pull.head,
                f"Merge pull request #{number}",
                (login, f"{login}@example.com"),
            )
            assert sha, "merge conflict"
            when = at or _now()
            issue.state, issue.closed, issue.updated = "closed", when, _now()
            issue.pull.merged, issue.pull.merged_at, issue.pull.merge_commit_sha = True, when, sha
            issue.pull.merged_by = login
            issue.pull.head_sha = repo.git.ref(issue.pull.head) or issue.pull.head_sha
            return sha

    def push(
        self,
        full_name: str,
        branch: str,
        files: dict[str, bytes | None],
        *,
        message: str = "Edit by a human",
        author: tuple[str, str] = ("A Human", "human@example.com"),
    ) -> str:
        """A human (or another tool) commits ``files`` on ``branch`` (created from the default branch)."""
        with self.lock:
            repo = self.repos[full_name]
            parent = repo.git.ref(branch) or repo.git.ref(repo.default_branch)
            return repo.git.commit(branch, files, message=message, author=author, parent=parent)

    def edit_body(self, full_name: str, number: int, body: str) -> None:
        with self.lock:
            issue = self.repos[full_name].issues[number]
            issue.body, issue.updated = body, _now()

    # ------------------------------------------------------------------ internals

    def _rate_window(self) -> float:
        """Unix time the current rate-limit window resets (``X-RateLimit-Reset``)."""
        now = time.time()
        if self._rate_reset_at is None or now >= self._rate_reset_at:
            if self._rate_reset_at is not None and self.rate_limit_refill is not None:
                self.rate_limit_remaining = self.rate_limit_refill
            self._rate_reset_at = now + self.rate_limit_reset_s
        return self._rate_reset_at

    def _secondary_limit(self, method: str) -> None:
        """Raise GitHub's secondary-rate-limit answer when writes come too fast."""
        if self.secondary_write_limit is None or method == "GET":
            return
        limit, window_s = self.secondary_write_limit
        now = time.time()
        self._recent_writes = [t for t in self._recent_writes if now - t < window_s]
        if len(self._recent_writes) >= limit:
            wait_s = math.ceil(window_s - (now - self._recent_writes[0]))
            raise _Reply(
                403,
                "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
                headers={"Retry-After": str(max(wait_s, 1))},
            )
        self._recent_writes.append(now)

    def _user_id(self, login: str) -> int:
        if login not in self.users:
            self.users[login] = next(self._ids)
        return self.users[login]

    def _user(self, login: str) -> dict[str, Any]:
        kind = "Bot" if login.endswith("[bot]") else "User"
        return objects.user(self.web_url, self.api_url, login, self._user_id(login), kind)

    def _repo(self, req: _Request) -> Repository:
        repo = self.repos.get(f"{req.arg('owner')}/{req.arg('repo')}")
        if repo is None or not self._may_access(req, repo):
            raise _Reply(404, "Not Found")
        self._refresh(repo)
        return repo

    def _may_access(self, req: _Request, repo: Repository) -> bool:
        if req.token in self.installation_tokens:
            installation_id, _ = self.installation_tokens[req.token]
            return any(
                repo.full_name in app.installations.get(installation_id, ("", set()))[1]
                for app in self.apps.values()
            )
        return True

    def _refresh(self, repo: Repository) -> None:
        """Follow branch moves into open pull requests; a deleted head branch closes its PR."""
        for issue in repo.issues.values():
            pull = issue.pull
            if pull is None or issue.state != "open":
                continue
            head = repo.git.ref(pull.head)
            if head is None:
                issue.state, issue.closed = "closed", _now()
            else:
                pull.head_sha = head
            pull.base_sha = repo.git.ref(pull.base) or pull.base_sha

    def _issue_json(self, repo: Repository, issue: Issue) -> dict[str, Any]:
        obj = objects.issue(
            self.web_url,
            self.api_url,
            repo.full_name,
            number=issue.number,
            issue_id=issue.id,
            title=issue.title,
            body=issue.body,
            author=self._user(issue.login),
            state=issue.state,
            labels=[
                objects.label(self.api_url, repo.full_name, n, repo.labels[n], "ededed")
                for n in issue.labels
            ],
            assignees=[self._user(a) for a in issue.assignees],
            comments=len(issue.comments),
            created=issue.created,
            updated=issue.updated,
            closed=issue.closed,
            is_pull=issue.pull is not None,
            state_reason=issue.state_reason,
        )
        if issue.pull is not None and issue.pull.merged_at is not None:
            obj["pull_request"]["merged_at"] = objects.iso(issue.pull.merged_at)
        return obj

    def _repo_json(self, repo: Repository) -> dict[str, Any]:
        return objects.repository(
            self.web_url,
            self.api_url,
            self._user(repo.owner),
            repo.name,
            repo.id,
            repo.default_branch,
            repo.created,
        )

    def _pull_json(self, repo: Repository, issue: Issue, *, simple: bool) -> dict[str, Any]:
        pull = issue.pull
        assert pull is not None
        mergeable = (
            None if simple or issue.state != "open" else repo.git.mergeable(pull.base, pull.head)
        )
        commits = 0 if simple else len(repo.git.commits_between(pull.base_sha, pull.head_sha))
        return objects.pull_request(
            self.web_url,
            self.api_url,
            repo.full_name,
            simple=simple,
            issue_obj=self._issue_json(repo, issue),
            repo_obj=self._repo_json(repo),
            head_ref=pull.head,
            head_sha=pull.head_sha,
            base_ref=pull.base,
            base_sha=pull.base_sha,
            draft=pull.draft,
            merged=pull.merged,
            merged_at=pull.merged_at,
            merge_commit_sha=pull.merge_commit_sha,
            merged_by=self._user(pull.merged_by) if pull.merged_by else None,
            mergeable=mergeable,
            reviewers=[self._user(r) for r in pull.reviewers],
            teams=[
                objects.team(self.api_url, repo.owner, t, self.teams.setdefault(t, next(self._ids)))
                for t in pull.teams
            ],
            commits=commits,
        )

    def _paginate(self, req: _Request, items: list[Any]) -> tuple[int, Any, dict[str, str]]:
        per_page = min(int(req.query.get("per_page", 30)), MAX_PER_PAGE)
        page = max(int(req.query.get("page", 1)), 1)
        last = max((len(items) + per_page - 1) // per_page, 1)
        links = []

        def url(p: int) -> str:
            return f"{self.api_url}{req.path}?{urlencode({**req.query, 'page': str(p), 'per_page': str(per_page)})}"

        if page < last:
            links += [f'<{url(page + 1)}>; rel="next"', f'<{url(last)}>; rel="last"']
        if page > 1:
            links += [f'<{url(1)}>; rel="first"', f'<{url(page - 1)}>; rel="prev"']
        headers = {"Link": ", ".join(links)} if links else {}
        return 200, items[(page - 1) * per_page : page * per_page], headers

    # ------------------------------------------------------------------ routing

    def _register_routes(self) -> None:
        R = "/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
        table: list[tuple[str, str, str, Handler]] = [
            ("GET", "/user", "/user", self._get_user),
            ("GET", "/rate_limit", "/rate_limit", self._get_rate_limit),
            ("GET", "/user/repos", "/user/repos", self._list_user_repos),
            ("GET", "/app/installations", "/app/installations", self._list_installations),
            (
                "GET",
                "/installation/repositories",
                "/installation/repositories",
                self._list_installation_repos,
            ),
            ("GET", R, "/repos/{owner}/{repo}", self._get_repo),
            (
                "GET",
                R + "/installation",
                "/repos/{owner}/{repo}/installation",
                self._get_repo_installation,
            ),
            (
                "POST",
                "/app/installations/(?P<id>[0-9]+)/access_tokens",
                "/app/installations/{installation_id}/access_tokens",
                self._post_access_token,
            ),
            ("GET", R + "/pulls", "/repos/{owner}/{repo}/pulls", self._list_pulls),
            ("POST", R + "/pulls", "/repos/{owner}/{repo}/pulls", self._create_pull),
            (
                "GET",
                R + "/pulls/(?P<n>[0-9]+)",
                "/repos/{owner}/{repo}/pulls/{pull_number}",
                self._get_pull,
            ),
            (
                "PATCH",
                R + "/pulls/(?P<n>[0-9]+)",
                "/repos/{owner}/{repo}/pulls/{pull_number}",
                self._update_pull,
            ),
            (
                "GET",
                R + "/pulls/(?P<n>[0-9]+)/commits",
                "/repos/{owner}/{repo}/pulls/{pull_number}/commits",
                self._pull_commits,
            ),
            (
                "POST",
                R + "/pulls/(?P<n>[0-9]+)/requested_reviewers",
                "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers",
                self._request_reviewers,
            ),
            ("GET", R + "/issues", "/repos/{owner}/{repo}/issues", self._list_issues),
            ("POST", R + "/issues", "/repos/{owner}/{repo}/issues", self._create_issue),
            (
                "GET",
                R + "/issues/(?P<n>[0-9]+)",
                "/repos/{owner}/{repo}/issues/{issue_number}",
                self._get_issue,
            ),
            (
                "PATCH",
                R + "/issues/(?P<n>[0-9]+)",
                "/repos/{owner}/{repo}/issues/{issue_number}",
                self._update_issue,
            ),
            (
                "GET",
                R + "/issues/(?P<n>[0-9]+)/comments",
                "/repos/{owner}/{repo}/issues/{issue_number}/comments",
                self._list_comments,
            ),
            (
                "POST",
                R + "/issues/(?P<n>[0-9]+)/comments",
                "/repos/{owner}/{repo}/issues/{issue_number}/comments",
                self._create_comment,
            ),
            (
                "PATCH",
                R + "/issues/comments/(?P<c>[0-9]+)",
                "/repos/{owner}/{repo}/issues/comments/{comment_id}",
                self._update_comment,
            ),
            (
                "POST",
                R + "/issues/(?P<n>[0-9]+)/labels",
                "/repos/{owner}/{repo}/issues/{issue_number}/labels",
                self._add_labels,
            ),
            (
                "POST",
                R + "/issues/(?P<n>[0-9]+)/assignees",
                "/repos/{owner}/{repo}/issues/{issue_number}/assignees",
                self._add_assignees,
            ),
            (
                "GET",
                R + "/git/ref/heads/(?P<branch>.+)",
                "/repos/{owner}/{repo}/git/ref/{ref}",
                self._get_ref,
            ),
            ("POST", R + "/git/refs", "/repos/{owner}/{repo}/git/refs", self._create_ref),
            (
                "DELETE",
                R + "/git/refs/heads/(?P<branch>.+)",
                "/repos/{owner}/{repo}/git/refs/{ref}",
                self._delete_ref,
            ),
        ]
        self._routes = [(m, re.compile(f"^{p}$"), pattern, h) for m, p, pattern, h in table]

    def route(self, method: str, path: str) -> tuple[str, re.Match[str], Handler] | None:
        for m, regex, pattern, handler in self._routes:
            match = regex.match(path)
            if match and m == method:
                return pattern, match, handler
        return None

    def authenticate(self, header: str, path: str) -> tuple[str, str] | None:
        """(login, token) for an ``Authorization`` header, None when it is not valid here."""
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "basic":
            value = base64.b64decode(value).decode(errors="replace").partition(":")[2]
            scheme = "token"
        if scheme.lower() == "bearer" and value.count(".") == 2:
            return self._authenticate_jwt(value, path)
        if value in self.tokens:
            return self.tokens[value], value
        if value in self.installation_tokens:
            installation_id, expires = self.installation_tokens[value]
            if expires > _now():
                return f"app-installation-{installation_id}[bot]", value
        return None

    def _authenticate_jwt(self, token: str, path: str) -> tuple[str, str] | None:
        if not path.startswith("/app") and not re.match(r"^/repos/[^/]+/[^/]+/installation$", path):
            return None  # a JWT only opens the App's own endpoints
        try:
            claims = jwt.decode(token, options={"verify_signature": False})
            app = self.apps.get(int(claims["iss"]))
            if app is None:
                return None
            jwt.decode(token, app.public_key_pem, algorithms=["RS256"])
        except (jwt.PyJWTError, KeyError, ValueError):
            return None
        return f"app-{app.app_id}[bot]", token

    # ------------------------------------------------------------------ handlers

    def _get_user(self, req: _Request) -> tuple[int, Any]:
        obj = objects.user(self.web_url, self.api_url, req.login, self._user_id(req.login))
        obj.update(
            name=req.login,
            company=None,
            blog="",
            location=None,
            email=None,
            hireable=None,
            bio=None,
            twitter_username=None,
            public_repos=0,
            public_gists=0,
            followers=0,
            following=0,
            created_at="2020-01-01T00:00:00Z",
            updated_at="2020-01-01T00:00:00Z",
        )
        return 200, obj

    def _get_rate_limit(self, req: _Request) -> tuple[int, Any]:
        remaining = RATE_LIMIT if self.rate_limit_remaining is None else self.rate_limit_remaining
        core = {
            "limit": RATE_LIMIT,
            "remaining": remaining,
            "reset": int(_now().timestamp() + self.rate_limit_reset_s),
            "used": RATE_LIMIT - remaining,
        }
        return 200, {"resources": {"core": core, "search": core}, "rate": core}

    def _list_user_repos(self, req: _Request) -> tuple[int, Any, dict[str, str]]:
        repos = [r for _, r in sorted(self.repos.items()) if self._may_access(req, r)]
        return self._paginate(req, [objects.short_repository(self._repo_json(r)) for r in repos])

    def _app_of(self, req: _Request) -> App:
        app = None
        if req.login.startswith("app-") and not req.login.startswith("app-installation-"):
            app = self.apps.get(int(req.login.removeprefix("app-").removesuffix("[bot]")))
        if app is None:
            raise _Reply(401, "A JSON web token could not be decoded")
        return app

    def _list_installations(self, req: _Request) -> tuple[int, Any, dict[str, str]]:
        app = self._app_of(req)
        items = [
            objects.installation(self.api_url, i, app.app_id, self._user(account))
            for i, (account, _) in sorted(app.installations.items())
        ]
        return self._paginate(req, items)

    def _list_installation_repos(self, req: _Request) -> tuple[int, Any]:
        if req.token not in self.installation_tokens:
            raise _Reply(403, "This endpoint requires an installation token")
        repos = [r for _, r in sorted(self.repos.items()) if self._may_access(req, r)]
        per_page = min(int(req.query.get("per_page", 30)), MAX_PER_PAGE)
        page = max(int(req.query.get("page", 1)), 1)
        chunk = repos[(page - 1) * per_page : page * per_page]
        return 200, {
            "total_count": len(repos),
            "repositories": [objects.short_repository(self._repo_json(r)) for r in chunk],
        }

    def _get_repo(self, req: _Request) -> tuple[int, Any]:
        return 200, self._repo_json(self._repo(req))

    def _get_repo_installation(self, req: _Request) -> tuple[int, Any]:
        full = f"{req.arg('owner')}/{req.arg('repo')}"
        app = (
            self.apps.get(int(req.login.removeprefix("app-").removesuffix("[bot]")))
            if req.login.startswith("app-")
            else None
        )
        if app is not None:
            for installation_id, (account, repos) in app.installations.items():
                if full in repos:
                    return 200, objects.installation(
                        self.api_url, installation_id, app.app_id, self._user(account)
                    )
        raise _Reply(404, "Not Found")

    def _post_access_token(self, req: _Request) -> tuple[int, Any]:
        app = (
            self.apps.get(int(req.login.removeprefix("app-").removesuffix("[bot]")))
            if req.login.startswith("app-")
            else None
        )
        installation_id = int(req.arg("id"))
        if app is None or installation_id not in app.installations:
            raise _Reply(404, "Not Found")
        token = "ghs_" + secrets.token_hex(18)
        expires = _now() + self.installation_token_lifetime
        self.installation_tokens[token] = (installation_id, expires)
        return 201, objects.installation_token(token, expires)

    def _list_pulls(self, req: _Request) -> tuple[int, Any, dict[str, str]]:
        repo = self._repo(req)
        state = req.query.get("state", "open")
        head = req.query.get("head")
        base = req.query.get("base")
        found = []
        for issue in repo.issues.values():
            pull = issue.pull
            if pull is None or (state != "all" and issue.state != state):
                continue
            if head and head != f"{repo.owner}:{pull.head}" and head != pull.head:
                continue
            if base and base != pull.base:
                continue
            found.append(issue)
        sort = req.query.get("sort", "created")
        direction = req.query.get("direction", "desc" if sort == "created" else "asc")
        if sort == "updated":
            found.sort(key=lambda i: (i.updated, i.number), reverse=direction == "desc")
        else:
            found.sort(key=lambda i: (i.created, i.number), reverse=direction == "desc")
        return self._paginate(req, [self._pull_json(repo, i, simple=True) for i in found])

    def _create_pull(self, req: _Request) -> tuple[int, Any]:
        repo = self._repo(req)
        body = req.json or {}
        head = str(body["head"]).split(":", 1)[-1]
        base = str(body["base"])
        head_sha, base_sha = repo.git.ref(head), repo.git.ref(base)
        if head_sha is None:
            raise _Reply(
                422,
                "Validation Failed",
                [{"resource": "PullRequest", "field": "head", "code": "invalid"}],
            )
        if base_sha is None:
            raise _Reply(
                422,
                "Validation Failed",
                [{"resource": "PullRequest", "field": "base", "code": "invalid"}],
            )
        for issue in repo.issues.values():
            if (
                issue.pull
                and issue.state == "open"
                and issue.pull.head == head
                and issue.pull.base == base
            ):
                raise _Reply(
                    422,
                    "Validation Failed",
                    [
                        {
                            "resource": "PullRequest",
                            "code": "custom",
                            "message": f"A pull request already exists for {repo.owner}:{head}.",
                        }
                    ],
                )
        if not repo.git.commits_between(base_sha, head_sha):
            raise _Reply(
                422,
                "Validation Failed",
                [
                    {
                        "resource": "PullRequest",
                        "code": "custom",
                        "message": f"No commits between {base} and {head}",
                    }
                ],
            )
        self._check_body(body.get("body"))
        issue = self._new_issue(repo, str(body.get("title", "")), body.get("body"), req.login)
        issue.pull = Pull(head, base, head_sha, base_sha, draft=bool(body.get("draft", False)))
        return 201, self._pull_json(repo, issue, simple=False)

    def _new_issue(self, repo: Repository, title: str, body: str | None, login: str) -> Issue:
        number = max(repo.issues, default=0) + 1
        issue = Issue(number, next(self._ids), title, body, login)
        repo.issues[number] = issue
        return issue

    def _check_body(self, body: Any) -> None:
        if isinstance(body, str) and len(body) > MAX_BODY_CHARS:
            raise _Reply(
                422,
                "Validation Failed",
                [
                    {
                        "resource": "Issue",
                        "field": "body",
                        "code": "custom",
                        "message": f"body is too long (maximum is {MAX_BODY_CHARS} characters)",
                    }
                ],
            )

    def _pull_issue(self, req: _Request) -> tuple[Repository, Issue]:
        repo = self._repo(req)
        issue = repo.issues.get(int(req.arg("n")))
        if issue is None or issue.pull is None:
            raise _Reply(404, "Not Found")
        return repo, issue

    def _get_pull(self, req: _Request) -> tuple[int, Any]:
        repo, issue = self._pull_issue(req)
        return 200, self._pull_json(repo, issue, simple=False)

    def _update_pull(self, req: _Request) -> tuple[int, Any]:
        repo, issue = self._pull_issue(req)
        body = req.json or {}
        self._check_body(body.get("body"))
        self._apply_issue_edit(repo, issue, body)
        return 200, self._pull_json(repo, issue, simple=False)

    def _apply_issue_edit(self, repo: Repository, issue: Issue, body: dict[str, Any]) -> None:
        if "title" in body:
            issue.title = str(body["title"])
        if "body" in body:
            issue.body = body["body"]
        if body.get("state") in ("open", "closed") and body["state"] != issue.state:
            if (
                body["state"] == "open"
                and issue.pull is not None
                and (issue.pull.merged or repo.git.ref(issue.pull.head) is None)
            ):
                raise _Reply(
                    422,
                    "Validation Failed",
                    [{"resource": "PullRequest", "field": "state", "code": "invalid"}],
                )
            issue.state = body["state"]
            issue.closed = _now() if issue.state == "closed" else None
            issue.state_reason = (
                body.get("state_reason") if issue.pull is None and issue.state == "closed" else None
            )
        if "labels" in body:
            issue.labels = [self._label(repo, str(n)) for n in body["labels"]]
        if "assignees" in body:
            issue.assignees = [str(a) for a in body["assignees"]]
        issue.updated = _now()

    def _pull_commits(self, req: _Request) -> tuple[int, Any, dict[str, str]]:
        repo, issue = self._pull_issue(req)
        assert issue.pull is not None
        infos = repo.git.commits_between(issue.pull.base_sha, issue.pull.head_sha)
        return self._paginate(
            req,
            [objects.commit(self.web_url, self.api_url, repo.full_name, c, None) for c in infos],
        )

    def _request_reviewers(self, req: _Request) -> tuple[int, Any]:
        repo, issue = self._pull_issue(req)
        assert issue.pull is not None
        body = req.json or {}
        for login in body.get("reviewers", []):
            if login == issue.login:
                raise _Reply(422, "Review cannot be requested from pull request author.")
            if login not in issue.pull.reviewers:
                issue.pull.reviewers.append(login)
        for slug in body.get("team_reviewers", []):
            if slug not in issue.pull.teams:
                issue.pull.teams.append(slug)
        return 201, self._pull_json(repo, issue, simple=True)

    def _list_issues(self, req: _Request) -> tuple[int, Any, dict[str, str]]:
        repo = self._repo(req)
        state = req.query.get("state", "open")
        labels = [x for x in req.query.get("labels", "").split(",") if x]
        creator = req.query.get("creator")
        found = [
            i
            for i in repo.issues.values()
            if (state == "all" or i.state == state)
            and all(label in i.labels for label in labels)
            and (creator is None or creator == i.login)
        ]
        found.sort(
            key=lambda i: (i.created, i.number),
            reverse=req.query.get("direction", "desc") == "desc",
        )
        return self._paginate(req, [self._issue_json(repo, i) for i in found])

    def _label(self, repo: Repository, name: str) -> str:
        if name not in repo.labels:
            repo.labels[name] = next(self._ids)
        return name

    def _create_issue(self, req: _Request) -> tuple[int, Any]:
        repo = self._repo(req)
        body = req.json or {}
        self._check_body(body.get("body"))
        issue = self._new_issue(repo, str(body["title"]), body.get("body"), req.login)
        issue.labels = [
            self._label(repo, str(n if isinstance(n, str) else n["name"]))
            for n in body.get("labels", [])
        ]
        issue.assignees = list(body.get("assignees", []))
        return 201, self._issue_json(repo, issue)

    def _issue(self, req: _Request) -> tuple[Repository, Issue]:
        repo = self._repo(req)
        issue = repo.issues.get(int(req.arg("n")))
        if issue is None:
            raise _Reply(404, "Not Found")
        return repo, issue

    def _get_issue(self, req: _Request) -> tuple[int, Any]:
        repo, issue = self._issue(req)
        return 200, self._issue_json(repo, issue)

    def _update_issue(self, req: _Request) -> tuple[int, Any]:
        repo, issue = self._issue(req)
        body = req.json or {}
        self._check_body(body.get("body"))
        self._apply_issue_edit(repo, issue, body)
        return 200, self._issue_json(repo, issue)

    def _list_comments(self, req: _Request) -> tuple[int, Any, dict[str, str]]:
        repo, issue = self._issue(req)
        return self._paginate(
            req,
            [
                objects.issue_comment(
                    self.web_url,
                    self.api_url,
                    repo.full_name,
                    issue.number,
                    c.id,
                    c.body,
                    self._user(c.login),
                    c.created,
                )
                for c in issue.comments
            ],
        )

    def _create_comment(self, req: _Request) -> tuple[int, Any]:
        repo, issue = self._issue(req)
        text = str((req.json or {})["body"])
        self._check_body(text)
        comment = Comment(next(self._ids), text, req.login, _now())
        issue.comments.append(comment)
        issue.updated = _now()
        return 201, objects.issue_comment(
            self.web_url,
            self.api_url,
            repo.full_name,
            issue.number,
            comment.id,
            text,
            self._user(req.login),
            comment.created,
        )

    def _update_comment(self, req: _Request) -> tuple[int, Any]:
        """``PATCH .../issues/comments/{id}``: the new ``body`` of an issue comment."""
        repo = self._repo(req)
        wanted = int(req.arg("c"))
        for issue in repo.issues.values():
            for comment in issue.comments:
                if comment.id != wanted:
                    continue
                text = str((req.json or {})["body"])
                self._check_body(text)
                comment.body = text
                issue.updated = _now()
                return 200, objects.issue_comment(
                    self.web_url,
                    self.api_url,
                    repo.full_name,
                    issue.number,
                    comment.id,
                    text,
                    self._user(comment.login),
                    comment.created,
                )
        raise _Reply(404, "Not Found")

    def _add_labels(self, req: _Request) -> tuple[int, Any]:
        repo, issue = self._issue(req)
        body = req.json
        names = body.get("labels", []) if isinstance(body, dict) else body
        for n in names or []:
            name = self._label(repo, str(n if isinstance(n, str) else n["name"]))
            if name not in issue.labels:
                issue.labels.append(name)
        return 200, [
            objects.label(self.api_url, repo.full_name, n, repo.labels[n], "ededed")
            for n in issue.labels
        ]

    def _add_assignees(self, req: _Request) -> tuple[int, Any]:
        repo, issue = self._issue(req)
        for login in (req.json or {}).get("assignees", []):
            if login not in issue.assignees:
                issue.assignees.append(login)
        return 201, self._issue_json(repo, issue)

    def _get_ref(self, req: _Request) -> tuple[int, Any]:
        repo = self._repo(req)
        sha = repo.git.ref(req.arg("branch"))
        if sha is None:
            raise _Reply(404, "Not Found")
        return 200, objects.git_ref(self.api_url, repo.full_name, req.arg("branch"), sha)

    def _create_ref(self, req: _Request) -> tuple[int, Any]:
        repo = self._repo(req)
        body = req.json or {}
        ref, sha = str(body["ref"]), str(body["sha"])
        if not ref.startswith("refs/heads/") or not repo.git.has_commit(sha):
            raise _Reply(422, "Validation Failed")
        branch = ref.removeprefix("refs/heads/")
        if repo.git.ref(branch) is not None:
            raise _Reply(422, "Reference already exists")
        repo.git.set_ref(branch, sha)
        return 201, objects.git_ref(self.api_url, repo.full_name, branch, sha)

    def _delete_ref(self, req: _Request) -> tuple[int, Any]:
        repo = self._repo(req)
        if repo.git.ref(req.arg("branch")) is None:
            raise _Reply(422, "Reference does not exist")
        repo.git.delete_ref(req.arg("branch"))
        self._refresh(repo)
        return 204, None

    # ------------------------------------------------------------------ one REST exchange

    def handle_rest(
        self, method: str, path: str, query: dict[str, str], raw: bytes, authorization: str
    ) -> tuple[int, dict[str, str], bytes]:
        """One REST exchange: gates, faults, auth, rate limit, request check, handler, response
        check, after-hooks."""
        self._pass_gates(method, path)
        headers = {"Content-Type": "application/json; charset=utf-8"}
        found = self.route(method, path)
        if self.validate and found is not None:
            problems = validate_request(
                self.base_url, method, API_PREFIX + path, query, raw or None
            )
            if problems:
                return self._violation(
                    Call("rest", method, path, dict(query), 500, raw.decode(errors="replace")),
                    problems,
                    headers,
                )
        login: str | None = None
        parsed: Any = json.loads(raw) if raw else None
        with self.lock:
            for hook in [h for h in self.hooks if h[0] == method and re.search(h[1], path)]:
                self.hooks.remove(hook)
                hook[2](self)
            try:
                fault = next(
                    (
                        f
                        for f in self.faults
                        if f.method == method and re.search(f.path_regex, path)
                    ),
                    None,
                )
                if fault is not None:
                    if fault.times is not None:
                        fault.times -= 1
                        if fault.times <= 0:
                            self.faults.remove(fault)
                    raise _Reply(fault.status, fault.body["message"], headers=fault.headers)
                who = self.authenticate(authorization, path)
                if who is None:
                    raise _Reply(401, "Bad credentials")
                login, token = who
                self._rate_window()
                self._secondary_limit(method)
                if self.rate_limit_remaining is not None:
                    if self.rate_limit_remaining <= 0:
                        raise _Reply(
                            403,
                            "API rate limit exceeded for user ID 1.",
                            headers={"X-RateLimit-Remaining": "0"},
                        )
                    self.rate_limit_remaining -= 1
                if found is None:
                    raise _Reply(404, "Not Found")
                result: Any = found[2](
                    _Request(method, path, query, parsed, login, found[1], token)
                )
                status, payload = result[0], result[1]
                if len(result) == 3:
                    headers.update(result[2])
            except _Reply as reply:
                status, payload = reply.status, reply.body
                headers.update(reply.headers)
            except Exception as exc:  # an emulator bug: fail the test, keep serving
                call = Call("rest", method, path, dict(query), 500, parsed, login)
                return self._violation(
                    call, [f"emulator error on {method} {path}: {exc!r}"], headers
                )
            remaining = (
                RATE_LIMIT if self.rate_limit_remaining is None else self.rate_limit_remaining
            )
            headers.setdefault("X-RateLimit-Limit", str(RATE_LIMIT))
            headers.setdefault("X-RateLimit-Remaining", str(remaining))
            headers.setdefault("X-RateLimit-Reset", str(math.ceil(self._rate_window())))
            headers.setdefault("X-RateLimit-Resource", "core")
            body = b"" if payload is None else json.dumps(payload).encode()
            call = Call("rest", method, path, dict(query), status, parsed, login)
            self.calls.append(call)
        self._run_after_hooks(call)
        if self.validate and found is not None:
            problems = validate_response(
                self.base_url, method, API_PREFIX + path, query, raw or None, status, body, found[0]
            )
            if problems:
                with self.lock:
                    self.violations.extend(problems)
                return (
                    500,
                    headers,
                    json.dumps(objects.error("emulator: " + "; ".join(problems), 500)).encode(),
                )
        return status, headers, body

    def _violation(
        self, call: Call, problems: list[str], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            self.calls.append(call)
            self.violations.extend(problems)
        return (
            500,
            headers,
            json.dumps(objects.error("emulator: " + "; ".join(problems), 500)).encode(),
        )


def _now() -> datetime:
    return datetime.now(UTC)


class _HTTPHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    gh: GitHubEmulator

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(
        self, status: int, headers: dict[str, str] | list[tuple[str, str]], body: bytes
    ) -> None:
        try:
            self.send_response(status)
            for key, value in headers.items() if isinstance(headers, dict) else headers:
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client is gone (killed by a test)

    def _dispatch(self) -> None:
        path, _, query = self.path.partition("?")
        body = self._body()
        if path.startswith(API_PREFIX + "/") or path == API_PREFIX:
            params = dict(parse_qsl(query, keep_blank_values=True))
            status, headers, data = self.gh.handle_rest(
                self.command,
                path.removeprefix(API_PREFIX),
                params,
                body,
                self.headers.get("Authorization", ""),
            )
            self._send(status, headers, data)
            return
        self._git(path, query, body)

    def _git(self, path: str, query: str, body: bytes) -> None:
        gh = self.gh
        gh._pass_gates(self.command, path)
        match = re.match(r"^/(?P<owner>[^/]+)/(?P<name>[^/]+)\.git/", path)
        repo = gh.repos.get(f"{match['owner']}/{match['name']}") if match else None
        who = gh.authenticate(self.headers.get("Authorization", ""), path)
        service = "git-receive-pack" if "git-receive-pack" in path + query else "git-upload-pack"
        if repo is None:
            status = 404
        elif who is None:
            status = 401
        else:
            status = 0
        if status:
            with gh.lock:
                gh.calls.append(
                    Call("git", self.command, path, {"service": service}, status, None, None)
                )
            challenge = {"WWW-Authenticate": 'Basic realm="GitHub"'} if status == 401 else {}
            self._send(status, challenge, b"")
            return
        assert repo is not None and who is not None
        status, headers, data = run_http_backend(
            gh.root,
            method=self.command,
            path=path,
            query=query,
            body=body,
            content_type=self.headers.get("Content-Type", ""),
            remote_user=who[0],
            content_encoding=self.headers.get("Content-Encoding"),
            git_protocol=self.headers.get("Git-Protocol"),
        )
        call = Call("git", self.command, path, {"service": service}, status, None, who[0])
        with gh.lock:
            gh.calls.append(call)
            gh._refresh(repo)
        gh._run_after_hooks(call)
        self._send(status, headers, data)

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()


def iter_calls(calls: list[Call]) -> Iterator[str]:
    """Calls as ``METHOD /path -> status`` lines, for readable assertions."""
    return (str(c) for c in calls)
