"""What the replay gate did, for people: the values it held back (wanted, kept and why), its
findings in words, and what it did as lines (held back, reported only, or off)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.model import POD_LEVEL, FieldId, GateFinding, Number, Recommendation, ReplayComparison
from bot.report import numbers
from bot.report.summary import explained_of


@dataclass(frozen=True, slots=True)
class HeldValue:
    """A value the gate held back: ``field`` as in ``FieldChange``, the value the rules wanted,
    the value kept (the proposal now) and why (the finding, in words)."""

    field: FieldId
    container: str | None
    wanted: Number | None
    kept: Number | None
    why: str

    @property
    def target(self) -> str:
        """``requests.cpu (app)``, ``hpa.minReplicas``."""
        return f"{self.field.text} ({self.container})" if self.container else self.field.text

    def values(self) -> str:
        """``requests.cpu (app) wanted 0.15, kept 0.18``."""
        wanted = numbers.field_value(self.field, self.wanted)
        kept = numbers.field_value(self.field, self.kept)
        return f"{self.target} wanted {wanted}, kept {kept}"

    def text(self) -> str:
        """``requests.cpu (app) wanted 0.15, kept 0.18: <why>``."""
        return f"{self.values()}: {self.why}"


def held_lines(held: Sequence[HeldValue]) -> list[str]:
    """``<values>; <values>: <why>``: the values held back for one reason on one line, in the
    order they were held (several fields often share one finding)."""
    by_why: dict[str, list[str]] = {}
    for h in held:
        by_why.setdefault(h.why, []).append(h.values())
    return [f"{'; '.join(values)}: {why}" for why, values in by_why.items()]


def _why(reason: str) -> str:
    """The finding in a held value's reason (``wants X; held at Y: <why>``), else the reason."""
    head, sep, tail = reason.partition(": ")
    return tail if sep and head.startswith("wants ") else reason


def held_values(rec: Recommendation) -> tuple[HeldValue, ...]:
    """The values the gate held back in ``rec``, each with the reason the engine gave."""
    if rec.replay is None:
        return ()
    out = []
    for field, container, wanted, kept in rec.replay.held:
        value = explained_of(rec, field, container)
        why = _why(value.reason) if value is not None else "held back by the replay"
        shown = None if container == POD_LEVEL else container
        out.append(HeldValue(field, shown, wanted, kept, why))
    return tuple(out)


def finding_lines(replay: ReplayComparison) -> list[str]:
    """Each finding in words, once."""
    return list(dict.fromkeys(f.message for f in replay.findings))


def gate_lines(rec: Recommendation) -> list[str]:
    """What the gate did, in words: the values held back, findings reported but not acted on
    (``report-only``), or that the gate is off. Empty when the replay found nothing."""
    replay = rec.replay
    if replay is None:
        return []
    held = held_values(rec)
    lines = [f"Held back by the replay: {line}" for line in held_lines(held)]
    if replay.gate == "off":
        lines.append("The replay gate is off (replay.gate: off): figures shown, not checked.")
    elif replay.gate == "report-only":
        lines += [
            f"The replay warns (replay.gate: report-only; proposed as wanted): {line}"
            for line in finding_lines(replay)
        ]
    elif not held:
        lines += [f"The replay found: {line}" for line in finding_lines(replay)]
    return lines


def findings_json(findings: Iterable[GateFinding]) -> list[dict[str, object]]:
    return [
        {
            "kind": f.kind,
            "container": f.container,
            "current": f.current,
            "proposed": f.proposed,
            "allowed": f.allowed,
            "message": f.message,
        }
        for f in findings
    ]
