"""What an environment's ``kubernetes_version`` lets the bot propose and replay: per-container
``ContainerResource`` HPA metrics from 1.27, a declared HPA ``tolerance`` from 1.33; unknown
(unset) as a current cluster. The opt-in setting, read per environment with its line."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.config.bot import BotSettings
from bot.config.errors import ConfigError
from bot.config.load import parse_model
from bot.config.repo import RepoConfig
from bot.model import (
    DEFAULT_BEHAVIOR,
    MIB,
    ContainerSettings,
    DeclaredContainer,
    DeclaredHPA,
    DeclaredWorkload,
    HpaBehavior,
    HpaTarget,
    ResourceValues,
    WorkloadRef,
)
from bot.recommend.inputs import build_input
from bot.recommend.kubernetes import container_resource_metrics, served_hpa, version_note
from bot.settings import RepositorySettings
from tests.recommend.factories import container_history, history

POD_LEVEL_HPA = DeclaredHPA("web", 2, 10, (HpaTarget("cpu", 60),))
PER_CONTAINER_HPA = DeclaredHPA("web", 2, 10, (HpaTarget("cpu", 60, "app"),))
TIGHT = HpaBehavior(
    replace(DEFAULT_BEHAVIOR.scale_up, tolerance=0.05),
    replace(DEFAULT_BEHAVIOR.scale_down, tolerance=0.05, stabilization_s=60),
)


@pytest.mark.parametrize(
    ("version", "expected"),
    [((1, 26), False), ((1, 27), True), ((1, 30), True), (None, True)],
)
def test_container_resource_metrics_are_proposed_from_1_27(version, expected):
    assert container_resource_metrics(POD_LEVEL_HPA, version) is expected


def test_an_hpa_already_on_container_resource_metrics_keeps_them_on_an_older_cluster():
    assert container_resource_metrics(PER_CONTAINER_HPA, (1, 26))
    assert version_note(PER_CONTAINER_HPA, (1, 26)) is None


def test_what_the_repository_cannot_express_stays_out_whatever_the_version():
    helm = replace(POD_LEVEL_HPA, container_resource=False)
    assert not container_resource_metrics(helm, (1, 30))
    assert version_note(helm, (1, 26)) is None  # not the version's doing


@pytest.mark.parametrize(
    ("version", "tolerance"), [((1, 32), 0.1), ((1, 33), 0.05), ((1, 34), 0.05), (None, 0.05)]
)
def test_a_declared_tolerance_is_replayed_only_where_it_is_served(version, tolerance):
    hpa = served_hpa(replace(POD_LEVEL_HPA, behavior=TIGHT), version)
    assert hpa.behavior.scale_up.tolerance == tolerance
    assert hpa.behavior.scale_down.tolerance == tolerance
    assert hpa.behavior.scale_down.stabilization_s == 60  # the rest of behavior is served


def _workload(hpa: DeclaredHPA) -> DeclaredWorkload:
    return DeclaredWorkload(
        WorkloadRef("Deployment", "shop", "web", "prod"),
        None,
        (DeclaredContainer("app", ResourceValues(0.5, 256 * MIB)),),
        hpa=hpa,
    )


def test_the_engine_input_is_what_the_clusters_version_serves():
    hist = history(container_history("app", 0.2, 100 * MIB, days=1), days=1)
    settings = {"app": ContainerSettings({"cpu": "horizontal", "memory": "vertical"})}
    workload = _workload(replace(POD_LEVEL_HPA, behavior=TIGHT))
    old = build_input(workload, hist, containers=settings, kubernetes_version=(1, 26))
    assert not old.container_resource_metrics
    assert old.hpa is not None and old.hpa.behavior.scale_up.tolerance == 0.1
    assert old.kubernetes_note is not None
    assert "1.26 serves no ContainerResource" in old.kubernetes_note
    assert "drops the HPA's behavior tolerance" in old.kubernetes_note
    new = build_input(workload, hist, containers=settings, kubernetes_version=(1, 33))
    assert new.container_resource_metrics and new.kubernetes_note is None
    assert new.hpa is not None and new.hpa.behavior == TIGHT
    unknown = build_input(workload, hist, containers=settings)
    assert unknown.container_resource_metrics and unknown.hpa == new.hpa


OPT_IN = """\
environments:
  - name: prod
    kubernetes_version: 'v1.26.5'
  - name: staging
"""


def test_the_version_is_read_per_environment(tmp_path):
    (tmp_path / ".tortoise-bot.yaml").write_text(OPT_IN)
    config = parse_model(OPT_IN, RepoConfig, file=".tortoise-bot.yaml")
    settings = RepositorySettings.of_checkout(tmp_path, config, BotSettings())
    prod = settings.environment("prod").kubernetes_version
    assert prod.value == (1, 26)
    assert str(prod.origin) == ".tortoise-bot.yaml:3: environments.0.kubernetes_version"
    assert settings.environment("staging").kubernetes_version.value is None
    assert settings.environment("other").kubernetes_version.value is None


@pytest.mark.parametrize(
    ("written", "message"),
    [("1.30", "write the version quoted"), ("'2.0'", "is not a Kubernetes version")],
)
def test_a_version_that_is_not_one_is_an_error_at_its_line(written, message):
    text = f"environments:\n  - name: prod\n    kubernetes_version: {written}\n"
    with pytest.raises(ConfigError) as caught:
        parse_model(text, RepoConfig, file=".tortoise-bot.yaml")
    [problem] = caught.value.problems
    assert problem.line == 3 and message in problem.message
