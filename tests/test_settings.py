"""Effective settings, resolved once with the file and line of each value (``bot.settings``)."""

from __future__ import annotations

import pytest

from bot.config.bot import BotSettings
from bot.config.errors import ConfigError
from bot.config.load import parse_model
from bot.config.recommend import RecommendSettings
from bot.config.repo import RepoConfig
from bot.model import (
    MIB,
    DeclaredContainer,
    DeclaredVPA,
    DeclaredWorkload,
    Location,
    ResourceValues,
    VpaContainerPolicy,
    WorkloadHistory,
    WorkloadRef,
)
from bot.recommend.inputs import build_input
from bot.settings import Origin, RepositorySettings, Resolved
from bot.settings.workload import IGNORED, MANAGED_BY_TORTOISE, RepositoryRules

OPT_IN = """\
workloads:
  - match: shop/*
    policy: {cpu: horizontal}
    recommend: {admin: {minimum_min_replicas: 2}}
    min_allocated: {'*': {cpu: 50m, memory: 64Mi}}
  - match: Deployment/shop/frontend
    containers:
      istio-proxy: {cpu: vertical, memory: "off"}
    min_allocated: {'*': {cpu: '0.1'}, app: {memory: 1Gi}}
    emergency: true
  - match: frontend
    environment: overlays/*
    ignore: true
recommend:
  admin: {maximum_min_replicas: 7}
"""

FRONTEND = WorkloadRef("Deployment", "shop", "frontend")


def declared(ref: WorkloadRef = FRONTEND, *, managed_by_tortoise: bool = False):
    requests = ResourceValues(0.1, 64 * MIB)
    containers = (DeclaredContainer("app", requests), DeclaredContainer("istio-proxy", requests))
    return DeclaredWorkload(
        ref, 2, containers, managed_by_tortoise=managed_by_tortoise, files=("a.yaml",)
    )


@pytest.fixture
def rules(tmp_path) -> RepositoryRules:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "tortoise-bot.yaml").write_text(OPT_IN)
    config = parse_model(OPT_IN, RepoConfig, file=".github/tortoise-bot.yaml")
    return RepositoryRules.of_checkout(tmp_path, config, RecommendSettings())


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        (FRONTEND, (0, 1)),
        (WorkloadRef("Deployment", "shop", "frontend", "overlays/prod"), (0, 1, 2)),
        (WorkloadRef("StatefulSet", "shop", "frontend"), (0,)),
        (WorkloadRef("Deployment", "other", "frontend"), ()),
    ],
    ids=["default-env", "overlay-ignored", "kind-must-match", "namespace-must-match"],
)
def test_rules_match_kind_namespace_name_and_environment(rules, ref, expected):
    assert rules.rules(ref) == expected


def test_later_rules_win_and_each_value_names_its_line(rules):
    got = rules.for_workload(declared())
    assert got.skip is None and got.emergency
    app, proxy = got.containers["app"], got.containers["istio-proxy"]
    assert app.policies == {"cpu": "horizontal", "memory": "vertical"}  # memory: no HPA
    assert proxy.policies == {"cpu": "vertical", "memory": "off"}
    # per container name, else '*'; per resource, later entries win
    assert app.min_allocated == ResourceValues(None, 1024**3)
    assert proxy.min_allocated == ResourceValues(0.1, 64 * 1024**2)
    assert app.max_allocated == ResourceValues()
    assert got.update_mode is None
    assert got.recommend.admin.minimum_min_replicas == 2
    assert got.recommend.admin.maximum_min_replicas == 7
    assert RecommendSettings().admin.maximum_min_replicas != 7
    shown = {key: str(origin) for key, origin in got.origins.items()}
    assert shown["policy.app.cpu"] == ".github/tortoise-bot.yaml:3: workloads.0.policy.cpu"
    assert shown["policy.istio-proxy.memory"].startswith(".github/tortoise-bot.yaml:8: ")
    assert shown["min_allocated.istio-proxy.cpu"].endswith(":9: workloads.1.min_allocated.*.cpu")
    assert shown["min_allocated.istio-proxy.memory"].endswith(
        ":5: workloads.0.min_allocated.*.memory"
    )
    assert shown["emergency"].endswith(":10: workloads.1.emergency")
    assert shown["policy.app.memory"] == "default: policy.app.memory"
    assert shown["max_allocated.app.cpu"] == "default: max_allocated.app.cpu"
    assert shown["update_mode"] == "default: environments.update_mode"
    assert shown["recommend.admin.maximum_min_replicas"].endswith(
        ":15: recommend.admin.maximum_min_replicas"
    )
    assert shown["recommend.admin.minimum_min_replicas"].endswith(
        ":4: workloads.0.recommend.admin.minimum_min_replicas"
    )


def test_ignored_or_managed_by_tortoise_is_skipped_once(rules):
    ignored = rules.for_workload(
        declared(WorkloadRef("Deployment", "shop", "frontend", "overlays/a"))
    )
    assert ignored.skip == IGNORED and not ignored.containers
    assert str(ignored.origins["ignore"]) == ".github/tortoise-bot.yaml:13: workloads.2.ignore"
    managed = rules.for_workload(declared(managed_by_tortoise=True))
    assert managed.skip == MANAGED_BY_TORTOISE and not managed.containers


def test_a_bad_quantity_is_reported_at_its_file_and_line(tmp_path):
    text = "update_mode: auto\nworkloads:\n  - match: '*'\n    max_allocated:\n      app: {cpu: lots}\n"
    (tmp_path / ".tortoise-bot.yaml").write_text(text)
    config = parse_model(text, RepoConfig, file=".tortoise-bot.yaml")
    rules = RepositoryRules.of_checkout(tmp_path, config, RecommendSettings())
    with pytest.raises(ConfigError) as info:
        rules.for_workload(declared())
    [problem] = info.value.problems
    assert (problem.file, problem.line, problem.key) == (
        ".tortoise-bot.yaml",
        5,
        "workloads.0.max_allocated.app.cpu",
    )
    assert str(problem).startswith(".tortoise-bot.yaml:5: workloads.0.max_allocated.app.cpu: ")
    assert "not a Kubernetes quantity" in problem.message


def test_every_problem_of_the_file_is_found_whichever_workload_it_meets(tmp_path):
    text = """\
workloads:
  - match: nothing/here
    max_allocated:
      app: {cpu: lots}
    recommend:
      noise: {proportionl: true}
  - match: '*'
    recommend:
      replay: {gate: sometimes}
recommend:
  admin: {minimum_min_replicas: -1}
"""
    (tmp_path / ".tortoise-bot.yaml").write_text(text)
    config = parse_model(text, RepoConfig, file=".tortoise-bot.yaml")
    rules = RepositoryRules.of_checkout(tmp_path, config, RecommendSettings())
    found = {(p.line, p.key) for p in rules.problems()}
    assert found == {
        (11, "recommend.admin.minimum_min_replicas"),
        (4, "workloads.0.max_allocated.app.cpu"),
        (6, "workloads.0.recommend.noise.proportionl"),
        (9, "workloads.1.recommend.replay.gate"),
    }
    with pytest.raises(ConfigError) as info:  # a matching workload meets its own entry's
        rules.for_workload(declared())
    assert {(p.line, p.key) for p in info.value.problems} >= {
        (9, "workloads.1.recommend.replay.gate")
    }
    valid = parse_model(OPT_IN, RepoConfig, file=".tortoise-bot.yaml")
    assert RepositoryRules.of_checkout(tmp_path, valid, RecommendSettings()).problems() == []


def test_defaults_fill_what_the_file_leaves_and_a_vpa_bound_names_its_manifest_line():
    vpa = DeclaredVPA(
        "app",
        container_policies=(VpaContainerPolicy("*", min_allowed=ResourceValues(0.05, None)),),
        locations={"*.minAllowed.cpu": Location("vpa.yaml", 12, ("spec", "minAllowed", "cpu"))},
    )
    app = DeclaredContainer("app", ResourceValues(1.0, None))
    init = DeclaredContainer("setup", ResourceValues(0.1, MIB), init=True)
    workload = DeclaredWorkload(FRONTEND, 2, (app, init), vpa=vpa)
    got = RepositoryRules(RepoConfig(), RecommendSettings()).for_workload(workload)
    assert list(got.containers) == ["app"]
    [settings] = got.containers.values()
    # no memory request: one is added (requests.add_missing)
    assert settings.policies == {"cpu": "vertical", "memory": "vertical"}
    assert settings.min_allocated == ResourceValues(0.05, None)
    assert str(got.origins["min_allocated.app.cpu"]) == "vpa.yaml:12: spec.minAllowed.cpu"
    assert got.origins["min_allocated.app.memory"] == Origin.default("min_allocated.app.memory")
    assert got.origins["policy.app.cpu"].is_default
    # the engine's input takes the resolved values as they are
    [container] = build_input(workload, _history(), containers=got.containers).containers
    assert (container.cpu_policy, container.memory_policy) == ("vertical", "vertical")
    kept = RepoConfig.model_validate({"requests": {"add_missing": False}})
    off = RepositoryRules(kept, RecommendSettings()).for_workload(workload)
    assert off.containers["app"].policies == {"cpu": "vertical", "memory": "off"}
    assert container.min_allocated == ResourceValues(0.05, None)
    with pytest.raises(ValueError, match="no settings resolved for container 'app'"):
        build_input(workload, _history(), containers={})


def _history() -> WorkloadHistory:
    return WorkloadHistory(FRONTEND, 0.0, 60.0)


REPOSITORY = """\
update_mode: auto
environments:
  - name: prod
    selector: {cluster: p}
    update_mode: "off"
pull_requests:
  grouping: namespace
  schedule: {start_hour: 9, end_hour: 17, days: [mon], timezone: UTC}
"""


@pytest.fixture
def repository(tmp_path) -> RepositorySettings:
    (tmp_path / ".tortoise-bot.yaml").write_text(REPOSITORY)
    config = parse_model(REPOSITORY, RepoConfig, file=".tortoise-bot.yaml")
    return RepositorySettings.of_checkout(tmp_path, config, BotSettings())


def test_an_environment_gets_its_entry_or_the_defaults(repository):
    prod = repository.environment("prod")
    assert prod.selector.value == {"cluster": "p"}
    assert str(prod.selector.origin) == ".tortoise-bot.yaml:4: environments.0.selector"
    assert prod.update_mode.value == "off"
    assert str(prod.update_mode.origin) == ".tortoise-bot.yaml:5: environments.0.update_mode"
    assert prod.namespace == Resolved(None, Origin.default("environments.namespace"))
    other = repository.environment("default")
    assert other.selector.value == {} and other.selector.origin.is_default
    assert repository.selector("prod") == {"cluster": "p"}
    workload = DeclaredWorkload(WorkloadRef("Deployment", "shop", "web", "prod"), 1, ())
    resolved = repository.for_workload(workload)
    assert resolved.update_mode == "off"
    assert str(resolved.origins["update_mode"]).endswith(":5: environments.0.update_mode")


def test_any_key_names_its_line_or_the_default(repository):
    assert str(repository.origin_of("pull_requests", "grouping")) == (
        ".tortoise-bot.yaml:7: pull_requests.grouping"
    )
    assert str(repository.origin_of("update_mode")) == ".tortoise-bot.yaml:1: update_mode"
    assert repository.origin_of("dashboard") == Origin.default("dashboard")
    assert repository.origin_of("environments", 3, "selector").is_default
    assert repository.origin_of("pull_requests", "labels").is_default


def test_the_dashboard_only_reason_reads_update_mode_and_the_schedule(repository, tmp_path):
    monday_noon = 4 * 86400 + 12 * 3600  # 1970-01-05 was a Monday
    assert repository.dashboard_only_reason(now_s=monday_noon) is None
    sunday = monday_noon - 86400
    assert repository.dashboard_only_reason(now_s=sunday) == (
        "outside the pull-request schedule window"
    )
    off = RepositorySettings(RepoConfig(update_mode="off"), BotSettings())
    assert off.dashboard_only_reason(now_s=monday_noon) == "update_mode is off"


NODES = """\
environments:
  - name: prod
    nodes:
      - {cpu: 7910m, memory: 29Gi}
      - {cpu: 3920m, memory: 60Gi}
  - name: staging
    nodes:
      - {cpu: 4, memory: 16Gi}
    max_allocatable: {cpu: 3500m}
  - name: broken
    nodes:
      - {cpu: lots}
"""


def _nodes(tmp_path) -> RepositoryRules:
    (tmp_path / ".tortoise-bot.yaml").write_text(NODES)
    config = parse_model(NODES, RepoConfig, file=".tortoise-bot.yaml")
    return RepositoryRules.of_checkout(tmp_path, config, RecommendSettings())


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        # each resource's largest node: 7.91 cores of the first, 60 GiB of the second
        ("prod", ResourceValues(7.91, 60 * 1024 * MIB)),
        # max_allocatable wins where it sets a resource; memory from the nodes
        ("staging", ResourceValues(3.5, 16 * 1024 * MIB)),
        # no node sizes declared: no bound
        ("default", ResourceValues()),
    ],
)
def test_an_environments_largest_node_bounds_its_containers(tmp_path, environment, expected):
    rules = _nodes(tmp_path)
    workload = DeclaredWorkload(
        WorkloadRef("Deployment", "shop", "web", environment),
        1,
        (DeclaredContainer("app", ResourceValues(0.1, 64 * MIB)),),
    )
    resolved = rules.for_workload(workload)
    assert resolved.containers["app"].max_allocatable == expected
    [container] = build_input(workload, _history(), containers=resolved.containers).containers
    assert container.max_allocatable == expected
    if environment == "prod":
        assert (
            str(resolved.origins["max_allocatable"])
            == ".tortoise-bot.yaml:4: environments.0.nodes.0.cpu"
        )


def test_a_node_size_that_does_not_parse_names_its_line(tmp_path):
    rules = _nodes(tmp_path)
    [problem] = rules.problems()
    assert (problem.line, problem.key) == (12, "environments.2.nodes.0.cpu")
