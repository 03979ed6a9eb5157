"""The pipeline: settings per workload, failure isolation, and the plan of the demo shop."""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from bot.config.bot import BotSettings, load_bot_settings
from bot.config.errors import ConfigError
from bot.config.load import parse_model
from bot.config.recommend import RecommendSettings
from bot.config.repo import RepoConfig
from bot.manifests import apply_changes
from bot.metrics.errors import MetricsError, QueryError
from bot.metrics.snapshot import SnapshotSource
from bot.metrics.source import FetchResult, HistoryRequest
from bot.model import FieldId, WorkloadRef
from bot.pipeline import plan as planning
from bot.pipeline.plan import history_requests, repository_outcome
from bot.pipeline.proposals import build_proposals
from bot.settings import RepositorySettings
from tests.manifests.conftest import changed_lines

DEMO = Path(__file__).resolve().parent.parent / "bot" / "demo"


@pytest.fixture
def demo_repo(tmp_path) -> Path:
    root = tmp_path / "shop"
    shutil.copytree(DEMO / "repo", root)
    return root


@pytest.fixture(scope="module")
def demo_source() -> SnapshotSource:
    return SnapshotSource(DEMO / "snapshot.zip")


@pytest.fixture(scope="module")
def demo_settings():
    return load_bot_settings(DEMO / "bot.yaml")


def test_history_requests_carry_the_environment_selector(demo_repo):
    from bot.config.repo import load_repo_config
    from bot.manifests import discover

    config = load_repo_config(demo_repo)
    settings = RepositorySettings.of_checkout(demo_repo, config, BotSettings())
    requests = history_requests(discover(demo_repo, config).inventory, settings)
    by_name = {r.ref.name: r for r in requests}
    assert set(by_name) == {"frontend", "redis", "cart", "checkout", "reviews"}
    assert by_name["frontend"].containers == ("app", "istio-proxy")
    assert all(dict(r.selector) == {"cluster": "demo"} for r in requests)


class OneBrokenWorkload:
    """A history source that answers from the demo snapshot but fails one workload."""

    def __init__(self, inner: SnapshotSource, broken: str) -> None:
        self.inner, self.broken = inner, broken

    def fetch(
        self,
        requests: Sequence[HistoryRequest],
        *,
        start_s: float,
        end_s: float,
        budget_s: float | None = None,
    ) -> FetchResult:
        result = self.inner.fetch(requests, start_s=start_s, end_s=end_s, budget_s=budget_s)
        errors: dict[WorkloadRef, MetricsError] = dict(result.errors)
        histories = dict(result.histories)
        for ref in list(histories):
            if ref.name == self.broken:
                del histories[ref]
                errors[ref] = QueryError("query timed out", query="q", url="u", status=503)
        return FetchResult(histories, errors, result.warnings, result.stats)


def test_one_workload_without_history_does_not_stop_the_others(
    demo_repo, demo_source, demo_settings
):
    source = OneBrokenWorkload(demo_source, "cart")
    plan = repository_outcome(demo_repo, source, demo_settings, now_s=demo_source.end_s)
    status = {o.ref.name: o for o in plan.outcomes}
    assert status["cart"].status == "error"
    assert "query timed out" in status["cart"].reasons[0]
    assert all(status[n].recommendation is not None for n in ("frontend", "redis", "checkout"))
    assert "cart" not in plan.edit.diff


def test_plan_does_not_write_unless_asked(demo_repo, demo_source, demo_settings):
    before = {p: p.read_bytes() for p in demo_repo.rglob("*") if p.is_file()}
    plan = repository_outcome(demo_repo, demo_source, demo_settings, now_s=demo_source.end_s)
    assert plan.edit.diff  # the demo has changes to propose
    assert {p: p.read_bytes() for p in demo_repo.rglob("*") if p.is_file()} == before


def test_a_plan_logs_where_its_time_went(demo_repo, demo_source, demo_settings, caplog):
    """One INFO line per plan splits its wall time (discovery, history with recommendations,
    edit) and gives the engine's CPU seconds; the parts add up to the whole."""
    caplog.set_level(logging.INFO, logger="bot.pipeline")
    repository_outcome(demo_repo, demo_source, demo_settings, now_s=demo_source.end_s)
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("plan of")]
    numbers = [float(n) for n in re.findall(r"(\d+\.\d+) (?:CPU-)?s", line)]
    total, discovery, streamed, waiting, engine_cpu, edit = numbers
    assert "5 workloads" in line and engine_cpu > 0
    assert waiting <= streamed
    assert abs(total - (discovery + streamed + edit)) <= 0.015  # each rounded to 0.01 s


def test_written_plan_reads_back_as_proposed(demo_repo, demo_source, demo_settings):
    from bot.config.repo import load_repo_config
    from bot.manifests import discover

    plan = repository_outcome(
        demo_repo, demo_source, demo_settings, now_s=demo_source.end_s, write=True
    )
    assert plan.edit.files, "the demo proposes changes"
    for f in plan.edit.files:
        assert (demo_repo / f.path).read_bytes() == f.new
    inventory = discover(demo_repo, load_repo_config(demo_repo)).inventory
    declared = {w.ref: w for w in inventory.workloads}
    checked = 0
    for outcome in plan.outcomes:
        for change in outcome.changes:
            w = declared[change.ref]
            if change.field.startswith(("requests.", "limits.")):
                group, resource = change.field.split(".")
                container = w.container(change.container or "")
                assert container is not None
                value = getattr(container, group).get(resource)
                # quantities round up: CPU to 5m, memory to 1Mi (docs/manifests.md)
                step = 0.005 if resource == "cpu" else 1024 * 1024
                assert value is not None and 0 <= value - change.proposed < step
                checked += 1
            elif change.field == "hpa.minReplicas":
                assert w.hpa is not None and w.hpa.min_replicas == change.proposed
                checked += 1
    assert checked >= 3


@pytest.mark.parametrize(
    ("rejected", "new", "within"),
    [
        # 1 core -> 0.8 rejected; 0.75 now: a 50m move is below minChange (10 % of 0.8: 80m).
        ({"w/app/requests.cpu": 0.8}, {"w/app/requests.cpu": 0.75}, True),
        # 0.8 rejected; 0.5 now: a 300m move reaches minChange, so ask again.
        ({"w/app/requests.cpu": 0.8}, {"w/app/requests.cpu": 0.5}, False),
        # memory: 50 MB apart is below 10 % of 1 GB.
        ({"w/app/requests.memory": 1_000_000_000}, {"w/app/requests.memory": 950_000_000}, True),
        # a new field in the proposal is a new proposal
        ({"w/app/requests.cpu": 0.8}, {"w/app/requests.cpu": 0.8, "w/-/hpa.minReplicas": 4}, False),
        # replica counts and targets must be equal
        ({"w/-/hpa.minReplicas": 4}, {"w/-/hpa.minReplicas": 5}, False),
        ({"w/-/hpa.target.cpu": 70}, {"w/-/hpa.target.cpu": 70}, True),
        # removing a limit vs keeping it differs
        ({"w/app/limits.cpu": None}, {"w/app/limits.cpu": 1.0}, False),
        # a rejected metric removal stays rejected; a target proposed instead is new
        ({"w/proxy/hpa.target.cpu": None}, {"w/proxy/hpa.target.cpu": None}, True),
        ({"w/proxy/hpa.target.cpu": None}, {"w/proxy/hpa.target.cpu": 70}, False),
    ],
    ids=[
        "cpu-close",
        "cpu-far",
        "memory-close",
        "new-field",
        "replicas",
        "target-same",
        "removal",
        "metric-removal-again",
        "metric-kept",
    ],
)
def test_a_rejected_proposal_stays_closed_while_within_min_change(rejected, new, within):
    from bot.pipeline.proposals import proposals_within_thresholds

    check = proposals_within_thresholds(RecommendSettings().noise)
    assert (
        check({"changes": rejected, "proposal": "a"}, {"changes": new, "proposal": "b"}) is within
    )


def test_without_per_value_state_the_digest_decides():
    from bot.pipeline.proposals import proposals_within_thresholds

    check = proposals_within_thresholds(RecommendSettings().noise)
    assert check({"changes": {}, "proposal": "a"}, {"changes": {}, "proposal": "a"}) is True
    assert check({"changes": {}, "proposal": "a"}, {"changes": {}, "proposal": "b"}) is False


def test_bot_prices_apply_unless_the_repository_sets_its_own():
    settings = BotSettings.model_validate({"prices": {"cpu_core_month": 20, "memory_gib_month": 3}})
    plain = parse_model("pull_requests: {labels: [x]}\n", RepoConfig, file="f")
    own = parse_model("pull_requests: {cost: {cpu_core_month: 31}}\n", RepoConfig, file="f")
    bot_priced = RepositorySettings(plain, settings)
    assert bot_priced.pull_requests.cost.cpu_core_month == 20
    assert bot_priced.pull_requests.labels == ("x",)
    assert str(bot_priced.cost_origin) == "bot settings: prices"
    own_priced = RepositorySettings(own, settings)
    assert own_priced.pull_requests.cost.cpu_core_month == 31
    assert own_priced.pull_requests.cost.memory_gib_month == 0
    assert str(own_priced.cost_origin) == ".tortoise-bot.yaml: pull_requests.cost"
    assert str(RepositorySettings(plain, BotSettings()).cost_origin) == "default: prices"


def test_a_container_made_vertical_loses_its_hpa_metric_end_to_end(
    demo_repo, demo_source, demo_settings
):
    # First the demo's own proposal: frontend's pod-level cpu metric becomes one
    # ContainerResource metric per container. Then the repository makes istio-proxy's cpu
    # vertical: Tortoise would remove its metric, and so does the next plan.
    from bot.commands.explain import describe
    from bot.outcome_view import plan_document, plan_markdown
    from bot.report.render import render_pull_request

    now_s = demo_source.end_s
    repository_outcome(demo_repo, demo_source, demo_settings, now_s=now_s, write=True)
    manifest = demo_repo / "apps/raw/frontend.yaml"
    assert "container: istio-proxy" in manifest.read_text()
    config = demo_repo / ".tortoise-bot.yaml"
    config.write_text(
        config.read_text().replace(
            "workloads:\n",
            "workloads:\n  - match: Deployment/shop/frontend\n"
            "    containers:\n      istio-proxy: {cpu: vertical}\n",
        )
    )
    plan = repository_outcome(demo_repo, demo_source, demo_settings, now_s=now_s)
    [frontend] = [o for o in plan.outcomes if o.ref.name == "frontend"]
    assert frontend.status == "changes"
    targets = {(c.field, c.container): c for c in frontend.changes if c.field.startswith("hpa.")}
    removal = targets[(FieldId.HPA_TARGET_CPU, "istio-proxy")]
    assert removal.proposed is None and removal.current is not None
    assert "cpu of istio-proxy is vertical: ContainerResource metric removed" in removal.reason
    assert frontend.ref not in plan.edit.failed
    # The diff deletes the sidecar's metric item and adds no metric.
    frontend_diff = plan.edit.diff.split("+++ b/apps/raw/frontend.yaml", 1)[1].split("--- a/")[0]
    removed, added = changed_lines(frontend_diff)
    assert "      container: istio-proxy" in removed
    assert "  - type: ContainerResource" in removed
    assert not [line for line in added if "type:" in line or "container:" in line]
    # Plan JSON, markdown and the pull-request body say "removed".
    document = plan_document(plan, repository="demo-shop")
    [proxy] = [
        t
        for w in document["workloads"]
        if w["name"] == "frontend"
        for t in w["hpa"]["targets"]
        if t["container"] == "istio-proxy"
    ]
    assert (proxy["proposed"], proxy["rule"]) == (None, "tortoise.target.remove_metric")
    assert "→ removed" in plan_markdown(plan, repository="demo-shop")
    explained = describe(frontend)
    assert f"{removal.current}% → removed" in explained
    assert "[tortoise.target.remove_metric]" in explained
    [proposal] = build_proposals(plan)  # plan's grouping: one set of every change
    assert frontend.ref in proposal.workloads
    _, body = render_pull_request(proposal)
    # (with other workloads in the set, e.g. an HPA target continuing its steps, rows start
    # with the workload's name)
    row = next(line for line in body.splitlines() if "| istio-proxy CPU target |" in line)
    assert f"| {removal.current}% → removed | " in row and "metric removed" in row
    # Written, the manifest reads back without the metric.
    repository_outcome(demo_repo, demo_source, demo_settings, now_s=now_s, write=True)
    assert "container: istio-proxy" not in manifest.read_text().split("HorizontalPodAutoscaler")[1]


def test_an_environment_with_update_mode_off_is_shown_never_edited(
    demo_repo, demo_source, demo_settings
):
    opt_in = demo_repo / ".tortoise-bot.yaml"
    opt_in.write_text(
        opt_in.read_text().replace(
            "  - name: apps/kustomize/overlays/prod\n",
            "  - name: apps/kustomize/overlays/prod\n    update_mode: 'off'\n",
        )
    )
    plan = repository_outcome(demo_repo, demo_source, demo_settings, now_s=demo_source.end_s)
    cart = next(o for o in plan.outcomes if o.ref.name == "cart")
    assert cart.status == "skipped" and not cart.changes and cart.recommendation is not None
    assert "update_mode is off for environment 'apps/kustomize/overlays/prod'" in cart.reasons[-1]
    assert plan.edit.diff and "apps/kustomize" not in plan.edit.diff


def test_a_change_in_a_file_another_render_reads_is_skipped_with_its_reason(
    demo_repo, demo_source, demo_settings
):
    # the raw YAML is a plain directory environment, and a kustomization at the root also
    # applies the frontend: with no overlay of its own, the frontend's changes are skipped, the
    # others still written
    (demo_repo / "kustomization.yaml").write_text("resources:\n  - apps/raw/frontend.yaml\n")
    opt_in = demo_repo / ".tortoise-bot.yaml"
    text = opt_in.read_text()
    assert "  - name: default " in text
    opt_in.write_text(text.replace("    selector:", "    path: apps/raw\n    selector:", 1))
    plan = repository_outcome(demo_repo, demo_source, demo_settings, now_s=demo_source.end_s)
    frontend = next(o for o in plan.outcomes if o.ref.name == "frontend")
    assert frontend.status == "skipped" and not frontend.changes
    assert any("skipped: it is written in apps/raw/frontend.yaml" in r for r in frontend.reasons)
    assert any(". (a kustomization no other one includes)" in r for r in frontend.reasons)
    assert (
        "apps/raw/frontend.yaml" not in plan.edit.diff and "apps/raw/redis.yaml" in plan.edit.diff
    )


def test_each_change_set_is_edited_once_and_marked_by_its_own_edit(
    demo_repo, demo_source, demo_settings, monkeypatch
):
    # per workload: the frontend's set skips every change (no file of its own, as above) and
    # the redis set is still proposed; each set is edited once, never the whole repository
    (demo_repo / "kustomization.yaml").write_text("resources:\n  - apps/raw/frontend.yaml\n")
    opt_in = demo_repo / ".tortoise-bot.yaml"
    opt_in.write_text(
        opt_in.read_text().replace("    selector:", "    path: apps/raw\n    selector:", 1)
    )
    edited: list[tuple[str, ...]] = []

    def counted(root, discovery, changes, config, *, write):
        edited.append(tuple(dict.fromkeys(c.ref.name for c in changes)))
        return apply_changes(root, discovery, changes, config, write=write)

    monkeypatch.setattr(planning, "apply_changes", counted)
    plan = repository_outcome(
        demo_repo, demo_source, demo_settings, now_s=demo_source.end_s, grouping="workload"
    )
    assert sorted(edited) == sorted((e.change_set.key.rsplit("/", 1)[1],) for e in plan.edits)
    assert len(edited) == len(set(edited)) >= 2
    frontend = next(o for o in plan.outcomes if o.ref.name == "frontend")
    assert frontend.status == "skipped"
    assert any("skipped: it is written in apps/raw/frontend.yaml" in r for r in frontend.reasons)
    proposals = {p.workloads[0].name: p for p in build_proposals(plan)}
    assert "frontend" not in proposals and "redis" in proposals
    assert [f.path for f in proposals["redis"].files] == ["apps/raw/redis.yaml"]
    assert all(n.code != "skipped" for p in proposals.values() for n in p.notes)
    assert len(edited) == len(plan.edits), "proposals are built from the edits, not edited again"


def test_a_bad_quantity_fails_the_repository_at_its_line(demo_repo, demo_source, demo_settings):
    opt_in = demo_repo / ".tortoise-bot.yaml"
    text = opt_in.read_text()
    bad = "    policy: {cpu: vertical, memory: vertical}\n"
    opt_in.write_text(text.replace(bad, bad + "    min_allocated: {redis: {memory: plenty}}\n"))
    line = 1 + opt_in.read_text().splitlines().index("    min_allocated: {redis: {memory: plenty}}")
    with pytest.raises(ConfigError) as info:
        repository_outcome(demo_repo, demo_source, demo_settings, now_s=demo_source.end_s)
    assert str(info.value).startswith(
        f".tortoise-bot.yaml:{line}: workloads.0.min_allocated.redis.memory: "
        "not a Kubernetes quantity"
    )
