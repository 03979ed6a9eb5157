"""The pull-request section of accepted KEDA cron floors (rule ``keda.cron_floors``,
``docs/recommendations.md`` §5): the triggers appended, replica-hours and shortfall minutes of
the replay with the static floor and with the cron floors. Every figure is reproducible from
the ones beside it (``saves`` is the difference of the two replica-hours shown)."""

from __future__ import annotations

from bot.model import Recommendation
from bot.report.markdown import code, escape


def markdown(rec: Recommendation) -> str | None:
    """The section, or None when ``rec`` appends no cron triggers. Escaped."""
    if not rec.keda_triggers or rec.hpa is None:
        return None
    minimum = rec.hpa.min_replicas  # lowered by the rule that proposes the triggers
    inputs = minimum.inputs
    before, after = inputs.get("static_pod_hours"), inputs.get("cron_pod_hours")
    short_before = inputs.get("static_shortfall_minutes")
    short_after = inputs.get("cron_shortfall_minutes")
    lines = [
        f"**KEDA cron floors** ({code(minimum.rule)}): minReplicaCount "
        f"{inputs.get('static')} → {minimum.proposed}, with these `cron` triggers:",
        "",
    ]
    for trigger in rec.keda_triggers:
        meta = dict(trigger)
        lines.append(
            f"- {code(meta.get('start', ''))} to {code(meta.get('end', ''))} "
            f"({escape(meta.get('timezone', ''))}): {escape(meta.get('desiredReplicas', ''))} "
            "replicas"
        )
    if isinstance(before, int | float) and isinstance(after, int | float):
        lines += [
            "",
            f"Replayed replica-hours {before:.1f} → {after:.1f} (saves {before - after:.1f}); "
            f"shortfall {short_before:g} → {short_after:g} min.",
        ]
    return "\n".join(lines) + "\n"
