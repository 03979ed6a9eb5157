"""Container checkpoints (``model/aggregate_container_state_test.go``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import numpy as np
import pytest

from bot.recommend.errors import CheckpointError
from bot.recommend.vpa.checkpoint import ContainerCheckpoint, from_json, load, save, to_json
from bot.recommend.vpa.histogram import (
    CPU_OPTIONS,
    MEMORY_OPTIONS,
    DecayingHistogram,
    HistogramCheckpoint,
)

DAY_S = 86400.0
FIRST = datetime(2018, 1, 1, 2, 3, 4, tzinfo=UTC).timestamp()
LAST = datetime(2018, 2, 1, 2, 3, 4, tzinfo=UTC).timestamp()


def test_save_to_checkpoint():
    # One CPU sample (1 core, w 33); memory (1 B, w 55) and (1e7 B, w 55): 1 CPU bucket and
    # memory buckets 0 and 1.
    cpu = DecayingHistogram.empty(CPU_OPTIONS, DAY_S).add(np.array([1.0]), 33.0, np.array([LAST]))
    mem = DecayingHistogram.empty(MEMORY_OPTIONS, DAY_S).add(
        np.array([1.0, 1e7]), 55.0, np.array([LAST, LAST])
    )
    cp = save(cpu, mem, first_sample_s=FIRST, last_sample_s=LAST, total_samples=10)
    data = json.loads(json.dumps(to_json(cp)))
    assert data["version"] == "v3"
    assert data["totalSamplesCount"] == 10
    assert data["firstSampleStart"].startswith("2018-01-01T02:03:04")
    assert len(data["cpuHistogram"]["bucketWeights"]) == 1
    assert sorted(data["memoryHistogram"]["bucketWeights"]) == ["0", "1"]
    back = from_json(data)
    assert back.first_sample_s == FIRST
    cpu2, mem2 = load(back, cpu_half_life_s=DAY_S, memory_half_life_s=DAY_S)
    assert cpu2.percentile(0.5) == cpu.percentile(0.5)
    assert mem2.percentile(0.9) == mem.percentile(0.9)
    assert cpu2.reference_s == cpu.reference_s


def test_load_from_checkpoint():
    cp = ContainerCheckpoint(
        FIRST, LAST, 20, HistogramCheckpoint(44.0, {0: 10}), HistogramCheckpoint(33.0, {0: 10})
    )
    cpu, mem = load(cp, cpu_half_life_s=DAY_S, memory_half_life_s=DAY_S)
    assert not cpu.is_empty()
    assert not mem.is_empty()


def test_version_mismatch_is_rejected():
    cp = ContainerCheckpoint(
        None, None, 0, HistogramCheckpoint(0, {}), HistogramCheckpoint(0, {}), "foo"
    )
    with pytest.raises(CheckpointError, match="version"):
        load(cp, cpu_half_life_s=DAY_S, memory_half_life_s=DAY_S)


def test_bad_json_names_the_field():
    with pytest.raises(CheckpointError) as info:
        from_json({"version": "v3", "totalSamplesCount": -1})
    assert info.value.field == "totalSamplesCount"
    with pytest.raises(CheckpointError) as info:
        from_json(
            {"version": "v3", "cpuHistogram": {"bucketWeights": {"x": 1}}, "memoryHistogram": {}}
        )
    assert info.value.field == "cpuHistogram"
