"""Human-readable numbers for reports: cores, bytes, percents, money (never Kubernetes quantities).

Tables show cores to three decimals (one below 10) and MiB whole (``cores``, ``memory``,
``amount``); the inputs a reason names show one decimal more, so a product can be checked
(``plain``, ``precise_amount``); running text adds the unit to cores (``core_amount``).
"""

from __future__ import annotations

from bot.model import GIB, MIB, FieldId, Number, Resource


def plain(value: float) -> str:
    """A number with at most three decimals, trailing zeros dropped: ``0.763``, ``2``, ``0``."""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text or "0"


def cores(value: Number | None) -> str:
    """``0.25`` cores as ``0.25``; None as an em dash."""
    if value is None:
        return "—"
    return f"{value:.3f}".rstrip("0").rstrip(".") if value < 10 else f"{value:.1f}"


def core_amount(value: Number, *, precise: bool = False) -> str:
    """Cores with their unit: ``4.757 cores``, ``1 core`` (``cores``; ``precise``: ``plain``)."""
    text = plain(float(value)) if precise else cores(value)
    return f"{text} core" if text == "1" else f"{text} cores"


def memory(value: Number | None, *, precise: bool = False) -> str:
    """Bytes as ``512 MiB`` or ``1.5 GiB`` (``precise``: ``560.6 MiB``); None as an em dash."""
    if value is None:
        return "—"
    if abs(value) >= GIB:
        return f"{value / GIB:.2f}".rstrip("0").rstrip(".") + " GiB"
    if precise:
        return f"{value / MIB:.1f}".removesuffix(".0") + " MiB"
    return f"{value / MIB:.0f} MiB"


def amount(resource: Resource, value: Number | None) -> str:
    """A table's cell: ``cores`` or ``memory``."""
    return cores(value) if resource == "cpu" else memory(value)


def precise_amount(resource: Resource, value: Number) -> str:
    """``0.763 cores``, ``1 core``, ``560.6 MiB``, ``1.6 GiB``: one decimal more than tables use,
    so a product can be checked."""
    if resource == "cpu":
        return core_amount(value, precise=True)
    return memory(value, precise=True)


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


def unsigned_money(value: float, currency: str) -> str:
    """An unsigned amount: ``$1,234.50``."""
    return f"{currency}{value:,.2f}"


def gib(value: float) -> str:
    """GiB with two decimals: ``3.96 GiB``."""
    return f"{value:,.2f} GiB"


def replicas(value: float) -> str:
    """A replica figure: ``5``, ``3.2``."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def minutes(value: float) -> str:
    """``1,234 min``."""
    return f"{value:,.0f} min"


def share(part: float, whole: float) -> str:
    """``part / whole`` as a percentage: ``0 %``, ``<0.1 %``, ``2.4 %``."""
    if whole <= 0 or part <= 0:
        return "0 %"
    value = part / whole * 100.0
    return "<0.1 %" if value < 0.05 else f"{value:.1f} %"
