"""Amounts as reasons print them: in the resource's unit, never as raw floats or byte counts.

CPU below one core in millicores (``250m``, ``12.5m``), from one core in cores (``1.5``);
memory below 1 GiB in MiB (``125Mi``, ``728.6Mi``), from 1 GiB in GiB (``1.5Gi``), one decimal
where needed. Used by every rule reason in ``bot.recommend`` that names an amount.
"""

from __future__ import annotations

from bot.model import GIB, MIB, Resource


def _decimals(value: float, places: int) -> str:
    """``value`` with at most ``places`` decimals, trailing zeros dropped, never an exponent."""
    text = f"{value:.{places}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def amount(value: float, resource: Resource) -> str:
    """``value`` (cores or bytes) in its unit: ``250m``, ``1.5``, ``728.6Mi``, ``1.5Gi``."""
    sign, size = ("-" if value < 0 else ""), abs(float(value))
    if resource == "cpu":
        if round(size * 1000, 1) < 1000:
            return f"{sign}{_decimals(size * 1000, 1)}m"
        return f"{sign}{_decimals(size, 3)}"
    if round(size / MIB, 1) < 1024:
        return f"{sign}{_decimals(size / MIB, 1)}Mi"
    return f"{sign}{_decimals(size / GIB, 1)}Gi"


def ratio(value: float) -> str:
    """A plain factor (``2``, ``1.333``): at most three decimals, never an exponent."""
    return _decimals(value, 3)


def describe(value: float, resource: Resource, current: float) -> str:
    """``143m (−71 %)`` or ``125Mi (−51 %)``: a value and its change from ``current``."""
    shown = amount(value, resource)
    if not current:
        return shown
    percent = round((value - current) / current * 100)
    sign = "−" if percent < 0 else "+"
    return f"{shown} ({sign}{abs(percent)} %)"
