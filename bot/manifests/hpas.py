"""What discovery reads of HPAs besides their bounds and targets: ``spec.behavior``, and HPAs
that share a workload.

``read_behavior``: an HPA's ``spec.behavior`` as an ``HpaBehavior`` (the replay of its
controller uses it).
``scaleUp`` and ``scaleDown`` each read ``stabilizationWindowSeconds`` (0..3600),
``selectPolicy`` (``Max``, ``Min``, ``Disabled``), ``policies`` (``type: Pods|Percent``,
``value`` > 0, ``periodSeconds`` 1..1800; a declared list replaces the default one whole) and
``tolerance`` (a quantity ≥ 0, alpha in Kubernetes 1.33). A field left out keeps the upstream
default (``DEFAULT_BEHAVIOR``); a field that is not valid is reported with its file and line
(the API server would refuse the object) and the default is used in its place. The bot never
edits ``behavior``.

``ambiguous``: two or more HPAs that target one workload. Kubernetes scales it with none of
them (each reports ``ScalingActive: False``, reason ``AmbiguousSelector``): a warning at
each HPA after the first, and the workload is listed, never proposed for (neither HPA edited).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast, get_args

from bot.manifests.fields import get_path
from bot.manifests.quantities import QuantityError, parse_quantity
from bot.manifests.sources import Obj, Origin, Path_
from bot.model import (
    DEFAULT_BEHAVIOR,
    MAX_PERIOD_S,
    MAX_WINDOW_S,
    HpaBehavior,
    ScalingPolicy,
    ScalingPolicyType,
    ScalingRules,
    SelectPolicy,
    SourceError,
    WorkloadRef,
)

Report = Callable[[Origin | None, str], None]
"""Where a problem goes: the origin of the value (None: unknown) and the message."""


def read_behavior(
    obj: Obj,
    report: Report,
    base: Path_ = ("spec", "behavior"),
    label: str = "HorizontalPodAutoscaler",
) -> HpaBehavior:
    """``obj``'s ``spec.behavior`` (an ``autoscaling/v2`` HPA), the defaults filled in; ``base``
    names another place of the same shape (a KEDA ScaledObject's
    ``spec.advanced.horizontalPodAutoscalerConfig.behavior``), ``label`` what reports call it."""
    raw = get_path(obj.data, base)
    if raw is None:
        return DEFAULT_BEHAVIOR
    reader = _Reader(obj, report, label)
    if not isinstance(raw, dict):
        reader.bad(base, "not a mapping")
        return DEFAULT_BEHAVIOR
    return HpaBehavior(
        reader.rules(raw.get("scaleUp"), (*base, "scaleUp"), DEFAULT_BEHAVIOR.scale_up),
        reader.rules(raw.get("scaleDown"), (*base, "scaleDown"), DEFAULT_BEHAVIOR.scale_down),
    )


class _Reader:
    """Reads one HPA's rules, reporting each invalid field at its origin."""

    def __init__(self, obj: Obj, report: Report, label: str) -> None:
        self.obj = obj
        self.report = report
        self.label = label

    def bad(self, path: Path_, why: str) -> None:
        where = ".".join(str(p) for p in path)
        origin = self.obj.origin(path) or self.obj.root
        self.report(origin, f"{self.label} {self.obj.name}: {where}: {why}")

    def whole(self, raw: Any, path: Path_, low: int, high: int) -> int | None:
        """A whole number within ``[low, high]``, or None (reported)."""
        if isinstance(raw, bool) or not isinstance(raw, int) or not low <= raw <= high:
            self.bad(path, f"{raw!r} is not a whole number from {low} to {high}")
            return None
        return raw

    def rules(self, raw: Any, path: Path_, default: ScalingRules) -> ScalingRules:
        if raw is None:
            return default
        if not isinstance(raw, dict):
            self.bad(path, "not a mapping")
            return default
        out = default
        window = raw.get("stabilizationWindowSeconds")
        if window is not None:
            seconds = self.whole(window, (*path, "stabilizationWindowSeconds"), 0, MAX_WINDOW_S)
            if seconds is not None:
                out = replace(out, stabilization_s=seconds)
        select = raw.get("selectPolicy")
        if select is not None:
            if select in get_args(SelectPolicy):
                out = replace(out, select=select)
            else:
                self.bad((*path, "selectPolicy"), f"{select!r} is not Max, Min or Disabled")
        policies = raw.get("policies")
        if policies is not None:
            read = self.policies(policies, (*path, "policies"))
            if read:
                out = replace(out, policies=read)
        tolerance = raw.get("tolerance")
        if tolerance is not None:
            value = self.tolerance(tolerance, (*path, "tolerance"))
            if value is not None:
                out = replace(out, tolerance=value)
        return out

    def policies(self, raw: Any, path: Path_) -> tuple[ScalingPolicy, ...]:
        """The declared policies; empty (the default kept) when any is not valid."""
        if not isinstance(raw, list) or not raw:
            self.bad(path, "not a list of at least one policy")
            return ()
        out = []
        for index, item in enumerate(raw):
            at = (*path, index)
            if not isinstance(item, dict):
                self.bad(at, "not a mapping")
                return ()
            kind = item.get("type")
            if kind not in get_args(ScalingPolicyType):
                self.bad((*at, "type"), f"{kind!r} is not Pods or Percent")
                return ()
            value = self.whole(item.get("value"), (*at, "value"), 1, 2**31 - 1)
            period = self.whole(item.get("periodSeconds"), (*at, "periodSeconds"), 1, MAX_PERIOD_S)
            if value is None or period is None:
                return ()
            out.append(ScalingPolicy(cast(ScalingPolicyType, kind), value, period))
        return tuple(out)

    def tolerance(self, raw: Any, path: Path_) -> float | None:
        try:
            value = float(parse_quantity(raw))
        except (QuantityError, ValueError, TypeError):
            value = -1.0
        if value < 0:
            self.bad(path, f"{raw!r} is not a quantity of at least 0 (e.g. 0.05 or 50m)")
            return None
        return value


def ambiguous(
    hpas: Mapping[WorkloadRef, Sequence[Obj]],
) -> tuple[tuple[SourceError, ...], dict[WorkloadRef, str]]:
    """The warnings of workloads two or more HPAs target (module doc), and why each such
    workload is not proposed for."""
    warnings: list[SourceError] = []
    reasons: dict[WorkloadRef, str] = {}
    for ref, objs in hpas.items():
        if len(objs) < 2:
            continue
        named = ", ".join(f"{o.name} ({_where(o)})" for o in objs)
        why = (
            f"HorizontalPodAutoscalers {named} all target it: Kubernetes scales it with none "
            "of them (AmbiguousSelector); remove all but one"
        )
        reasons[ref] = why
        for obj in objs[1:]:
            root = obj.root
            warnings.append(
                SourceError(
                    root.file,
                    root.line,
                    f"{ref.kind} {ref.namespace}/{ref.name} in environment {ref.environment!r}: {why}; none is edited",
                )
            )
    return tuple(sorted(warnings, key=lambda e: (e.file, e.line, e.message))), reasons


def _where(obj: Obj) -> str:
    return f"{obj.root.file}:{obj.root.line}"
