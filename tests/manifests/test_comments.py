"""Every comment survives a metric rewrite: golden bytes for each rewrite (a pod-level metric
replaced, a metric added, a metric removed), in raw YAML and in an overlay's own patch, with LF
and CRLF line endings."""

from __future__ import annotations

import pytest

from bot.manifests.comments import comment_start
from tests.conftest import require_binary
from tests.manifests.conftest import edit, lost_comments
from tests.manifests.test_container_resource import TWO_CONTAINERS

METRICS = """\
  metrics:
  # CPU: the pod-level target
  - type: Resource # pod level
    resource:
      name: cpu
      target:
        type: Utilization
        # scale up if usage is above
        # 99% of the requested CPU (100m)
        averageUtilization: 99
  # memory below
  - type: ContainerResource
    containerResource:
      name: memory
      container: app
      # how full before scaling
      target: {type: Utilization, averageUtilization: 80}  # flow
# the end
"""
REPLACED = """\
  metrics:
  # CPU: the pod-level target
  - type: ContainerResource # pod level
    containerResource:
      name: cpu
      container: app
      target:
        type: Utilization
        # scale up if usage is above
        # 99% of the requested CPU (100m)
        averageUtilization: 73
  - type: ContainerResource
    containerResource:
      name: cpu
      container: istio-proxy
      target:
        type: Utilization
        averageUtilization: 70
  # memory below
  - type: ContainerResource
    containerResource:
      name: memory
      container: app
      # how full before scaling
      target: {type: Utilization, averageUtilization: 80}  # flow
# the end
"""
ADDED = METRICS.replace(
    "  # flow\n",
    "  # flow\n"
    "  - type: ContainerResource\n"
    "    containerResource:\n"
    "      name: memory\n"
    "      container: istio-proxy\n"
    "      target:\n"
    "        type: Utilization\n"
    "        averageUtilization: 75\n",
)
REMOVED = """\
  metrics:
  # CPU: the pod-level target
  - type: Resource # pod level
    resource:
      name: cpu
      target:
        type: Utilization
        # scale up if usage is above
        # 99% of the requested CPU (100m)
        averageUtilization: 99
  # memory below
      # how full before scaling
      # flow
# the end
"""
Change = tuple[str, str, float | int | None, str | None]
REWRITES: dict[str, tuple[list[Change], str]] = {
    "replace": (
        [("web", "hpa.target.cpu", 70, "istio-proxy"), ("web", "hpa.target.cpu", 73, "app")],
        REPLACED,
    ),
    "add": ([("web", "hpa.target.memory", 75, "istio-proxy")], ADDED),
    "remove": ([("web", "hpa.target.memory", None, "app")], REMOVED),
}
RAW_HEAD = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web # the storefront
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 10
"""
PATCH_HEAD = """\
# prod scales on its own metrics
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
"""
BASE_HPA = RAW_HEAD + (
    "  metrics:\n  - type: Resource\n    resource:\n      name: cpu\n"
    "      target: {type: Utilization, averageUtilization: 50}\n"
)


def _files(layout: str, metrics: str) -> tuple[str, dict[str, str]]:
    """(the file holding the metrics, every file of the repository)."""
    if layout == "raw":
        return "hpa.yaml", {"web.yaml": TWO_CONTAINERS, "hpa.yaml": RAW_HEAD + metrics}
    return "overlays/prod/hpa.yaml", {
        "base/kustomization.yaml": "resources:\n- web.yaml\n- hpa.yaml\n",
        "base/web.yaml": TWO_CONTAINERS,
        "base/hpa.yaml": BASE_HPA,
        "overlays/prod/kustomization.yaml": "resources:\n- ../../base\npatches:\n- path: hpa.yaml\n",
        "overlays/prod/hpa.yaml": PATCH_HEAD + metrics,
        "overlays/dev/kustomization.yaml": "resources:\n- ../../base\n",
    }


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("layout", ["raw", "overlay-patch"])
@pytest.mark.parametrize("rewrite", sorted(REWRITES))
def test_every_comment_survives_a_metric_rewrite(repo, rewrite, layout, newline):
    if layout != "raw":
        require_binary("kubectl")
    changes, expected = REWRITES[rewrite]
    path, files = _files(layout, METRICS)
    root = repo({p: t.replace("\n", newline) for p, t in files.items()})
    environment = None if layout == "raw" else "overlays/prod"
    result = edit(root, changes, environment=environment)
    assert not result.errors and not result.failed, result.errors
    assert [f.path for f in result.files] == [path]
    _, golden = _files(layout, expected)
    assert (root / path).read_bytes() == golden[path].replace("\n", newline).encode()
    assert not lost_comments(files[path], golden[path])


def test_comment_start_ignores_hashes_in_values_and_quotes():
    assert comment_start("  # alone") == 2
    assert comment_start("cpu: 100m # why") == 10
    assert comment_start("image: 'repo#tag' # pinned") == 18
    assert comment_start('name: "a #b"') is None
    assert comment_start("url: http://x/#anchor") is None
