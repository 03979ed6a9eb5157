"""A pod-level ``Resource`` metric replaced by one ``ContainerResource`` metric per container.

Golden bytes: the metric is replaced in place (same position, other metrics and comments kept) in
the file's own indentation; a shared Kustomize base gets a patch in the overlay instead. The
manifests and expected results are files in ``golden/container_resource/``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config.repo import RepoConfig
from bot.manifests import PATCH_FILE, discover
from bot.manifests.inventory_json import workload_json
from bot.manifests.rendering import render
from bot.manifests.yamldoc import load_plain
from tests.conftest import require_binary
from tests.manifests.conftest import edit, snapshot, workload

GOLDEN = Path(__file__).parent / "golden" / "container_resource"


def golden(name: str) -> str:
    """The text of ``golden/container_resource/NAME``, byte for byte (LF, final newline or not)."""
    return (GOLDEN / name).read_bytes().decode()


TWO_CONTAINERS = golden("web.yaml")

HPA_2 = golden("hpa-two-space.yaml")

HPA_2_REPLACED = golden("hpa-two-space-replaced.yaml")

HPA_4 = golden("hpa-four-space.yaml")

HPA_4_REPLACED = golden("hpa-four-space-replaced.yaml")

CHANGES: list[tuple[str, str, float | int | None, str | None]] = [
    # given out of container order: the metrics follow the workload's containers
    ("web", "hpa.target.cpu", 60, "istio-proxy"),
    ("web", "hpa.target.cpu", 65, "app"),
]


@pytest.fixture
def web_repo(repo):
    """``web_repo(hpa)``: a repository holding the two-container Deployment and ``hpa`` (text,
    or bytes for CRLF files)."""
    return lambda hpa: repo({"web.yaml": TWO_CONTAINERS, "hpa.yaml": hpa})


def test_resource_metric_is_replaced_in_place_two_space_with_comments(web_repo):
    root = web_repo(HPA_2)
    result = edit(root, [*CHANGES, ("web", "hpa.minReplicas", 4, None)])
    assert not result.errors and not result.failed, result.errors
    assert (root / "hpa.yaml").read_text() == HPA_2_REPLACED
    assert (root / "web.yaml").read_text() == TWO_CONTAINERS
    hpa = workload(discover(root, RepoConfig()).inventory, "web").hpa
    assert hpa is not None and hpa.other_metrics == 1
    assert [(t.container, t.resource, t.utilization_percent) for t in hpa.targets] == [
        ("app", "cpu", 65),
        ("istio-proxy", "cpu", 60),
        (None, "memory", 80),
    ]


def test_four_space_indentless_sequence_without_final_newline(web_repo):
    root = web_repo(HPA_4.removesuffix("\n"))
    result = edit(
        root,
        [("web", "hpa.target.cpu", 75, "app"), ("web", "hpa.target.cpu", 70, "istio-proxy")],
    )
    assert not result.errors and not result.failed, result.errors
    assert (root / "hpa.yaml").read_text() == HPA_4_REPLACED


def test_crlf_line_endings_are_kept(web_repo):
    crlf = HPA_2.replace("\n", "\r\n").encode()
    root = web_repo(crlf)
    result = edit(root, CHANGES)
    assert not result.errors, result.errors
    expected = HPA_2_REPLACED.replace("minReplicas: 4", "minReplicas: 3")
    assert (root / "hpa.yaml").read_bytes() == expected.replace("\n", "\r\n").encode()


def test_a_chart_keeps_its_pod_level_target(repo):
    # Helm values name one pod-level target: discovery says ContainerResource cannot be written.
    chart = "apiVersion: v2\nname: web\nversion: 1.0.0\n"
    values = (
        "autoscaling:\n  enabled: true\n  maxReplicas: 5\n  targetCPUUtilizationPercentage: 80\n"
    )
    root = repo({"chart/Chart.yaml": chart, "chart/values.yaml": values})
    shop = workload(discover(root, RepoConfig()).inventory, "web")
    assert shop.hpa is not None and not shop.hpa.container_resource
    assert workload_json(shop)["hpa"]["containerResource"] is False


def test_raw_yaml_can_express_container_resource(web_repo):
    raw = web_repo(HPA_2)
    assert workload(discover(raw, RepoConfig()).inventory, "web").hpa.container_resource


HPA_V1 = golden("hpa-autoscaling-v1.yaml")


def test_autoscaling_v1_cannot_express_container_resource(web_repo):
    root = web_repo(HPA_V1)
    hpa = workload(discover(root, RepoConfig()).inventory, "web").hpa
    assert hpa is not None and not hpa.container_resource


KUSTOMIZE_BASE_HPA = golden("base-hpa.yaml")

OVERLAY_PATCH = golden("overlay-patch-replacing.yaml")


def test_shared_kustomize_base_gets_an_overlay_patch(repo):
    require_binary("kubectl")
    root = _shared_base(repo, KUSTOMIZE_BASE_HPA)
    before = snapshot(root)
    result = edit(
        root,
        [
            ("web", "hpa.target.cpu", 75, "app"),
            ("web", "hpa.maxReplicas", 8, None),
            ("web", "hpa.target.cpu", 70, "istio-proxy"),
        ],
        environment="overlays/prod",
    )
    assert not result.errors and not result.failed, result.errors
    assert sorted(f.path for f in result.files) == [
        "overlays/prod/kustomization.yaml",
        f"overlays/prod/{PATCH_FILE}",
    ]
    assert (root / "base/hpa.yaml").read_bytes() == before["base/hpa.yaml"]
    assert (root / f"overlays/prod/{PATCH_FILE}").read_text() == OVERLAY_PATCH
    assert any("replacing the HPA metrics" in n.message for n in result.notes)
    inventory = discover(root, RepoConfig()).inventory
    prod = workload(inventory, "web", "overlays/prod").hpa
    dev = workload(inventory, "web", "overlays/dev").hpa
    assert _targets(root, "overlays/prod") == [("app", 75), ("istio-proxy", 70)]
    assert prod.other_metrics == 1  # the Pods metric, kept (as kubectl renders it: keys sorted)
    assert (prod.max_replicas, dev.max_replicas) == (8, 10)
    assert [(t.container, t.utilization_percent) for t in dev.targets] == [(None, 70)]


def test_a_flow_style_metric_is_refused_and_nothing_written(web_repo):
    flow = HPA_4.split("    metrics:", maxsplit=1)[0] + (
        "    metrics:\n"
        "    - {type: Resource, resource: {name: cpu, target: {type: Utilization, "
        "averageUtilization: 70}}}\n"
    )
    root = web_repo(flow)
    _refused(root, CHANGES, "ContainerResource not expressible here")


OVERLAY_OWN_METRICS = golden("overlay-own-metrics.yaml")


def test_metrics_an_overlay_patch_sets_are_replaced_in_that_patch(repo):
    require_binary("kubectl")
    root = repo(
        {
            "base/kustomization.yaml": "resources:\n- web.yaml\n- hpa.yaml\n",
            "base/web.yaml": TWO_CONTAINERS,
            "base/hpa.yaml": KUSTOMIZE_BASE_HPA,
            "overlays/prod/kustomization.yaml": (
                "resources:\n- ../../base\npatches:\n- path: hpa.yaml\n"
            ),
            "overlays/prod/hpa.yaml": OVERLAY_OWN_METRICS,
            "overlays/dev/kustomization.yaml": "resources:\n- ../../base\n",
        }
    )
    result = edit(
        root,
        [("web", "hpa.target.cpu", 70, "app"), ("web", "hpa.target.cpu", 65, "istio-proxy")],
        environment="overlays/prod",
    )
    assert not result.errors and not result.failed, result.errors
    assert [f.path for f in result.files] == ["overlays/prod/hpa.yaml"]
    replaced = OVERLAY_OWN_METRICS.split("  - type:", maxsplit=1)[0] + (
        "  - type: ContainerResource\n    containerResource:\n      name: cpu\n"
        "      container: app\n      target:\n        type: Utilization\n"
        "        averageUtilization: 70 # prod\n"
        "  - type: ContainerResource\n    containerResource:\n      name: cpu\n"
        "      container: istio-proxy\n      target:\n        type: Utilization\n"
        "        averageUtilization: 65\n"
    )
    assert (root / "overlays/prod/hpa.yaml").read_text() == replaced
    inventory = discover(root, RepoConfig()).inventory
    prod = workload(inventory, "web", "overlays/prod").hpa
    assert [(t.container, t.utilization_percent) for t in prod.targets] == [
        ("app", 70),
        ("istio-proxy", 65),
    ]


HPA_APP_ONLY = golden("hpa-app-only.yaml")

PROXY_METRIC = golden("proxy-metric.yaml")

HPA_APP_ONLY_ADDED = HPA_APP_ONLY.replace(
    "    # memory stays pod-level\n", PROXY_METRIC + "    # memory stays pod-level\n"
)

ADD_PROXY: list[tuple[str, str, float | int | None, str | None]] = [
    ("web", "hpa.target.cpu", 70, "istio-proxy"),
]


def test_missing_metric_is_added_after_the_last_container_resource_item(web_repo):
    root = web_repo(HPA_APP_ONLY)
    result = edit(root, ADD_PROXY)
    assert not result.errors and not result.failed, result.errors
    assert (root / "hpa.yaml").read_text() == HPA_APP_ONLY_ADDED
    hpa = workload(discover(root, RepoConfig()).inventory, "web").hpa
    assert [(t.container, t.resource, t.utilization_percent) for t in hpa.targets] == [
        ("app", "cpu", 60),
        ("istio-proxy", "cpu", 70),
        (None, "memory", 80),
    ]


def test_missing_metric_is_added_with_crlf_and_no_final_newline(web_repo):
    crlf = HPA_APP_ONLY.removesuffix("\n").replace("\n", "\r\n").encode()
    root = web_repo(crlf)
    result = edit(root, ADD_PROXY)
    assert not result.errors and not result.failed, result.errors
    expected = HPA_APP_ONLY_ADDED.removesuffix("\n").replace("\n", "\r\n").encode()
    assert (root / "hpa.yaml").read_bytes() == expected


def test_missing_metric_is_added_at_the_end_of_a_four_space_list(web_repo):
    # Only the app's metric is last: the new item goes after it, at the end of the file (no final
    # newline kept), in the file's indentless four-space style.
    app_only = HPA_4.replace(
        "- type: Resource\n      resource:", "- type: ContainerResource\n      containerResource:"
    ).replace("          name: cpu\n", "          name: cpu\n          container: app\n")
    root = web_repo(app_only.removesuffix("\n"))
    result = edit(root, ADD_PROXY)
    assert not result.errors and not result.failed, result.errors
    assert (root / "hpa.yaml").read_text() == HPA_4_REPLACED.replace(
        "averageUtilization: 75", "averageUtilization: 70"
    )


def test_added_memory_metric_follows_the_replaced_cpu_metric(web_repo):
    root = web_repo(HPA_4)
    result = edit(
        root,
        [
            ("web", "hpa.target.memory", 70, "app"),
            ("web", "hpa.target.cpu", 75, "app"),
            ("web", "hpa.target.cpu", 70, "istio-proxy"),
        ],
    )
    assert not result.errors and not result.failed, result.errors
    assert (root / "hpa.yaml").read_text() == HPA_4_REPLACED + (
        "\n    - type: ContainerResource\n      containerResource:\n          name: memory\n"
        "          container: app\n          target:\n              type: Utilization\n"
        "              averageUtilization: 70\n"
    )


def test_added_metric_where_the_hpa_has_no_metrics_list_fails_and_writes_nothing(web_repo):
    bare = HPA_4.split("    metrics:", maxsplit=1)[0]
    root = web_repo(bare)
    _refused(root, ADD_PROXY, "ContainerResource not expressible here")


KUSTOMIZE_BASE_APP_ONLY = KUSTOMIZE_BASE_HPA.replace(
    "  - type: Resource\n    resource:\n      name: cpu\n",
    "  - type: ContainerResource\n    containerResource:\n      name: cpu\n      container: app\n",
)

OVERLAY_PATCH_ADDED = golden("overlay-patch-adding.yaml")


def test_shared_kustomize_base_gets_an_overlay_patch_adding_the_metric(repo):
    root = _edit_prod_overlay(repo, KUSTOMIZE_BASE_APP_ONLY, ADD_PROXY, "adding to")
    assert (root / f"overlays/prod/{PATCH_FILE}").read_text() == OVERLAY_PATCH_ADDED
    assert _targets(root, "overlays/prod") == [("app", 70), ("istio-proxy", 70)]
    assert _targets(root, "overlays/dev") == [("app", 70)]


def _refused(root, changes, message: str) -> None:
    """The edit of ``changes`` fails with ``message`` and writes nothing."""
    before = snapshot(root)
    result = edit(root, changes)
    assert result.failed and not result.files
    assert message in result.errors[0].message
    assert snapshot(root) == before


def _edit_prod_overlay(repo, base_hpa: str, changes, verb: str):
    """``changes`` edited into the prod overlay of ``_shared_base(repo, base_hpa)``: the shared
    base stays byte for byte and a note says the patch is ``verb`` (``adding to``) its metrics."""
    require_binary("kubectl")
    root = _shared_base(repo, base_hpa)
    before = snapshot(root)
    result = edit(root, changes, environment="overlays/prod")
    assert not result.errors and not result.failed, result.errors
    assert (root / "base/hpa.yaml").read_bytes() == before["base/hpa.yaml"]
    assert any(f"{verb} the HPA metrics" in n.message for n in result.notes)
    return root


def _shared_base(repo, base_hpa: str):
    """A Kustomize base with the two-container Deployment and ``base_hpa``, shared by two
    overlays."""
    return repo(
        {
            "base/kustomization.yaml": "resources:\n- web.yaml\n- hpa.yaml\n",
            "base/web.yaml": TWO_CONTAINERS,
            "base/hpa.yaml": base_hpa,
            "overlays/prod/kustomization.yaml": "resources:\n- ../../base\n",
            "overlays/dev/kustomization.yaml": "resources:\n- ../../base\n",
        }
    )


def _targets(root, environment: str) -> list[tuple[str | None, int]]:
    hpa = workload(discover(root, RepoConfig()).inventory, "web", environment).hpa
    assert hpa is not None
    return [(t.container, t.utilization_percent) for t in hpa.targets]


# --------------------------------------------------------------------------- removed metrics
# Tortoise removes the ContainerResource metric of a resource no longer horizontal: a proposal
# of None for a per-container target deletes that metric's item, and only it.

REMOVE_PROXY: list[tuple[str, str, float | int | None, str | None]] = [
    ("web", "hpa.target.cpu", None, "istio-proxy"),
]

APP_METRIC = HPA_APP_ONLY.split("  metrics:\n", maxsplit=1)[1].split("    # memory", maxsplit=1)[0]
"""The app's cpu metric item, with the comment on its dash line."""

HPA_CPU_BOTH = HPA_APP_ONLY_ADDED.split("    # memory stays pod-level\n", maxsplit=1)[0]
"""The app's and istio-proxy's cpu metrics, nothing else."""


def _metrics(root) -> list[tuple[str | None, str, int]]:
    hpa = workload(discover(root, RepoConfig()).inventory, "web").hpa
    assert hpa is not None
    return [(t.container, t.resource, t.utilization_percent) for t in hpa.targets]


def test_removed_metric_loses_its_lines_and_the_comments_around_stay(web_repo):
    root = web_repo(HPA_APP_ONLY_ADDED)
    result = edit(root, REMOVE_PROXY)
    assert not result.errors and not result.failed, result.errors
    assert (root / "hpa.yaml").read_text() == HPA_APP_ONLY
    assert (root / "web.yaml").read_text() == TWO_CONTAINERS
    assert _metrics(root) == [("app", "cpu", 60), (None, "memory", 80)]


def test_a_comment_on_the_removed_lines_stays_as_a_comment_line(web_repo):
    root = web_repo(HPA_APP_ONLY_ADDED)
    result = edit(root, [("web", "hpa.target.cpu", None, "app")])
    assert not result.errors and not result.failed, result.errors
    assert APP_METRIC in HPA_APP_ONLY_ADDED and "# the app" in APP_METRIC
    assert (root / "hpa.yaml").read_text() == HPA_APP_ONLY_ADDED.replace(
        APP_METRIC, "    # the app\n"
    )


def test_removal_keeps_crlf_line_endings(web_repo):
    crlf = HPA_APP_ONLY_ADDED.replace("\n", "\r\n").encode()
    root = web_repo(crlf)
    result = edit(root, REMOVE_PROXY)
    assert not result.errors and not result.failed, result.errors
    assert (root / "hpa.yaml").read_bytes() == HPA_APP_ONLY.replace("\n", "\r\n").encode()


def test_removing_the_last_item_of_a_crlf_file_without_final_newline_keeps_none(web_repo):
    crlf = HPA_4_REPLACED.replace("\n", "\r\n").encode()
    root = web_repo(crlf)
    result = edit(root, REMOVE_PROXY)
    assert not result.errors and not result.failed, result.errors
    app_only = HPA_4_REPLACED.split("\n    - type: ContainerResource\n", maxsplit=2)
    expected = "\n    - type: ContainerResource\n".join(app_only[:2])
    assert expected.endswith("averageUtilization: 75")
    assert (root / "hpa.yaml").read_bytes() == expected.replace("\n", "\r\n").encode()


def test_removal_and_a_new_metric_in_one_edit(web_repo):
    root = web_repo(HPA_CPU_BOTH)
    result = edit(root, [*REMOVE_PROXY, ("web", "hpa.target.memory", 70, "app")])
    assert not result.errors and not result.failed, result.errors
    memory = PROXY_METRIC.replace("name: cpu", "name: memory").replace("istio-proxy", "app")
    assert (root / "hpa.yaml").read_text() == HPA_CPU_BOTH.replace(PROXY_METRIC, memory)
    assert _metrics(root) == [("app", "cpu", 60), ("app", "memory", 70)]


def test_removal_of_every_item_with_a_new_metric_puts_the_new_one_in_its_place(web_repo):
    # app cpu becomes vertical, app memory horizontal: the one metric is swapped, never none.
    only_app = HPA_CPU_BOTH.replace(PROXY_METRIC, "")
    root = web_repo(only_app)
    result = edit(
        root, [("web", "hpa.target.cpu", None, "app"), ("web", "hpa.target.memory", 70, "app")]
    )
    assert not result.errors and not result.failed, result.errors
    memory = PROXY_METRIC.replace("name: cpu", "name: memory").replace("istio-proxy", "app")
    # the comment on the removed item's dash line moves to the item taking its place
    memory = memory.replace("- type: ContainerResource\n", "- type: ContainerResource # the app\n")
    assert (root / "hpa.yaml").read_text() == only_app.replace(APP_METRIC, memory)


def test_removal_and_the_pod_level_metric_replaced_in_one_edit(web_repo):
    root = web_repo(HPA_APP_ONLY_ADDED)
    result = edit(root, [*REMOVE_PROXY, ("web", "hpa.target.memory", 75, "app")])
    assert not result.errors and not result.failed, result.errors
    memory = (
        "    - type: ContainerResource\n      containerResource:\n        name: memory\n"
        "        container: app\n        target:\n          type: Utilization\n"
        "          averageUtilization: 75\n"
    )
    pod_level = HPA_APP_ONLY.split("    # memory stays pod-level\n", maxsplit=1)[1]
    expected = HPA_APP_ONLY.replace(pod_level, memory)
    assert (root / "hpa.yaml").read_text() == expected
    assert _metrics(root) == [("app", "cpu", 60), ("app", "memory", 75)]


def test_removal_and_another_containers_target_change_in_one_edit(web_repo):
    root = web_repo(HPA_APP_ONLY_ADDED)
    result = edit(root, [("web", "hpa.target.cpu", 65, "app"), *REMOVE_PROXY])
    assert not result.errors and not result.failed, result.errors
    expected = HPA_APP_ONLY.replace("averageUtilization: 60", "averageUtilization: 65")
    assert (root / "hpa.yaml").read_text() == expected


def test_removing_the_only_metric_is_refused_and_nothing_written(web_repo):
    only_app = HPA_CPU_BOTH.replace(PROXY_METRIC, "")
    root = web_repo(only_app)
    _refused(root, [("web", "hpa.target.cpu", None, "app")], "would leave none")


def test_a_metric_autoscaling_v1_cannot_hold_is_a_reason_not_an_edit(web_repo):
    root = web_repo(HPA_V1)
    _refused(root, REMOVE_PROXY, "remove it by hand")


def test_verification_rejects_a_removal_that_takes_another_metric_too(web_repo, monkeypatch):
    # Make the planner also delete the queue-depth Pods metric: the targets still read as
    # planned, but the rediscovered HPA lost a metric the bot never touches -> refused.
    from bot.manifests.metric_edits import MetricPlanner

    planned = MetricPlanner.metric_removals

    def greedy(self, plan, entry, changes, *, adding):
        return planned(self, plan, entry, changes, adding=adding) | {0}

    monkeypatch.setattr(MetricPlanner, "metric_removals", greedy)
    hpa = HPA_2_REPLACED  # Pods, app cpu, istio-proxy cpu, pod-level memory
    root = web_repo(hpa)
    _refused(root, REMOVE_PROXY, "hpa.otherMetrics reads 0 after the edit, expected 1")


def test_verification_accepts_the_planned_removal_only(web_repo):
    root = web_repo(HPA_2_REPLACED)
    result = edit(root, REMOVE_PROXY)
    assert not result.errors and not result.failed, result.errors
    hpa = workload(discover(root, RepoConfig()).inventory, "web").hpa
    assert hpa is not None and hpa.other_metrics == 1
    assert _metrics(root) == [("app", "cpu", 65), (None, "memory", 80)]


KUSTOMIZE_BASE_BOTH = KUSTOMIZE_BASE_APP_ONLY + (
    "  - type: ContainerResource\n    containerResource:\n      name: cpu\n"
    "      container: istio-proxy\n      target:\n        type: Utilization\n"
    "        averageUtilization: 70\n"
)


def test_shared_kustomize_base_gets_an_overlay_patch_removing_the_metric(repo):
    root = _edit_prod_overlay(repo, KUSTOMIZE_BASE_BOTH, REMOVE_PROXY, "removing from")
    # kubectl renders prod with exactly the base's metrics minus istio-proxy's; dev unchanged.
    [base_hpa] = load_plain(KUSTOMIZE_BASE_BOTH)
    prod, dev = (_rendered_metrics(root, env) for env in ("overlays/prod", "overlays/dev"))
    assert dev == base_hpa["spec"]["metrics"]
    assert prod == base_hpa["spec"]["metrics"][:2]
    assert base_hpa["spec"]["metrics"][2]["containerResource"]["container"] == "istio-proxy"


def _rendered_metrics(root, environment: str) -> list[dict]:
    [hpa] = [
        d
        for d in render(root, environment, f"{environment}/kustomization.yaml")
        if d.get("kind") == "HorizontalPodAutoscaler"
    ]
    metrics: list[dict] = hpa["spec"]["metrics"]
    return metrics


def test_overlay_patch_removing_one_metric_and_changing_another(repo):
    # One patch: the app's new target (a scalar of the copied list) and istio-proxy's item
    # gone (a splice): scalars apply on the base's indices first, then the removal.
    changes = [("web", "hpa.target.cpu", 75, "app"), *REMOVE_PROXY]
    root = _edit_prod_overlay(repo, KUSTOMIZE_BASE_BOTH, changes, "removing from")
    [base_hpa] = load_plain(KUSTOMIZE_BASE_BOTH)
    expected = base_hpa["spec"]["metrics"][:2]
    expected[1]["containerResource"]["target"]["averageUtilization"] = 75
    assert _rendered_metrics(root, "overlays/prod") == expected
    assert _targets(root, "overlays/dev") == [("app", 70), ("istio-proxy", 70)]
