"""A container's VPA state as a checkpoint (``VerticalPodAutoscalerCheckpoint.status``,
``apis/autoscaling.k8s.io/v1/types.go``; ``model/aggregate_container_state.go``,
``SaveToCheckpoint`` / ``LoadFromCheckpoint``), so history can be kept between runs.

JSON keys are upstream's: ``version`` ("v3"), ``firstSampleStart``, ``lastSampleStart``,
``totalSamplesCount``, ``cpuHistogram`` and ``memoryHistogram`` (each ``referenceTimestamp``,
``bucketWeights`` {"index": 1..10000}, ``totalWeight``). Times are RFC 3339 in JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bot.recommend.errors import CheckpointError
from bot.recommend.vpa.constants import CHECKPOINT_VERSION
from bot.recommend.vpa.histogram import (
    CPU_OPTIONS,
    MEMORY_OPTIONS,
    DecayingHistogram,
    HistogramCheckpoint,
)


@dataclass(frozen=True, slots=True, eq=False)
class ContainerCheckpoint:
    """Sample counters and both histograms of one container (times in unix s)."""

    first_sample_s: float | None
    last_sample_s: float | None
    total_samples: int
    cpu: HistogramCheckpoint
    memory: HistogramCheckpoint
    version: str = CHECKPOINT_VERSION


def save(
    cpu: DecayingHistogram,
    memory: DecayingHistogram,
    *,
    first_sample_s: float | None,
    last_sample_s: float | None,
    total_samples: int,
) -> ContainerCheckpoint:
    """``AggregateContainerState.SaveToCheckpoint``."""
    return ContainerCheckpoint(
        first_sample_s,
        last_sample_s,
        total_samples,
        cpu.save_checkpoint(),
        memory.save_checkpoint(),
    )


def load(
    checkpoint: ContainerCheckpoint, *, cpu_half_life_s: float, memory_half_life_s: float
) -> tuple[DecayingHistogram, DecayingHistogram]:
    """``LoadFromCheckpoint``: rejects any version other than v3."""
    if checkpoint.version != CHECKPOINT_VERSION:
        raise CheckpointError(
            f"unsupported checkpoint version {checkpoint.version!r} (want {CHECKPOINT_VERSION})",
            "version",
        )
    cpu = DecayingHistogram.empty(CPU_OPTIONS, cpu_half_life_s).load_checkpoint(checkpoint.cpu)
    memory = DecayingHistogram.empty(MEMORY_OPTIONS, memory_half_life_s).load_checkpoint(
        checkpoint.memory
    )
    return cpu, memory


def _time(value: float | None) -> str | None:
    return None if value is None else datetime.fromtimestamp(value, tz=UTC).isoformat()


def _parse_time(value: Any, field: str) -> float | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise CheckpointError(f"not an RFC 3339 time: {value!r}", field) from exc


def _histogram_json(cp: HistogramCheckpoint) -> dict[str, Any]:
    return {
        "referenceTimestamp": _time(cp.reference_s),
        "bucketWeights": {str(k): v for k, v in sorted(cp.bucket_weights.items())},
        "totalWeight": cp.total_weight,
    }


def _histogram_from(data: Any, field: str) -> HistogramCheckpoint:
    if not isinstance(data, Mapping):
        raise CheckpointError("expected an object", field)
    try:
        buckets = {int(k): int(v) for k, v in dict(data.get("bucketWeights") or {}).items()}
        total = float(data.get("totalWeight", 0.0))
    except (TypeError, ValueError) as exc:
        raise CheckpointError("bucket weights must be integers", field) from exc
    return HistogramCheckpoint(
        total, buckets, _parse_time(data.get("referenceTimestamp"), f"{field}.referenceTimestamp")
    )


def to_json(cp: ContainerCheckpoint) -> dict[str, Any]:
    """The checkpoint's ``status`` as upstream serialises it."""
    return {
        "version": cp.version,
        "firstSampleStart": _time(cp.first_sample_s),
        "lastSampleStart": _time(cp.last_sample_s),
        "totalSamplesCount": cp.total_samples,
        "cpuHistogram": _histogram_json(cp.cpu),
        "memoryHistogram": _histogram_json(cp.memory),
    }


def from_json(data: Any) -> ContainerCheckpoint:
    """Parse a checkpoint ``status``; problems raise ``CheckpointError`` naming the field."""
    if not isinstance(data, Mapping):
        raise CheckpointError("expected an object", "status")
    count = data.get("totalSamplesCount", 0)
    if not isinstance(count, int) or count < 0:
        raise CheckpointError("expected a non-negative integer", "totalSamplesCount")
    return ContainerCheckpoint(
        _parse_time(data.get("firstSampleStart"), "firstSampleStart"),
        _parse_time(data.get("lastSampleStart"), "lastSampleStart"),
        count,
        _histogram_from(data.get("cpuHistogram"), "cpuHistogram"),
        _histogram_from(data.get("memoryHistogram"), "memoryHistogram"),
        str(data.get("version", "")),
    )
