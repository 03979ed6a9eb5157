"""Human-readable numbers for reports: cores, bytes, percents, money (never Kubernetes quantities)."""

from __future__ import annotations

from bot.model import GIB, MIB, FieldId, Number, Resource


def cores(value: Number | None) -> str:
    """``0.25`` cores as ``0.25``; None as an em dash."""
    if value is None:
        return "—"
    return f"{value:.3f}".rstrip("0").rstrip(".") if value < 10 else f"{value:.1f}"


def memory(value: Number | None) -> str:
    """Bytes as ``512 MiB`` or ``1.5 GiB``; None as an em dash."""
    if value is None:
        return "—"
    if abs(value) >= GIB:
        return f"{value / GIB:.2f}".rstrip("0").rstrip(".") + " GiB"
    return f"{value / MIB:.0f} MiB"


def amount(resource: Resource, value: Number | None) -> str:
    return cores(value) if resource == "cpu" else memory(value)


def target(current: Number | None, proposed: Number | None) -> str:
    """An HPA target utilisation and its proposal: ``60% → 65%``, ``60%`` (unchanged),
    ``60% → removed`` (proposed None: the metric is removed), ``— → 70%`` (a new metric)."""

    def percent(value: Number | None) -> str:
        return "—" if value is None else f"{value}%"

    if proposed == current:
        return percent(current)
    if proposed is None:
        return f"{percent(current)} → removed"
    return f"{percent(current)} → {percent(proposed)}"


def field_value(field: FieldId, value: Number | None) -> str:
    """One value of a ``FieldChange`` field in its unit: ``0.4`` (cores), ``640 MiB``, ``65%``,
    ``4`` (replicas); ``—`` for none."""
    if value is None:
        return "—"
    if field.is_hpa_target:
        return f"{value}%"
    if field.is_request_or_limit and field.resource is not None:
        return amount(field.resource, value)
    return str(value)


def field_change(field: FieldId, current: Number | None, proposed: Number | None) -> str:
    """A ``FieldChange`` as one line reads it: ``0.5 → 0.4`` (``requests.cpu``, cores),
    ``512 MiB → 640 MiB`` (``limits.memory``), ``60% → removed`` (``hpa.target.*``),
    ``3 → 4`` (replicas); ``—`` for a missing value."""
    if field.is_hpa_target:
        return target(current, proposed)
    res = field.resource
    if field.is_request_or_limit and res is not None:
        return f"{amount(res, current)} → {amount(res, proposed)}"
    shown = ["—" if v is None else str(v) for v in (current, proposed)]
    return " → ".join(shown)


def change_percent(current: Number | None, proposed: Number | None) -> str:
    """``(proposed - current) / current * 100`` with a sign, ``new`` or ``removed`` at the ends."""
    if current is None and proposed is None:
        return ""
    if current is None:
        return "new"
    if proposed is None:
        return "removed"
    if current == 0:
        return "+∞" if proposed else "0%"
    return f"{(proposed - current) / current * 100:+.0f}%"


def money(value: float, currency: str = "$") -> str:
    """A signed monthly amount: ``-$12.34``."""
    sign = "-" if value < 0 else "+"
    return f"{sign}{currency}{abs(value):,.2f}"
