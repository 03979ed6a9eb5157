"""The demo's merged bot pull requests (``bot/demo/pulls.json``), read as a forge's listing
reads them, so ``plan --demo`` verifies a merge without a forge.

The file holds what the listing gives of each pull request: its ``number``, ``url``,
``branch``, ``merged_at`` (ISO 8601) and the state JSON its body carries
(``bot.report.proposal.PullRequestState``: ``changes``, ``previous``, ``predicted``…).
The demo's one pull request (#42, ``reviews`` 600m → 165m) is written as such a state by hand,
its prediction included (0.1 % of CPU minutes over request, no OOM kill): the demo's history
has less than a day before that merge, too little for the bot to have proposed it; what the
verification compares with it is what ran in the recorded history after it.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from bot.forge.previous import PreviousProposal
from bot.nesting import check_json
from bot.report.proposal import PullRequestState

PULLS_FILE = Path(__file__).resolve().parent / "pulls.json"
"""The recorded merged pull requests of the demo."""


def demo_pulls(path: Path = PULLS_FILE) -> list[PreviousProposal]:
    """The merged pull requests recorded in ``path``; raises ``ValueError`` naming the file
    when it cannot be read."""
    try:
        raw = path.read_text(encoding="utf-8")
        check_json(raw)
        data = json.loads(raw)
        out = []
        for item in data["pulls"]:
            state = PullRequestState.from_json(item["state"])
            merged = datetime.fromisoformat(str(item["merged_at"]).replace("Z", "+00:00"))
            out.append(
                PreviousProposal(
                    key=state.key,
                    number=int(item["number"]),
                    branch=str(item["branch"]),
                    open=False,
                    merged=True,
                    state=state,
                    merged_at_s=merged.timestamp(),
                    url=str(item["url"]),
                )
            )
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not a list of merged pull requests: {exc}") from exc
    return out


__all__ = ["PULLS_FILE", "demo_pulls"]
