"""One whole number Tortoise chose, with the rule that chose it and its one-line reason."""

from __future__ import annotations

from dataclasses import dataclass

from bot.recommend.rules import Rule


@dataclass(frozen=True, slots=True)
class Ruled:
    """``value``: a request in milli-units (millicores, milli-bytes; ``requests.py``) or an HPA
    target in percent (``utilization.py``); ``rule`` names the rule, ``reason`` says why."""

    value: int
    rule: Rule
    reason: str


__all__ = ["Ruled"]
