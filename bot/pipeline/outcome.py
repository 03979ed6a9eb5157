"""What the pipeline decided for one workload (``WorkloadOutcome``), and the outcome of an
object of a kind the bot does not right-size (``skipped_outcome``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bot.errors import Severity
from bot.model import (
    DeclaredWorkload,
    FieldChange,
    Recommendation,
    SkippedObject,
    Status,
    WorkloadRef,
)
from bot.report.proposal import HistorySummary


@dataclass(frozen=True, slots=True)
class WorkloadOutcome:
    """What the pipeline decided for one workload."""

    declared: DeclaredWorkload
    status: Status
    reasons: tuple[str, ...] = ()
    recommendation: Recommendation | None = None
    changes: tuple[FieldChange, ...] = ()
    summary: HistorySummary | None = None
    """What the reports need of the workload's history (``summarize_history``); never the
    samples, dropped once the recommendation is made."""
    severity: Severity = "failure"
    """For status ``error``, whose problem it is: ``finding`` (the repository declares
    something the bot cannot act on, or its edit would not render) or ``failure`` (history
    unavailable, an unexpected error); see ``bot.errors.exit_code``."""
    unsupported: SkippedObject | None = None
    """For an object of a kind the bot does not right-size, what it is and where."""

    @property
    def failed(self) -> bool:
        """In error through the bot's own failure (exit 1), not a finding."""
        return self.status == "error" and self.severity == "failure"

    @property
    def ref(self) -> WorkloadRef:
        return self.declared.ref


def skipped_outcome(skipped: SkippedObject) -> WorkloadOutcome:
    """The outcome of an object the bot does not right-size: ``skipped`` with its reason and
    the file and line of its ``kind:``."""
    where = skipped.location
    declared = DeclaredWorkload(
        skipped.ref,
        None,
        (),
        files=(where.file,),
        locations={"kind": where},
    )
    reason = f"{skipped.reason} ({where.file}:{where.line})"
    return WorkloadOutcome(declared, "skipped", (reason,), unsupported=skipped)


def in_inventory_order(outcomes: Iterable[WorkloadOutcome]) -> tuple[WorkloadOutcome, ...]:
    """Outcomes in inventory order: environment, namespace, kind, name."""
    return tuple(
        sorted(outcomes, key=lambda o: (o.ref.environment, o.ref.namespace, o.ref.kind, o.ref.name))
    )
