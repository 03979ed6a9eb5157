"""The recommendation engine: pure functions from history to explained proposals.

The pipeline needs only these names::

    build_input(workload, history, *, containers=..., emergency=..., after_revert=...,
                target_changed_s=..., excluded_intervals_s=...,
                container_resource_metrics=None) -> WorkloadInput
    recommend(inp, settings, *, now_s) -> Recommendation
    field_changes(rec) -> tuple[FieldChange, ...]      # exactly the changes to write
    next_emergency_phase(rec) -> "normal" | "emergency" | "back-to-normal"

``docs/recommendations.md`` says how every number is computed.
"""

from bot.recommend.changes import field_changes, next_emergency_phase
from bot.recommend.engine import recommend
from bot.recommend.errors import CheckpointError, InputError, RecommendError
from bot.recommend.inputs import (
    AfterRevert,
    ContainerInput,
    EmergencyState,
    WorkloadInput,
    build_input,
)

__all__ = [
    "AfterRevert",
    "CheckpointError",
    "ContainerInput",
    "EmergencyState",
    "InputError",
    "RecommendError",
    "WorkloadInput",
    "build_input",
    "field_changes",
    "next_emergency_phase",
    "recommend",
]
