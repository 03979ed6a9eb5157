"""Pull-request bodies, the dashboard issue and the state they carry (renders ``templates/``).

Imports ``bot.model`` only. Entry points: ``render_pull_request``, ``render_dashboard``,
``ticked_keys``, ``state_of`` / ``parse_state``; data: ``Proposal``, ``DashboardRow``, ``Prices``.
The names below are imported on first use (``bot.lazy``): the templates engine loads only when
a body is rendered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.lazy import lazy_exports

if TYPE_CHECKING:
    from bot.report.build import make_proposal, proposal_title
    from bot.report.proposal import (
        DashboardRow,
        DashboardStatus,
        Prices,
        Proposal,
        PullRequestState,
        embed_state,
        parse_state,
        replace_state,
        state_of,
    )
    from bot.report.render import (
        MAX_BODY_CHARS,
        pull_request_title,
        render_dashboard,
        render_pull_request,
        ticked_keys,
    )

__all__ = [
    "MAX_BODY_CHARS",
    "DashboardRow",
    "DashboardStatus",
    "Prices",
    "Proposal",
    "PullRequestState",
    "embed_state",
    "make_proposal",
    "parse_state",
    "proposal_title",
    "pull_request_title",
    "render_dashboard",
    "render_pull_request",
    "replace_state",
    "state_of",
    "ticked_keys",
]

__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("make_proposal", "proposal_title"), "bot.report.build"),
        **dict.fromkeys(
            (
                "DashboardRow",
                "DashboardStatus",
                "Prices",
                "Proposal",
                "PullRequestState",
                "embed_state",
                "parse_state",
                "replace_state",
                "state_of",
            ),
            "bot.report.proposal",
        ),
        **dict.fromkeys(
            (
                "MAX_BODY_CHARS",
                "pull_request_title",
                "render_dashboard",
                "render_pull_request",
                "ticked_keys",
            ),
            "bot.report.render",
        ),
    },
)
