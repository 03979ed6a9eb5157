"""The rule ids of a proposed limit (``LimitProposal.rule``): the VPA's proportional limit, the
limit policies and the evidence cap; ``bot.recommend.rules`` gathers them with the engine's."""

from __future__ import annotations

from enum import StrEnum


class LimitRule(StrEnum):
    """Why a limit is what it is (see ``bot.recommend.vpa.limits`` for each policy)."""

    LIMITS_DROP_CPU = "limits.drop_cpu"
    LIMITS_EQUAL_TO_REQUEST = "limits.equal_to_request"
    LIMITS_EVIDENCE = "limits.evidence"
    LIMITS_FIXED_HEADROOM = "limits.fixed_headroom"
    LIMITS_KEEP_RATIO = "limits.keep_ratio"
    LIMITS_KEEP_RATIO_CAPPED = "limits.keep_ratio_capped"
    LIMITS_LEAVE = "limits.leave"
    LIMITS_NONE = "limits.none"
    LIMITS_PEAK_HEADROOM = "limits.peak_headroom"
