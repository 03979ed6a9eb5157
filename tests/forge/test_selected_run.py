"""A run with a selection of workloads (``run --namespace/--workload/--environment``) acts only
on the pull requests whose every workload it selected: the others are neither updated nor
closed, and the dashboard is left whole (``bot.pipeline.serve.selection_scope``).

The demo shop is served through ``serve_repository`` against the GitHub emulator, its pull
requests grouped per namespace: ``default/shop`` holds the frontend and redis, the overlay and
the Helm environment one workload each.
"""

from __future__ import annotations

import pytest

from bot.commands.common import WorkloadSelector
from bot.model import DeclaredWorkload, WorkloadRef
from bot.pipeline.serve import selection_scope
from tests.forge.demo_runs import REPO, demo_settings, demo_shop, demo_source

__all__ = ["demo_settings", "demo_shop", "demo_source"]


def _declared(name: str, namespace: str = "shop", environment: str = "prod") -> DeclaredWorkload:
    ref = WorkloadRef("Deployment", namespace, name, environment)
    return DeclaredWorkload(ref, replicas=1, containers=())


def test_the_scope_keeps_only_keys_whose_every_workload_is_selected():
    workloads = [_declared("a"), _declared("b"), _declared("c", "pay"), _declared("d", "ops")]
    scope = selection_scope(workloads, "namespace", WorkloadSelector(workload="[ac]"))
    assert scope.keys == {"prod/pay"}  # prod/shop also holds b: left alone, and named
    assert scope.mixed == ("prod/shop",)
    assert "prod/shop" in scope.mixed_text()
    per_workload = selection_scope(workloads, "workload", WorkloadSelector(workload="[ac]"))
    assert per_workload.keys == {"prod/shop/a", "prod/pay/c"} and per_workload.mixed == ()
    everything = selection_scope(workloads, "repository", WorkloadSelector(namespace="*"))
    assert everything.keys == {"all"}


@pytest.fixture
def serve(demo_shop):
    """The demo shop grouped per namespace, any new pull request opened."""
    return demo_shop(b"  min_monthly_change: 0\n", grouping="namespace")


def _open_pulls(gh) -> dict[str, tuple[int, str]]:
    """Open bot pull requests: branch -> (number, body)."""
    return {p.pull.head: (p.number, p.body) for p in gh.pulls(REPO, state="open") if p.pull}


def _dashboard(gh) -> str:
    issues = gh.issues(REPO)
    assert len(issues) == 1
    return issues[0].body


@pytest.mark.slow
def test_a_selected_run_never_closes_or_updates_pull_requests_it_did_not_select(
    github_emulator, serve
):
    gh = github_emulator
    # 1. only the default environment: its one key opens, nothing else does
    first = serve(WorkloadSelector(environment="default"))
    assert first.ok, first.message
    assert len(first.opened) == 1
    assert list(_open_pulls(gh)) == ["tortoise-bot/default/shop"]
    assert not gh.issues(REPO)  # the dashboard is not written from a part of the repository

    # 2. the whole repository: the other keys open, the dashboard is written
    full = serve()
    assert full.ok and len(full.opened) == 2 and not full.closed
    before, dashboard = _open_pulls(gh), _dashboard(gh)
    assert len(before) == 3

    # 3. one workload of default/shop: without the scope, default/shop would be rewritten
    # without redis and the other two closed for "no change needed"
    part = serve(WorkloadSelector(workload="frontend"))
    assert part.ok, part.message
    assert (part.opened, part.updated, part.closed) == ((), (), ())
    assert "left as they are: default/shop" in part.message
    assert _open_pulls(gh) == before
    assert _dashboard(gh) == dashboard
