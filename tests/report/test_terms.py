"""Every term a pull-request body uses is defined in it (the terms line of its folded data) and
in ``docs/pull-requests.md#terms``; an input the proposal does not apply is not shown as if it
were."""

from __future__ import annotations

import re

import pytest

from bot.model import FieldId
from bot.report.summary import inputs_text
from bot.report.terms import TERMS, terms
from tests.conftest import PROJECT
from tests.report.test_golden import GOLDEN

USED = {
    "replay": "replayed",
    "CPU minutes over request": "CPU minutes over request",
    "predicted OOM kills": "predicted OOM kills",
    "capacity shortfall": "capacity shortfall",
    "backtest": "backtest",
    "P50/P90/P99": "P50 / P90 / P99",
    "confidence": "confidence",
    "step k of n": "step 1 of",
}
"""Each term and how a body shows it."""


@pytest.mark.parametrize("name", ["frontend", "cart", "checkout", "redis"])
def test_each_term_a_golden_body_uses_is_defined_in_it(name):
    body = (GOLDEN / f"{name}.md").read_text(encoding="utf-8")
    defined = {t.split(" = ", 1)[0] for _, t in TERMS}
    used = {term for term, shown in USED.items() if shown in body}
    assert used and used <= defined
    line = next(x for x in body.splitlines() if x.startswith("Terms ("))
    named = {t for t in defined if f" {t} = " in line or f": {t} = " in line}
    assert named == used  # each term the body uses, and no other
    assert terms(body.replace(line, "")) == line


def test_a_body_without_a_term_defines_none_and_one_with_some_only_those():
    assert terms("Revert #3: restores the values before #3, whose outcome regressed.") == ""
    line = terms("a backtest of 7 days; CPU minutes over request 0.1 %")
    assert "backtest = " in line and "CPU minutes over request = " in line
    assert "replay = " not in line and "confidence = " not in line and "P50/P90/P99" not in line


def test_the_docs_define_every_term_of_the_line():
    docs = (PROJECT / "docs" / "pull-requests.md").read_text(encoding="utf-8")
    section = docs.split("\n## Terms\n", 1)[1].split("\n## ", 1)[0]
    for _, term in TERMS:
        assert f"**{term.split(' = ', 1)[0]}**" in section


def test_a_target_chosen_by_the_replay_does_not_show_tortoise_s_unapplied_formula():
    """The replay proposes 88 %; Tortoise's formula said 87 % before its per-change limit: the
    body must not read as if a limit had cut 88 to 87."""
    replayed = {"rec": 0.5, "unlimited": 87, "replayed_target": 90, "step": 10}
    body = inputs_text(FieldId.HPA_TARGET_CPU, replayed)
    assert "per-change limit" not in body and "87%" not in body
    assert "replayed target 90%" in body
    explained = inputs_text(FieldId.HPA_TARGET_CPU, replayed, superseded=True)
    assert "Tortoise's formula, not applied 87%" in explained
    upstream = inputs_text(FieldId.HPA_TARGET_CPU, {"rec": 0.5, "unlimited": 87})
    assert re.search(r"before the per-change limit 87%", upstream)
