"""Constants of the VPA recommender that are not flags (kubernetes/autoscaler, VPA 1.7.1).

Paths are relative to ``vertical-pod-autoscaler/pkg/recommender/``.
"""

from __future__ import annotations

MIN_SAMPLE_WEIGHT = 0.1
"""Weight of one CPU sample before decay (``model/aggregations_config.go``, minSampleWeight)."""
EPSILON = 0.001 * MIN_SAMPLE_WEIGHT
"""A bucket lighter than this counts as empty (``model/aggregations_config.go``)."""
BUCKET_GROWTH_RATIO = 1.05
"""Ratio between consecutive bucket sizes (HistogramBucketSizeGrowth 0.05)."""
CPU_FIRST_BUCKET_CORES = 0.01
"""Size of the first CPU bucket in cores (``model/aggregations_config.go``)."""
CPU_MAX_CORES = 1000.0
"""Largest CPU value with its own bucket, cores."""
MEMORY_FIRST_BUCKET_BYTES = 1e7
"""Size of the first memory bucket in bytes."""
MEMORY_MAX_BYTES = 1e12
"""Largest memory value with its own bucket, bytes."""
MAX_DECAY_EXPONENT = 100
"""The reference time moves when a sample is more than this many half-lives after it."""
MAX_CHECKPOINT_WEIGHT = 10000
"""Largest integer bucket weight in a checkpoint (``util/histogram.go``)."""
MAX_RESOURCE_AMOUNT = 1e14
"""Clamp of every integer amount, millicores or bytes (``model/types.go``)."""
GO_ZERO_TIME_UNIX_S = -62135596800.0
"""Go's zero time (0001-01-01T00:00:00Z) in unix seconds: the first reference timestamp."""
UPPER_BOUND_CONFIDENCE = (1.0, 1.0)
"""Upper bound: ×(1 + multiplier/confidence)^exponent (``logic/recommender.go``)."""
LOWER_BOUND_CONFIDENCE = (0.001, -2.0)
"""Lower bound: ×(1 + multiplier/confidence)^exponent (``logic/recommender.go``)."""
CHECKPOINT_VERSION = "v3"
"""SupportedCheckpointVersion (``model/aggregate_container_state.go``)."""
