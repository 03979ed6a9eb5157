"""GitHub through PyGithub: one ``RepositorySession`` per repository and run.

Reads are kept to what the lifecycle needs (``docs/pull-requests.md``, "API budget"): the
repository, one listing of pull requests, one lookup of the dashboard issue, and the commits
of an open bot pull request only when its branch moved away from the commit the bot pushed. Everything else is a write, made only when something changes.
Bot branches are listed with ``git ls-remote``, not through the API.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import requests
from github import Auth, Github, GithubIntegration, GithubRetry
from github.GithubException import (
    BadCredentialsException,
    GithubException,
    RateLimitExceededExceedsMaxWait,
    RateLimitExceededException,
)
from github.Issue import Issue
from github.PullRequest import PullRequest
from github.Repository import Repository

from bot.config.forge import GitHubConfig, PullRequestConfig
from bot.forge.auth import AppCredentials, Credentials, RepositoryAuth, repository_auth
from bot.forge.branches import branch_affixes, branch_name, is_bot_branch
from bot.forge.errors import AuthError, ForgeError, GitError, RateLimitError
from bot.forge.git import Author, Git
from bot.forge.lifecycle import (
    Action,
    Observed,
    ObservedPull,
    ThresholdCheck,
    decide,
    same_proposal,
)
from bot.forge.previous import PreviousProposal, WorkloadMemory, workload_memory
from bot.forge.results import KeyResult, PublishReport, WorkloadStatus
from bot.model import Status
from bot.redaction import redact
from bot.report import (
    DashboardRow,
    Prices,
    Proposal,
    PullRequestState,
    parse_state,
    render_dashboard,
    render_pull_request,
    replace_state,
    state_of,
    ticked_keys,
)
from bot.report.markdown import code, escape
from bot.report.numbers import field_change
from bot.report.proposal import DashboardStatus

LOG = logging.getLogger(__name__)

PER_PAGE = 100
"""Items per page of every listing (GitHub's maximum)."""

DASHBOARD_RESERVE = 3
"""REST requests kept for the dashboard when a run decides whether it can afford one more pull
request: looking it up, creating it and checking that no other run created one meanwhile."""

MAX_PROBLEM_CHARS = 2_000
"""Longest failure message shown on a dashboard (an issue body holds at most 65,536)."""

T = TypeVar("T")


def public(text: str) -> str:
    """``text`` as it may be published on GitHub (every title, body, comment and commit
    message passes here): ``bot.redaction.redact``, with Markdown escaping as one more
    encoding of each secret (bodies escape what they quote)."""
    return redact(text, encodings=(escape,))


def make_retry(config: GitHubConfig) -> GithubRetry:
    """PyGithub's retry policy from settings: 5xx and 429 with backoff, 403 rate limits.

    ``GithubRetry`` (``github/GithubRetry.py``) waits for ``X-RateLimit-Reset`` on a primary
    limit, ``Retry-After`` or ``secondary_rate_wait`` on a secondary one, and raises
    ``RateLimitExceededExceedsMaxWait`` when the wait would exceed ``max_rate_limit_wait``.
    """
    return GithubRetry(
        total=config.retries,
        backoff_factor=config.backoff_factor,
        status_forcelist=[*range(500, 600), 429],
        max_rate_limit_wait=config.max_rate_limit_wait_s,
        secondary_rate_wait=config.secondary_rate_wait_s,
    )


class GitHubForge:
    """The bot's GitHub: ``open(full_name, pull_requests)`` gives a ``RepositorySession``."""

    def __init__(self, config: GitHubConfig, credentials: Credentials, *, workdir: Path) -> None:
        self.config = config
        self.credentials = credentials
        self.workdir = workdir
        self._integration: GithubIntegration | None = None
        if isinstance(credentials, AppCredentials):
            self._integration = GithubIntegration(
                base_url=config.api_url,
                auth=Auth.AppAuth(credentials.app_id, credentials.private_key_pem),
                timeout=max(1, round(config.timeout_s)),
                retry=make_retry(config),
                seconds_between_requests=config.seconds_between_requests,
                seconds_between_writes=config.seconds_between_writes,
            )

    def client(self, auth: RepositoryAuth) -> Github:
        return Github(
            base_url=self.config.api_url,
            auth=auth.auth,
            timeout=max(1, round(self.config.timeout_s)),
            per_page=PER_PAGE,
            retry=make_retry(self.config),
            seconds_between_requests=self.config.seconds_between_requests,
            seconds_between_writes=self.config.seconds_between_writes,
            lazy=True,
        )

    def repositories(self) -> list[str]:
        """``owner/name`` of every repository the credentials reach, sorted.

        App: the repositories of each installation (or of ``installation_id`` only); token: the
        repositories of the authenticated user (``GET /user/repos``).
        """
        names: set[str] = set()
        if isinstance(self.credentials, AppCredentials):
            integration = self._integration
            assert integration is not None
            wanted = self.credentials.installation_id
            with _translated("-", "list installations"):
                for installation in integration.get_installations():
                    if wanted is None or installation.id == wanted:
                        names.update(r.full_name for r in installation.get_repos())
        else:
            client = self.client(RepositoryAuth(Auth.Token(self.credentials.token)))
            with _translated("-", "list repositories"):
                names.update(r.full_name for r in client.get_user().get_repos())
        return sorted(names)

    def open(
        self, full_name: str, pull_requests: PullRequestConfig, *, dashboard: bool = True
    ) -> RepositorySession:
        """A session on ``full_name``; App credentials get this repository's installation token."""
        with _translated(full_name, "authenticate"):
            auth = repository_auth(self.credentials, full_name, self._integration)
        return RepositorySession(self, full_name, auth, pull_requests, dashboard=dashboard)


@contextmanager
def _translated(repo: str, operation: str) -> Iterator[None]:
    """PyGithub and requests exceptions as ``ForgeError`` subclasses."""
    try:
        yield
    except RateLimitExceededExceedsMaxWait as exc:
        raise RateLimitError(
            repo, operation, "rate limit: waiting would exceed the limit", exc.wait
        ) from exc
    except RateLimitExceededException as exc:
        raise RateLimitError(repo, operation, "rate limit exceeded") from exc
    except BadCredentialsException as exc:
        raise AuthError(repo, operation, "GitHub refused the credentials", exc.status) from exc
    except GithubException as exc:
        message = exc.data.get("message", str(exc)) if isinstance(exc.data, dict) else str(exc.data)
        raise ForgeError(repo, operation, str(message), exc.status) from exc
    except requests.RequestException as exc:
        raise ForgeError(repo, operation, f"{type(exc).__name__}: {exc}") from exc


def _error_messages(exc: GithubException) -> str:
    data = exc.data if isinstance(exc.data, dict) else {}
    parts = [str(data.get("message", ""))]
    for err in data.get("errors", []) or []:
        if isinstance(err, dict):
            parts.append(str(err.get("message", "")))
    return " ".join(parts)


@dataclass(frozen=True, slots=True)
class _Step:
    """One planned action: the key, its branch, what was seen, the decision, the inputs."""

    key: str
    ref: str
    observed: Observed
    action: Action
    pull: PullRequest | None
    proposal: Proposal | None


class RepositorySession:
    """One repository in one run: checkout, publish proposals, keep the dashboard."""

    def __init__(
        self,
        forge: GitHubForge,
        full_name: str,
        auth: RepositoryAuth,
        config: PullRequestConfig,
        *,
        dashboard: bool = True,
    ) -> None:
        self.forge = forge
        self.full_name = full_name
        self.auth = auth
        self.config = config
        self.dashboard_enabled = dashboard
        self.github = forge.client(auth)
        self.repo: Repository = self.github.get_repo(full_name)
        self.author = Author(config.author_name, config.author_email)
        self.checkout_path: Path | None = None
        self.base_sha: str | None = None
        self.default_branch: str | None = None
        self._git: Git | None = None
        self._dashboard: Issue | None = None
        self._dashboard_loaded = False
        self._listing: list[PullRequest] | None = None

    # ------------------------------------------------------------------ helpers

    def _call(self, operation: str, fn: Callable[[], T]) -> T:
        """``fn()`` with PyGithub's errors translated; when GitHub refuses an installation token
        (401), once more with a new token (``RepositoryAuth.renew``)."""
        with _translated(self.full_name, operation):
            try:
                return fn()
            except BadCredentialsException:
                if not self.auth.renew():
                    raise
                LOG.warning("%s: GitHub refused the installation token; renewed it", self.full_name)
                return fn()

    def requests_left(self) -> int | None:
        """REST requests left in GitHub's primary budget as the last response reported
        (``X-RateLimit-Remaining``, no request made); None before the first response."""
        remaining, limit = self.github.requester.rate_limiting
        return None if limit < 0 else remaining

    def _reserve(self, needed: int, before: str) -> None:
        """Make sure ``needed`` REST requests are left before a step that writes, so a pull
        request is never left half-made (opened without its labels, closed without its
        comment) and the dashboard can still say what was not done.

        Short of them: wait for the budget's reset when it comes within
        ``max_rate_limit_wait_s``, else raise ``RateLimitError`` (the run stops there). With
        several processes on one budget (shards) another may spend it meanwhile; then GitHub's
        403 stops the run in the middle of a step and the next run repairs what it left
        (``_undecorated``)."""
        left = self.requests_left()
        if left is None or left >= needed:
            return
        wait_s = self.github.requester.rate_limiting_resettime - time.time()
        if 0 <= wait_s <= self.forge.config.max_rate_limit_wait_s:
            time.sleep(wait_s + 1)
            return
        raise RateLimitError(
            self.full_name,
            before,
            f"rate limit: {left} requests left of the API budget, {needed} needed; stopped before it",
            max(wait_s, 0.0),
            status=None,
        )

    def _requests_of(self, step: _Step) -> int:
        """REST requests the step's writes take (0: the step writes nothing)."""
        config = self.config
        decorate = int(bool(config.labels or config.assignees)) + int(
            bool(config.reviewers or config.team_reviewers)
        )
        kind = step.action.kind
        if kind == "create":
            return 1 + decorate
        repair = decorate if step.pull is not None and self._undecorated(step.pull) else 0
        if kind in ("update", "rebuild"):
            return 1 + repair
        if kind in ("close", "note-human"):
            return 2
        return repair if kind == "up-to-date" else 0

    @property
    def git(self) -> Git:
        assert self._git is not None, "call checkout() first"
        return self._git

    def branch(self, key: str) -> str:
        return branch_name(
            key, prefix=self.config.branch_prefix, template=self.config.branch_template
        )

    def is_bot_branch(self, name: str) -> bool:
        return is_bot_branch(
            name, prefix=self.config.branch_prefix, template=self.config.branch_template
        )

    def key_of(self, branch: str) -> str:
        """The key part of a bot branch name (as sanitised into the name)."""
        head, tail = branch_affixes(
            prefix=self.config.branch_prefix, template=self.config.branch_template
        )
        return branch[len(head) : len(branch) - len(tail)]

    def _remote_bot_branches(self) -> dict[str, str]:
        head, _ = branch_affixes(
            prefix=self.config.branch_prefix, template=self.config.branch_template
        )
        found = self.git.remote_branches(head)
        return {name: sha for name, sha in found.items() if self.is_bot_branch(name)}

    @property
    def prices(self) -> Prices:
        cost = self.config.cost
        return Prices(cost.cpu_core_month, cost.memory_gib_month, cost.currency)

    # ------------------------------------------------------------------ checkout

    def disconnect(self) -> None:
        """Release the HTTP connections of this repository's API client (a long-running
        ``serve`` would otherwise hold them until the garbage collector runs)."""
        self.github.close()

    def checkout(self) -> Path:
        """Shallow clone of the default branch (token only in git's environment); its path."""
        default_branch, clone_url = self._call(
            "read the repository", lambda: (self.repo.default_branch, self.repo.clone_url)
        )
        self.default_branch = default_branch
        self._git = Git(
            clone_url,
            lambda: self.auth.token,
            repo=self.full_name,
            timeout_s=self.forge.config.git_timeout_s,
            renew=self.auth.renew,
        )
        path = self.forge.workdir / self.full_name.replace("/", "__")
        self.base_sha = self.git.clone(path, default_branch)
        self.checkout_path = path
        return path

    def close(self) -> None:
        """Remove the checkout (the session can ``checkout()`` again)."""
        if self.checkout_path is not None and self.checkout_path.exists():
            shutil.rmtree(self.checkout_path)
        self.checkout_path = None

    # ------------------------------------------------------------------ observe

    def _list_bot_pulls(self) -> list[PullRequest]:
        """Every bot pull request, newest first: one paginated listing, kept until ``publish``.

        ``previous`` / ``workload_memory`` (before planning) and ``publish`` (after it) share it,
        so a run lists pull requests once.
        """
        if self._listing is not None:
            return self._listing
        owner = self.full_name.split("/")[0]
        found: list[PullRequest] = []

        def listing() -> None:
            for pull in self.repo.get_pulls(state="all", sort="created", direction="desc"):
                ref = pull.head.ref
                if not self.is_bot_branch(ref) or pull.head.label != f"{owner}:{ref}":
                    continue  # not a bot branch, or a fork's branch of the same name
                found.append(pull)

        self._call("list pull requests", listing)
        self._listing = found
        return found

    def _bot_pulls(self) -> dict[str, PullRequest]:
        """The latest pull request per bot branch (an open one wins)."""
        found: dict[str, PullRequest] = {}
        for pull in self._list_bot_pulls():
            ref = pull.head.ref
            current = found.get(ref)
            if current is None or (current.state != "open" and pull.state == "open"):
                found[ref] = pull
        return found

    def previous_proposals(self) -> tuple[PreviousProposal, ...]:
        """Every bot pull request of the repository, newest first, with its parsed state."""
        out = []
        for pull in self._list_bot_pulls():
            state = parse_state(pull.body)
            ref = pull.head.ref
            merged_at, closed_at = pull.merged_at, pull.closed_at
            out.append(
                PreviousProposal(
                    key=state.key if state else self.key_of(ref),
                    number=pull.number,
                    branch=ref,
                    open=pull.state == "open",
                    merged=merged_at is not None,
                    state=state,
                    merged_at_s=merged_at.timestamp() if merged_at else None,
                    closed_at_s=closed_at.timestamp() if closed_at else None,
                    url=pull.html_url,
                )
            )
        return tuple(out)

    def previous(self, key: str) -> PreviousProposal | None:
        """The latest bot pull request of change-set ``key`` (None when there was none)."""
        return next((p for p in self.previous_proposals() if p.key == key), None)

    def workload_memory(self) -> dict[str, WorkloadMemory]:
        """Per workload key, what merged bot pull requests tell the engine (``previous.py``)."""
        return workload_memory(self.previous_proposals())

    def _human_commits(self, pull: PullRequest) -> bool:
        commits = self._call(f"list commits of #{pull.number}", lambda: list(pull.get_commits()))
        return any(c.commit.author.email != self.config.author_email for c in commits)

    def _oldest_dashboard(self) -> Issue | None:
        """The oldest open issue with the dashboard label (one listing call)."""
        label = self.config.dashboard_label

        def lookup() -> Issue | None:
            issues = self.repo.get_issues(
                state="open", labels=[label], sort="created", direction="asc"
            )
            return next(iter(issues), None)

        return self._call("find the dashboard issue", lookup)

    def _load_dashboard(self) -> Issue | None:
        if not self._dashboard_loaded:
            self._dashboard = self._oldest_dashboard()
            self._dashboard_loaded = True
        return self._dashboard

    def ticked_keys(self) -> set[str]:
        """Keys a human ticked on the dashboard (read once per session)."""
        if not self.dashboard_enabled:
            return set()
        issue = self._load_dashboard()
        return ticked_keys(issue.body if issue else None)

    def dashboard_url(self) -> str | None:
        issue = self._dashboard if self.dashboard_enabled else None
        return issue.html_url if issue is not None else None

    # ------------------------------------------------------------------ publish

    def publish(
        self,
        proposals: Sequence[Proposal],
        *,
        within_thresholds: ThresholdCheck = same_proposal,
        in_error: Collection[str] = (),
    ) -> PublishReport:
        """Bring the repository's bot pull requests in line with ``proposals`` (lifecycle table).

        Closes and updates come first, then new pull requests: dashboard requests first, then
        by key, while fewer than ``max_open`` bot pull requests are open and fewer than
        ``max_new_per_run`` were opened in this run (requests ignore both limits). A rate
        limit stops the run; every key not handled is listed in ``not_done``. ``in_error``: keys
        with a workload in error in this run; without a proposal they are left as they are.
        """
        assert self.checkout_path is not None and self.base_sha is not None, "call checkout() first"
        results: list[KeyResult] = []
        not_done: list[str] = []
        try:
            remote = self._remote_bot_branches()
            pulls = self._bot_pulls()
            requested = self.ticked_keys()
        except RateLimitError as exc:
            return PublishReport((), tuple(p.key for p in proposals), str(exc))
        finally:
            self._listing = None  # a later call lists again
        by_key = {p.key: p for p in proposals}
        keys: dict[str, str] = {self.branch(k): k for k in by_key}
        for ref, listed in pulls.items():
            state = parse_state(listed.body)
            keys.setdefault(ref, state.key if state else self.key_of(ref))
        for ref in remote:
            keys.setdefault(ref, self.key_of(ref))
        plan: list[tuple[str, str, Observed, Action, PullRequest | None]] = []
        stopped: str | None = None
        for ref, key in sorted(keys.items(), key=lambda kv: kv[1]):
            pull = pulls.get(ref)
            try:
                observed = self._observe(key, ref, pull, remote, requested, in_error=in_error)
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
            plan.append((key, ref, observed, action, pull))
        if stopped:
            handled = {r.key for r in results} | {p[0] for p in plan}
            not_done.extend(k for k in keys.values() if k not in handled)
        open_count = sum(1 for p in pulls.values() if p.state == "open")
        opened = 0
        order = {
            "close": 0,
            "delete-branch": 0,
            "update": 1,
            "rebuild": 1,
            "note-human": 1,
            "create": 2,
        }
        plan.sort(key=lambda p: (order.get(p[3].kind, 1), not p[2].requested, p[0]))
        for key, ref, observed, action, pull in plan:
            if stopped:
                not_done.append(key)
                continue
            full = open_count >= self.config.max_open or opened >= self.config.max_new_per_run
            if action.kind == "create" and not observed.requested and full:
                limit = "max_open" if open_count >= self.config.max_open else "max_new_per_run"
                results.append(
                    KeyResult(key, "pending", "pending", f"waiting for a free slot ({limit})")
                )
                continue
            step = _Step(key, ref, observed, action, pull, by_key.get(key))
            try:
                needed = self._requests_of(step)
                if needed:
                    self._reserve(needed + DASHBOARD_RESERVE, f"{action.kind} {key}")
                result = self._act(step)
            except RateLimitError as exc:
                stopped = str(exc)
                not_done.append(key)
                continue
            except ForgeError as exc:
                LOG.warning("%s", exc)
                results.append(KeyResult(key, action.kind, "error", str(exc), done=False))
                continue
            results.append(result)
            if action.kind == "create":
                opened += 1
                open_count += 1
            elif action.kind == "close":
                open_count -= 1
        return PublishReport(tuple(results), tuple(not_done), stopped)

    def _observe(
        self,
        key: str,
        ref: str,
        pull: PullRequest | None,
        remote: Mapping[str, str],
        requested: set[str],
        *,
        in_error: Collection[str] = (),
    ) -> Observed:
        observed_pull = None
        if pull is not None:
            merged = pull.merged_at is not None
            state: Literal["open", "closed", "merged"] = (
                "open" if pull.state == "open" else ("merged" if merged else "closed")
            )
            body_state = parse_state(pull.body)
            # the branch still at the commit the bot pushed cannot hold human commits
            pushed = body_state is not None and body_state.head is not None
            untouched = pushed and remote.get(ref) == (body_state.head if body_state else None)
            human = self._human_commits(pull) if state == "open" and not untouched else False
            observed_pull = ObservedPull(
                number=pull.number,
                state=state,
                url=pull.html_url,
                state_json=body_state,
                human_commits=human,
                head_sha=pull.head.sha,
            )
        return Observed(
            key,
            observed_pull,
            remote.get(ref),
            requested=key in requested,
            in_error=key in in_error,
        )

    # ------------------------------------------------------------------ act

    def _message(self, proposal: Proposal) -> str:
        lines = [f"{self.config.commit_prefix} {proposal.title}".strip(), ""]
        for c in proposal.change_set.changes:
            where = f"{c.ref.kind}/{c.ref.namespace}/{c.ref.name}@{c.ref.environment}"
            change = field_change(c.field, c.current, c.proposed)
            lines.append(f"- {where} {c.container or ''} {c.field}: {change}".replace("  ", " "))
        return public("\n".join(lines) + "\n")

    def _push_proposal(self, proposal: Proposal, ref: str, expected: str | None) -> str:
        assert self.checkout_path is not None and self.base_sha is not None
        for change in proposal.files:
            current = self.git.read_blob(self.checkout_path, self.base_sha, change.path)
            if (current or b"") != change.old:
                raise ForgeError(
                    self.full_name,
                    f"push {ref}",
                    f"{change.path} changed since the proposal was computed; it is recomputed next run",
                )
        sha = self.git.commit_files(
            self.checkout_path,
            self.base_sha,
            proposal.files,
            message=self._message(proposal),
            author=self.author,
        )
        if sha == expected:
            return sha
        try:
            self.git.push(self.checkout_path, sha, ref, expected=expected)
        except GitError:
            # another run may have pushed the identical (deterministic) commit meanwhile
            if self._remote_bot_branches().get(ref) != sha:
                raise
        return sha

    def _act(self, step: _Step) -> KeyResult:
        key, ref, observed, action, pull, proposal = (
            step.key,
            step.ref,
            step.observed,
            step.action,
            step.pull,
            step.proposal,
        )
        number = observed.pull.number if observed.pull else None
        url = observed.pull.url if observed.pull else None
        kind = action.kind
        if kind == "create":
            assert proposal is not None
            return self._create(key, ref, observed, action, proposal)
        if kind in ("update", "rebuild", "up-to-date") and pull and self._undecorated(pull):
            self._decorate(pull, keep=True)  # opened by a run that stopped right after
        if kind in ("update", "rebuild"):
            assert proposal is not None and pull is not None
            head = self._push_proposal(proposal, ref, observed.branch_sha)
            state = state_of(proposal).with_head(head)
            title, body = map(
                public,
                render_pull_request(
                    proposal, prices=self.prices, dashboard_url=self.dashboard_url(), state=state
                ),
            )
            self._call(f"update #{pull.number}", lambda: pull.edit(title=title, body=body))
            return KeyResult(key, kind, "proposal-open", action.reason, number, url)
        if kind == "close":
            assert pull is not None
            text = public(
                f"Closing: {action.reason}. The bot's branch is deleted; a new pull request "
                "opens if a change is needed again."
            )
            self._call(f"comment on #{pull.number}", lambda: pull.create_issue_comment(text))
            self._call(f"close #{pull.number}", lambda: pull.edit(state="closed"))
            if observed.branch_sha is not None and self.checkout_path is not None:
                self.git.delete(self.checkout_path, ref, expected=observed.branch_sha)
            return KeyResult(key, kind, "up-to-date", action.reason, number, url)
        if kind == "delete-branch":
            assert observed.branch_sha is not None and self.checkout_path is not None
            author = self.git.head_author_email(self.checkout_path, ref)
            if author != self.config.author_email:
                return KeyResult(
                    key, "nothing", "up-to-date", "a branch someone else made is left alone"
                )
            self.git.delete(self.checkout_path, ref, expected=observed.branch_sha)
            return KeyResult(key, kind, "up-to-date", action.reason)
        if kind == "note-human":
            assert pull is not None
            text = public(
                "This branch has commits that the bot did not make, so the bot will not push to it again. "
                "Merge or close this pull request when you are done; the bot proposes again after that."
            )
            self._call(f"comment on #{pull.number}", lambda: pull.create_issue_comment(text))
            old = observed.pull.state_json if observed.pull else None
            base_state = old or (state_of(proposal) if proposal else PullRequestState(key, "", ""))
            noted = base_state.with_human_noted()
            body = public(replace_state(pull.body or "", noted))
            self._call(f"update #{pull.number}", lambda: pull.edit(body=body))
            return KeyResult(key, kind, "human-edited", action.reason, number, url)
        if kind == "leave-human":
            return KeyResult(key, kind, "human-edited", action.reason, number, url)
        if kind == "suppress":
            message = f"{action.reason}; tick the box to ask for it again"
            return KeyResult(key, kind, "suppressed", message, number, url)
        status: DashboardStatus = (
            "proposal-open" if observed.pull and observed.pull.state == "open" else "up-to-date"
        )
        return KeyResult(key, kind, status, action.reason, number, url)

    def _create(
        self, key: str, ref: str, observed: Observed, action: Action, proposal: Proposal
    ) -> KeyResult:
        head = self._push_proposal(proposal, ref, observed.branch_sha)
        title, body = map(
            public,
            render_pull_request(
                proposal,
                prices=self.prices,
                dashboard_url=self.dashboard_url(),
                state=state_of(proposal).with_head(head),
            ),
        )
        base = self.default_branch or "main"

        def open_or_adopt() -> tuple[PullRequest, bool]:
            try:
                created = self.repo.create_pull(
                    title=title, body=body, head=ref, base=base, draft=self.config.draft
                )
            except GithubException as exc:
                if exc.status != 422 or "already exists" not in _error_messages(exc):
                    raise
                # another run opened it between our listing and now: adopt, never duplicate
                owner = self.full_name.split("/")[0]
                listed = self.repo.get_pulls(state="open", head=f"{owner}:{ref}", base=base)
                return next(iter(listed)), True
            return created, False

        pull, adopted = self._call("open a pull request", open_or_adopt)
        if adopted:
            return KeyResult(
                key, "adopted", "proposal-open", "another run opened it", pull.number, pull.html_url
            )
        self._decorate(pull)
        message = action.reason
        return KeyResult(key, "create", "proposal-open", message, pull.number, pull.html_url)

    def _undecorated(self, pull: PullRequest) -> bool:
        """True when an open bot pull request carries none of the configured labels and none of
        the configured assignees: the run that opened it stopped before decorating it (or a
        human removed them all). Read from the listing, no extra call. With neither labels nor
        assignees configured nothing tells, so nothing is repaired."""
        config = self.config
        if pull.state != "open" or not (config.labels or config.assignees):
            return False
        labels = {label.name for label in pull.labels}
        assignees = {user.login for user in pull.assignees}
        return not (labels & set(config.labels) or assignees & set(config.assignees))

    def _decorate(self, pull: PullRequest, *, keep: bool = False) -> None:
        """Labels, assignees and review requests of the settings; ``keep``: after the labels
        and assignees the pull request already has (a human's stay)."""
        config = self.config
        if config.labels or config.assignees:
            issue = self.repo.get_issue(pull.number)
            had_labels = [label.name for label in pull.labels] if keep else []
            had_assignees = [user.login for user in pull.assignees] if keep else []
            kwargs: dict[str, Any] = {}
            if config.labels:
                kwargs["labels"] = list(dict.fromkeys([*had_labels, *config.labels]))
            if config.assignees:
                kwargs["assignees"] = list(dict.fromkeys([*had_assignees, *config.assignees]))
            self._call(f"label #{pull.number}", lambda: issue.edit(**kwargs))
        if config.reviewers or config.team_reviewers:
            self._call(
                f"request reviews on #{pull.number}",
                lambda: pull.create_review_request(
                    reviewers=list(config.reviewers), team_reviewers=list(config.team_reviewers)
                ),
            )

    # ------------------------------------------------------------------ dashboard

    def dashboard_rows(
        self, statuses: Sequence[WorkloadStatus], report: PublishReport
    ) -> list[DashboardRow]:
        """Dashboard rows: pipeline statuses refined by what ``publish`` did to each key."""
        rows = []
        simple: dict[Status, DashboardStatus] = {
            "no-change": "up-to-date",
            "gathering-data": "gathering-data",
            "skipped": "skipped",
            "error": "error",
            "changes": "pending",
        }
        for s in statuses:
            result = report.result(s.key) if s.key else None
            if s.status != "changes" or result is None:
                status = simple[s.status]
                checkbox = False
                if s.key in report.not_done:
                    status, message = "pending", "not done in the last run (API budget)"
                    checkbox = True
                elif s.status == "changes":
                    message = s.message or "a change is proposed; no pull request was opened"
                else:
                    message = s.message
                rows.append(
                    DashboardRow(
                        s.ref, status, message, s.key, checkbox=checkbox, proposal=s.recommendation
                    )
                )
                continue
            rows.append(
                DashboardRow(
                    s.ref,
                    result.status,
                    result.message
                    if result.status not in ("proposal-open", "up-to-date")
                    else s.message,
                    s.key,
                    result.url,
                    result.number,
                    checkbox=result.status in ("pending", "suppressed"),
                    proposal=s.recommendation,
                )
            )
        return rows

    def update_dashboard(
        self, statuses: Sequence[WorkloadStatus], report: PublishReport
    ) -> set[str]:
        """Create or edit the dashboard issue (only when its body changes); the ticked keys read."""
        if not self.dashboard_enabled:
            return set()
        ticked = self.ticked_keys()
        rows = self.dashboard_rows(statuses, report)
        not_done = [f"{k}: not done ({report.stopped or 'stopped'})" for k in report.not_done]
        body = render_dashboard(
            rows, title=self.config.dashboard_title, not_done=not_done, prices=self.prices
        )
        self._write_dashboard(body)
        return ticked

    def _write_dashboard(self, text: str) -> None:
        """Create the dashboard issue with ``text``, or edit it when its body differs."""
        body = public(text)
        issue = self._load_dashboard()
        if issue is None:
            label = self.config.dashboard_label
            title = self.config.dashboard_title
            created = self._call(
                "create the dashboard issue",
                lambda: self.repo.create_issue(title=title, body=body, labels=[label]),
            )
            self._dashboard = self._one_dashboard(created, body)
        elif issue.body != body:
            self._call("update the dashboard issue", lambda: issue.edit(body=body))

    def _one_dashboard(self, created: Issue, body: str) -> Issue:
        """The dashboard to keep after creating ``created``: itself, or the older one another
        run created meanwhile (both found none); then ``created`` is closed as a duplicate and
        its body goes to the older one. The oldest open dashboard always wins, so two runs
        that both created one agree on which stays."""
        oldest = self._oldest_dashboard()
        if oldest is None or oldest.number == created.number:
            return created
        LOG.warning(
            "%s: another run created dashboard #%d at the same time; #%d is closed",
            self.full_name,
            oldest.number,
            created.number,
        )
        self._call(
            f"close #{created.number}",
            lambda: created.edit(state="closed", state_reason="duplicate"),
        )
        if oldest.body != body:
            self._call("update the dashboard issue", lambda: oldest.edit(body=body))
        return oldest

    # ------------------------------------------------------------------ repository settings

    def configure(self, pull_requests: PullRequestConfig, *, dashboard: bool = True) -> None:
        """Apply the repository's own pull-request settings, read from its checkout.

        The opt-in file lives in the repository, so it is known only after ``checkout()``;
        call this before ``publish`` and ``update_dashboard``.
        """
        self.config = pull_requests
        self.author = Author(pull_requests.author_name, pull_requests.author_email)
        self.dashboard_enabled = dashboard

    def report_config_error(self, problems: Sequence[str]) -> None:
        """Show an invalid opt-in file on the dashboard issue (every problem), nothing else.

        The repository is skipped until the file is fixed; the body changes only when the
        problems do, so a repeated run edits nothing.
        """
        self._report(
            "The opt-in file of this repository is invalid, so tortoise-bot skips the repository "
            "until it is fixed. Each problem names the key and the line:",
            problems,
            "`tortoise-bot validate .` shows the same list locally.",
        )

    def report_failure(self, message: str) -> None:
        """Show why this run could not serve the repository on the dashboard issue (when the
        repository keeps one). Pull requests are left as they were; the next run that
        succeeds writes the usual dashboard again."""
        if not self.dashboard_enabled:
            return
        self._report(
            "tortoise-bot could not serve this repository in its last run; its pull requests "
            "were left as they were. The error:",
            [message[:MAX_PROBLEM_CHARS]],
            "The next run tries again.",
        )

    def _report(self, intro: str, problems: Sequence[str], outro: str) -> None:
        lines = [intro, "", *(f"- {code(problem)}" for problem in problems), "", outro]
        self._write_dashboard(
            f"# {escape(self.config.dashboard_title)}\n\n" + "\n".join(lines) + "\n"
        )


__all__ = [
    "GitHubForge",
    "KeyResult",
    "PreviousProposal",
    "PublishReport",
    "RepositorySession",
    "WorkloadMemory",
    "WorkloadStatus",
    "make_retry",
]
