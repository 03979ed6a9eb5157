"""What a cluster's Kubernetes version serves, for what the bot proposes and replays
(``environments[].kubernetes_version``; None: unknown, everything, as for a current cluster).

* ``ContainerResource`` HPA metrics: beta, on by default, from 1.27 (GA in 1.30). Below, the
  pod-level ``Resource`` target is tuned instead (as for a Helm chart without them), unless the
  HPA already scales on ``ContainerResource`` metrics (the cluster then evidently serves them).
* ``behavior.scaleUp|scaleDown.tolerance``: alpha from 1.33 (feature gate
  ``HPAConfigurableTolerance``). Below, the API server drops the field: the replay uses the
  controller's 0.1 whatever the manifest declares.
"""

from __future__ import annotations

from dataclasses import replace

from bot.model import DEFAULT_BEHAVIOR, DeclaredHPA
from bot.model import KubernetesVersion as Version

CONTAINER_RESOURCE_SINCE: Version = (1, 27)
HPA_TOLERANCE_SINCE: Version = (1, 33)


def named(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


def container_resource_metrics(hpa: DeclaredHPA | None, version: Version | None) -> bool:
    """Whether per-container metrics may be proposed for ``hpa``: the repository can express
    them (``DeclaredHPA.container_resource``) and the cluster serves them (module doc)."""
    if hpa is None:
        return True
    if not hpa.container_resource:
        return False
    served = version is None or version >= CONTAINER_RESOURCE_SINCE
    return served or any(t.container is not None for t in hpa.targets)


def version_note(hpa: DeclaredHPA | None, version: Version | None) -> str | None:
    """Why ``version`` holds back a proposal or a declared field of ``hpa`` (None: nothing)."""
    if hpa is None or version is None:
        return None
    why = []
    if hpa.container_resource and not container_resource_metrics(hpa, version):
        why.append(
            f"Kubernetes {named(version)} serves no ContainerResource HPA metrics "
            f"(from {named(CONTAINER_RESOURCE_SINCE)})"
        )
    if served_hpa(hpa, version).behavior != hpa.behavior:
        why.append(
            f"Kubernetes {named(version)} drops the HPA's behavior tolerance "
            f"(from {named(HPA_TOLERANCE_SINCE)}): replayed at the default 0.1"
        )
    return "; ".join(why) or None


def served_hpa(hpa: DeclaredHPA, version: Version | None) -> DeclaredHPA:
    """``hpa`` as a cluster of ``version`` runs it: a declared tolerance dropped below 1.33."""
    if version is None or version >= HPA_TOLERANCE_SINCE:
        return hpa
    up, down = hpa.behavior.scale_up, hpa.behavior.scale_down
    behavior = replace(
        hpa.behavior,
        scale_up=replace(up, tolerance=DEFAULT_BEHAVIOR.scale_up.tolerance),
        scale_down=replace(down, tolerance=DEFAULT_BEHAVIOR.scale_down.tolerance),
    )
    return hpa if behavior == hpa.behavior else replace(hpa, behavior=behavior)
