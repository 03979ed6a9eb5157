"""Why a current request is a measured risk in the replay of the current values: usage above
it longer than ``noise.risk_minutes``, or an OOM kill; noise control then lets an increase pass
whatever minChange says.
"""

from __future__ import annotations

from bot.config.recommend import RecommendSettings
from bot.model import Resource
from bot.recommend.replay.context import ReplayContext


def at_risk(
    context: ReplayContext | None, container: str, resource: Resource, settings: RecommendSettings
) -> str | None:
    """Why the current request of ``container`` is a measured risk, or None: usage above it
    for more than ``noise.risk_minutes`` container-minutes of the window (CPU; memory without
    a limit), or an OOM kill (``noise_control`` then lets any increase through)."""
    if context is None:
        return None
    limit_minutes = settings.noise.risk_minutes
    if resource == "cpu":
        cpu = context.before.container_cpu(container)
        if cpu is not None and cpu.over_request_minutes > limit_minutes:
            return (
                f"usage above the current request for {cpu.over_request_minutes:.0f} "
                f"container-minutes of the window (more than {limit_minutes:g}): minChange "
                "does not hold an increase"
            )
        return None
    mem = context.before.container_memory(container)
    if mem is None:
        return None
    if mem.oom_kills:
        return f"{mem.oom_kills} OOM kill(s) at the current limit: minChange does not hold it"
    if mem.over_request_minutes is not None and mem.over_request_minutes > limit_minutes:
        return (
            f"working set above the current request for {mem.over_request_minutes:.0f} "
            "minutes (eviction risk): minChange does not hold an increase"
        )
    return None
