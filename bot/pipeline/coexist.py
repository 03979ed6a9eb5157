"""A VerticalPodAutoscaler of the repository beside the bot: who sizes which container resource.

A VPA (``autoscaling.k8s.io/v1``, ``spec.targetRef`` naming the workload) whose
``updatePolicy.updateMode`` is ``Auto`` (the default when unset), ``Recreate``,
``InPlaceOrRecreate`` or ``Initial`` writes the requests of the resources it controls: per
container, its ``resourcePolicy.containerPolicies[]`` entry (else the ``containerName: "*"``
one) names them in ``controlledResources`` (default CPU and memory); ``mode: "Off"`` leaves the
container out. The bot does not fight it: those container resources are sized by the VPA
alone, their values kept (rule ``policy.vpa_managed``, ``skipped: managed by VPA <name> (mode
<mode>)`` in every output).
A VPA in mode ``Off`` only recommends: the bot proposes as usual and notes it. A workload whose
HPA scales on CPU while the VPA controls CPU gets Kubernetes' warning against the pair.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Final

from bot.model import (
    ANY_CONTAINER,
    RESOURCES,
    ContainerRecommendation,
    ContainerSettings,
    DeclaredVPA,
    DeclaredWorkload,
    Explained,
    Note,
    Recommendation,
    Resource,
    ResourceRecommendation,
)
from bot.recommend.rules import Rule

ACTIVE_MODES: Final = frozenset({"Auto", "Recreate", "InPlaceOrRecreate", "Initial"})
"""Update modes in which the VPA writes requests (``Off``: it only recommends)."""
DEFAULT_MODE: Final = "Auto"
"""The VPA's update mode when ``updatePolicy.updateMode`` is unset."""


def mode_of(vpa: DeclaredVPA) -> str:
    """The VPA's update mode, ``Auto`` when unset."""
    return vpa.update_mode or DEFAULT_MODE


def managed_by(vpa: DeclaredVPA) -> str:
    """``VPA web (mode Auto)``: how every output names the VPA."""
    return f"VPA {vpa.name} (mode {mode_of(vpa)})"


def controlled(declared: DeclaredWorkload) -> dict[str, tuple[Resource, ...]]:
    """Per container the workload's VPA writes, the resources it writes (none: absent)."""
    vpa = declared.vpa
    if vpa is None or mode_of(vpa) not in ACTIVE_MODES:
        return {}
    policies = {p.container: p for p in vpa.container_policies}
    out: dict[str, tuple[Resource, ...]] = {}
    for container in declared.containers:
        if container.init:
            continue
        policy = policies.get(container.name) or policies.get(ANY_CONTAINER)
        if policy is None:
            out[container.name] = RESOURCES
        elif policy.mode != "Off" and policy.controlled_resources:
            out[container.name] = tuple(policy.controlled_resources)
    return out


def coexisting_containers(
    declared: DeclaredWorkload, containers: Mapping[str, ContainerSettings]
) -> dict[str, ContainerSettings]:
    """``containers`` with the policy of every resource the VPA writes turned ``off``: the
    engine keeps their values (and its replay replays them as they are)."""
    out = dict(containers)
    for name, resources in controlled(declared).items():
        current = out.get(name, ContainerSettings())
        policies = dict(current.policies)
        policies.update(dict.fromkeys(resources, "off"))
        out[name] = replace(current, policies=policies)
    return out


def _managed(value: Explained, why: str) -> Explained:
    return Explained(value.current, value.current, Rule.POLICY_VPA_MANAGED, why, value.inputs)


def label_managed(declared: DeclaredWorkload, rec: Recommendation) -> Recommendation:
    """``rec`` with each value the VPA writes named for it (rule ``policy.vpa_managed``)."""
    found = controlled(declared)
    if not found or declared.vpa is None:
        return rec
    why = f"managed by {managed_by(declared.vpa)}"

    def resource(name: str, r: ResourceRecommendation) -> ResourceRecommendation:
        if r.resource not in found.get(name, ()):
            return r
        return replace(r, request=_managed(r.request, why), limit=_managed(r.limit, why))

    containers = tuple(
        ContainerRecommendation(c.name, resource(c.name, c.cpu), resource(c.name, c.memory))
        if c.name in found
        else c
        for c in rec.containers
    )
    return replace(rec, containers=containers)


def coexisting(declared: DeclaredWorkload, rec: Recommendation) -> Recommendation:
    """``rec`` with the VPA's values named for it and the VPA's notes added."""
    notes = coexist_notes(declared)
    labelled = label_managed(declared, rec)
    return replace(labelled, notes=(*labelled.notes, *notes)) if notes else labelled


VPA_NOTE_CODES: Final = frozenset({"vpa-managed", "vpa-recommends-only", "vpa-and-hpa-on-cpu"})
"""Codes of the notes below (``plan`` prints them under the workload's table)."""


def coexist_notes(declared: DeclaredWorkload) -> tuple[Note, ...]:
    """What the outputs say of the workload's VPA: which resources it writes (skipped here),
    that a VPA in mode ``Off`` only recommends, and Kubernetes' warning when its HPA scales on
    CPU that the VPA writes."""
    vpa = declared.vpa
    if vpa is None:
        return ()
    if mode_of(vpa) not in ACTIVE_MODES:
        return (
            Note(
                "vpa-recommends-only",
                f"{managed_by(vpa)} only recommends: it changes no pod, the bot proposes as usual",
            ),
        )
    found = controlled(declared)
    notes = [
        Note(
            "vpa-managed",
            f"{name} {' and '.join(resources)}: skipped: managed by {managed_by(vpa)}",
            name,
        )
        for name, resources in found.items()
    ]
    hpa = declared.hpa
    on_cpu = hpa is not None and any(t.resource == "cpu" for t in hpa.targets)
    if hpa is not None and on_cpu and any("cpu" in r for r in found.values()):
        notes.append(
            Note(
                "vpa-and-hpa-on-cpu",
                f"HPA {hpa.name} scales on CPU utilisation and {managed_by(vpa)} sets the "
                "CPU requests it is measured against: Kubernetes advises against using "
                "the two together on CPU or memory",
            )
        )
    return tuple(notes)
