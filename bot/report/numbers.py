"""Human-readable numbers for reports: cores, bytes, percents, money (never Kubernetes quantities)."""

from __future__ import annotations

from bot.model import Number, Resource

MIB = 1024**2
GIB = 1024**3


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
