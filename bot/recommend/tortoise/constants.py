"""Tortoise constants that are not config (mercari/tortoise v1.2.3)."""

from __future__ import annotations

from bot.model import SECONDS_PER_HOUR

SLOT_DECAY_FACTOR = 0.95
"""A replica slot older than ``SLOT_DECAY_AGE_S`` is multiplied by this, truncated
(``pkg/recommender/recommender.go``, ``updateReplicasRecommendation``)."""
SLOT_DECAY_AGE_S = 23.0 * SECONDS_PER_HOUR
"""Age from which a slot value decays at its next update."""
CLOSE_TO_PREFERRED_FRACTION = 0.8
"""``replicas > int(PreferredMaxReplicas × 0.8)`` freezes horizontal requests
(``updateVPARecommendation``)."""
PREFERRED_MAX_GROWTH = 1.3
"""Request growth per step at PreferredMaxReplicas (``calculateBestNewSize``)."""
IMBALANCE_THRESHOLD = 0.9
"""Rebalance a container when ``target × 0.9 > usage %`` (``calculateBestNewSize``)."""
INITIAL_TARGET_PERCENT = 70
"""HPA target of a metric Tortoise adds (``syncHPAMetricsWithTortoiseAutoscalingPolicy``)."""
WEEKDAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")
"""Go's weekday order, Sunday first."""
