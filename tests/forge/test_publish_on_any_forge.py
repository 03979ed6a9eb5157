"""``bot.forge.publish`` on a forge that is nothing but the primitives of
``bot.forge.protocol.PullRequestPlatform``: an in-memory one, written here in a few dozen lines.
What a second forge needs is these primitives; the lifecycle (order, limits, budget, rate
limits, closing stale pull requests, the dashboard) comes with ``publish``."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import pytest

from bot.config.forge import PullRequestConfig
from bot.forge.branches import BranchNames
from bot.forge.errors import ForgeError, RateLimitError
from bot.forge.git import Author
from bot.forge.lifecycle import PullState
from bot.forge.protocol import PullRequestPlatform
from bot.forge.publish import publish, update_dashboard
from bot.forge.pulls import ListedComment, ListedPull, OpenedPull, Write
from bot.forge.results import WorkloadStatus
from bot.model import ChangeSet, FieldChange, FieldId, FileChange, Recommendation, WorkloadRef
from bot.report import Proposal, parse_state, replace_state, state_of

BOT_EMAIL = "tortoise-bot@example.com"


@dataclass
class MemoryForge:
    """A forge held in dicts: every write is logged and, with a ``budget``, costs one request."""

    config: PullRequestConfig = field(
        default_factory=lambda: PullRequestConfig(author_email=BOT_EMAIL)
    )
    dashboard_enabled: bool = True
    full_name: str = "acme/shop"
    branches: dict[str, str] = field(default_factory=dict)
    pulls: list[ListedPull] = field(default_factory=list)
    """Newest first, as a listing."""
    commits: dict[int, tuple[str, ...]] = field(default_factory=dict)
    dashboard: str | None = None
    budget: int | None = None
    """API requests left (None: no limit)."""
    limited_reads: bool = False
    """Reading a pull request's commits hits the rate limit."""
    log: list[str] = field(default_factory=list)

    def _spend(self, what: str) -> None:
        if self.budget is not None:
            assert self.budget > 0, f"{what} without budget"
            self.budget -= 1
        self.log.append(what)

    def _pull(self, number: int) -> ListedPull:
        return next(p for p in self.pulls if p.number == number)

    def _put(self, pull: ListedPull) -> None:
        self.pulls = [pull if p.number == pull.number else p for p in self.pulls]

    def bot_branches(self) -> dict[str, str]:
        names = BranchNames.of_settings(self.config)
        return {ref: sha for ref, sha in self.branches.items() if names.is_bot(ref)}

    def push_branch(
        self, proposal: Proposal, ref: str, expected: str | None, *, message: str, author: Author
    ) -> str:
        if self.branches.get(ref) != expected:
            raise ForgeError(self.full_name, f"push {ref}", "stale lease")
        sha = hashlib.sha1(b"".join(f.new for f in proposal.files) + message.encode()).hexdigest()
        self.branches[ref] = sha
        self.log.append(f"push {ref}")
        return sha

    def delete_branch(self, ref: str, *, expected: str) -> None:
        assert self.branches.pop(ref) == expected
        self.log.append(f"delete {ref}")

    def branch_author_email(self, ref: str) -> str:
        return BOT_EMAIL

    def pull_requests(self) -> Sequence[ListedPull]:
        return tuple(self.pulls)

    def commit_emails(self, pull: ListedPull) -> tuple[str, ...]:
        if self.limited_reads:
            raise RateLimitError(self.full_name, f"list commits of #{pull.number}", "rate limit")
        self.log.append(f"commits #{pull.number}")
        return self.commits.get(pull.number, ())

    def open_pull(self, ref: str, *, title: str, body: str, draft: bool) -> OpenedPull:
        number = 1 + max((p.number for p in self.pulls), default=0)
        self._spend(f"open #{number} {ref}")
        pull = ListedPull(number, ref, "open", body, f"https://forge/{number}", self.branches[ref])
        self.pulls.insert(0, pull)
        return OpenedPull(number, pull.url)

    def update_pull(
        self, number: int, *, title: str | None = None, body: str | None = None
    ) -> None:
        self._spend(f"edit #{number}")
        self._put(replace(self._pull(number), body=body))

    def comment(self, number: int, text: str) -> None:
        self._spend(f"comment #{number}: {text}")

    def comments(self, number: int) -> tuple[ListedComment, ...]:
        self._spend(f"list comments #{number}")
        return ()

    def edit_comment(self, comment_id: int, text: str) -> None:
        self._spend(f"edit comment {comment_id}: {text}")

    def close_pull(self, number: int) -> None:
        self._spend(f"close #{number}")
        self._put(replace(self._pull(number), state="closed"))

    def set_labels(
        self, number: int, *, labels: Sequence[str] | None, assignees: Sequence[str] | None
    ) -> None:
        self._spend(f"label #{number} {list(labels or [])}")
        self._put(replace(self._pull(number), labels=tuple(labels or ())))

    def request_reviews(
        self, number: int, *, reviewers: Sequence[str], team_reviewers: Sequence[str]
    ) -> None:
        self._spend(f"review #{number}")

    def read_dashboard(self) -> str | None:
        return self.dashboard

    @property
    def dashboard_url(self) -> str | None:
        return "https://forge/dashboard" if self.dashboard is not None else None

    def write_dashboard(self, text: str) -> None:
        if text != self.dashboard:
            self.dashboard = text
            self.log.append("dashboard")

    def reserve(self, writes: Sequence[Write], before: str) -> None:
        if self.budget is not None and self.budget < len(writes):
            raise RateLimitError(self.full_name, before, f"{self.budget} left", status=None)


def platform(forge: MemoryForge) -> PullRequestPlatform:
    """The fake, typed as the protocol: mypy checks it has every primitive."""
    return forge


def ref(name: str) -> WorkloadRef:
    return WorkloadRef("Deployment", "shop", name, "prod")


def proposal(name: str, millicores: int) -> Proposal:
    """A proposal setting the cpu request of workload ``name`` (its key ``prod/shop/<name>``)."""
    change = FieldChange(ref(name), FieldId.REQUESTS_CPU, millicores / 1000, 0.5, "app", "P90")
    old = f"name: {name}\ncpu: 500m\n".encode()
    new = old.replace(b"500m", f"{millicores}m".encode())
    key = f"prod/shop/{name}"
    return Proposal(
        key=key,
        title=f"Right-size {name}",
        change_set=ChangeSet(key, (change,), (Recommendation(ref(name), "changes"),)),
        files=(FileChange(f"apps/{name}.yaml", old, new),),
    )


def with_pull(forge: MemoryForge, p: Proposal, state: PullState = "open") -> ListedPull:
    """A bot pull request of ``p`` as an earlier run left it (branch pushed, state in its body)."""
    branch = BranchNames.of_settings(forge.config).of(p.key)
    sha = hashlib.sha1(p.key.encode()).hexdigest()
    forge.branches[branch] = sha
    body = replace_state("earlier body", state_of(p).with_head(sha))
    pull = ListedPull(
        number=len(forge.pulls) + 1, branch=branch, state=state, body=body, head_sha=sha
    )
    forge.pulls.insert(0, pull)
    return pull


def test_closes_and_updates_come_before_new_pull_requests_and_free_their_slots():
    forge = MemoryForge(config=PullRequestConfig(author_email=BOT_EMAIL, max_open=2))
    stale = with_pull(forge, proposal("zz-old", 300))
    changed = with_pull(forge, proposal("yy-web", 300))
    report = publish(platform(forge), [proposal("aa-api", 200), proposal("yy-web", 250)])
    assert forge.log == [
        f"comment #{stale.number}: Closing: no change is needed any more. The bot's branch is "
        "deleted; a new pull request opens if a change is needed again.",
        f"close #{stale.number}",
        "delete tortoise-bot/prod/shop/zz-old",
        "push tortoise-bot/prod/shop/yy-web",
        f"edit #{changed.number}",
        "push tortoise-bot/prod/shop/aa-api",
        "open #3 tortoise-bot/prod/shop/aa-api",
    ]
    assert report.closed == ("prod/shop/zz-old",)
    assert report.updated == ("prod/shop/yy-web",)
    assert report.opened == ("prod/shop/aa-api",)  # the close freed the second slot
    assert report.stopped is None and report.not_done == ()
    body = forge._pull(changed.number).body
    assert parse_state(body) == state_of(proposal("yy-web", 250)).with_head(
        forge.branches["tortoise-bot/prod/shop/yy-web"]
    )


def test_new_pull_requests_wait_over_the_limits_and_a_second_run_writes_nothing():
    forge = MemoryForge(
        config=PullRequestConfig(author_email=BOT_EMAIL, max_new_per_run=2, labels=["sizing"])
    )
    proposals = [proposal(n, 250) for n in ("c", "a", "b")]
    report = publish(platform(forge), proposals)
    assert report.opened == ("prod/shop/a", "prod/shop/b")
    waiting = report.result("prod/shop/c")
    assert waiting is not None and waiting.status == "pending"
    assert waiting.message == "waiting for a free slot (max_new_per_run)"
    assert [entry for entry in forge.log if entry.startswith("label")] == [
        "label #1 ['sizing']",
        "label #2 ['sizing']",
    ]
    forge.log.clear()
    again = publish(platform(forge), proposals[1:])
    assert forge.log == []  # branches untouched since the bot pushed: no commits read either
    assert {r.action for r in again.results} == {"up-to-date"}


def test_the_budget_stops_before_a_step_it_cannot_finish():
    forge = MemoryForge(
        config=PullRequestConfig(author_email=BOT_EMAIL, labels=["sizing"]), budget=3
    )
    report = publish(platform(forge), [proposal(n, 250) for n in ("a", "b", "c")])
    assert report.opened == ("prod/shop/a",)  # open + label: 2 of 3 requests
    assert report.not_done == ("prod/shop/b", "prod/shop/c")
    assert report.stopped is not None and "1 left" in report.stopped
    assert "push tortoise-bot/prod/shop/b" not in forge.log  # reserved before pushing
    statuses = [WorkloadStatus(ref(n), "changes", key=f"prod/shop/{n}") for n in "abc"]
    forge.budget = None
    update_dashboard(platform(forge), statuses, report)
    assert forge.dashboard is not None
    assert r"prod/shop/b\: not done" in forge.dashboard and r"1 left\)" in forge.dashboard
    assert "- [ ] <!-- tortoise-bot-request: prod/shop/c -->" in forge.dashboard  # ask again


def test_a_rate_limit_while_observing_stops_before_any_write():
    forge = MemoryForge(limited_reads=True)
    moved = with_pull(forge, proposal("web", 300))
    forge.branches[moved.branch] = "0" * 40  # moved since the bot pushed: its commits are read
    report = publish(platform(forge), [proposal("api", 250), proposal("web", 250)])
    assert report.results == ()
    assert report.not_done == ("prod/shop/web", "prod/shop/api")  # unobserved, then unacted
    assert report.stopped is not None and "rate limit" in report.stopped
    assert forge.log == []


def test_a_rate_limit_while_listing_leaves_every_proposal_not_done():
    class Limited(MemoryForge):
        def pull_requests(self) -> Sequence[ListedPull]:
            raise RateLimitError(self.full_name, "list pull requests", "rate limit")

    report = publish(platform(Limited()), [proposal("api", 250)])
    assert report.not_done == ("prod/shop/api",) and report.results == ()


def test_human_commits_are_noted_once_and_then_left_alone():
    forge = MemoryForge()
    pull = with_pull(forge, proposal("web", 300))
    forge.branches[pull.branch] = "1" * 40
    forge.commits[pull.number] = (BOT_EMAIL, "dev@example.com")
    first = publish(platform(forge), [proposal("web", 250)])
    assert first.result("prod/shop/web").action == "note-human"  # type: ignore[union-attr]
    assert forge.log[0] == "commits #1" and forge.log[-1] == "edit #1"
    forge.log.clear()
    second = publish(platform(forge), [proposal("web", 200)])
    assert second.result("prod/shop/web").action == "leave-human"  # type: ignore[union-attr]
    assert forge.log == ["commits #1"]


@pytest.mark.parametrize("ticked", [False, True])
def test_a_rejected_proposal_waits_until_ticked_on_the_dashboard(ticked):
    forge = MemoryForge()
    web = proposal("web", 250)
    with_pull(forge, web, state="closed")
    forge.branches.clear()
    report = publish(platform(forge), [web])
    assert report.result(web.key).status == "suppressed"  # type: ignore[union-attr]
    ticks = update_dashboard(
        platform(forge), [WorkloadStatus(ref("web"), "changes", key=web.key)], report
    )
    assert ticks == set() and forge.dashboard is not None and "[ ]" in forge.dashboard
    if ticked:
        forge.dashboard = forge.dashboard.replace("[ ]", "[x]")
    again = publish(platform(forge), [web])
    assert again.opened == ((web.key,) if ticked else ())
    if ticked:
        result = again.result(web.key)
        assert result is not None and result.message == "a human asked for it on the dashboard"


def test_without_a_dashboard_nothing_is_read_or_written():
    forge = MemoryForge(dashboard_enabled=False)
    web = proposal("web", 250)
    with_pull(forge, web, state="closed")
    forge.dashboard = f"- [x] <!-- tortoise-bot-request: {web.key} -->\n"
    report = publish(platform(forge), [web])
    assert report.result(web.key).status == "suppressed"  # type: ignore[union-attr]
    assert update_dashboard(platform(forge), [], report) == set()
    assert forge.log == []


def test_a_new_pull_request_below_the_money_threshold_is_held_until_ticked():
    forge = MemoryForge()
    small, open_one = proposal("small", 250), proposal("web", 250)
    with_pull(forge, proposal("web", 300))  # opened before: a held proposal still updates it
    held = {small.key: "below the threshold", open_one.key: "below the threshold"}
    report = publish(platform(forge), [small, open_one], held=held)
    result = report.result(small.key)
    assert result is not None and (result.action, result.status) == ("held", "pending")
    assert report.held == (small.key,) and report.opened == ()
    assert report.updated == (open_one.key,)
    assert "push tortoise-bot/prod/shop/small" not in forge.log
    statuses = [WorkloadStatus(ref(n), "changes", key=f"prod/shop/{n}") for n in ("small", "web")]
    update_dashboard(platform(forge), statuses, report)
    assert forge.dashboard is not None and "below the threshold" in forge.dashboard
    box = f"- [ ] <!-- tortoise-bot-request: {small.key} -->"
    assert box in forge.dashboard
    forge.dashboard = forge.dashboard.replace(box, box.replace("[ ]", "[x]"))
    again = publish(platform(forge), [small, open_one], held=held)
    assert again.opened == (small.key,) and again.held == ()
