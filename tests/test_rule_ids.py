"""Rule ids are one typed set (``bot/recommend/rules.py``): every id the code can produce is a
member, every member is produced through the set and has its row in docs/recommendations.md."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from bot.model import REMOVE_METRIC, FieldId
from bot.recommend.rules import RULE_IDS, Rule
from bot.recommend.vpa.limits import LimitRule

ROOT = Path(__file__).resolve().parent.parent
BOT = ROOT / "bot"
DOCS = ROOT / "docs" / "recommendations.md"
DEFINED_IN = {BOT / "recommend" / "rules.py", BOT / "recommend" / "vpa" / "limit_rules.py"}
FAMILIES = {str(rule).split(".")[0] for rule in RULE_IDS if "." in rule}
"""First words of the dotted ids (``tortoise``, ``noise``, ``limits``, ...)."""
RULE_LIKE = re.compile(rf"(?:{'|'.join(sorted(FAMILIES))})(?:\.[a-z_]+)+")
FIELD_TEXTS = {f.text for f in FieldId}
"""``limits.cpu``, ``hpa.target.cpu``: field ids, which share the first word of a rule family."""


def _rule_like(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string constant of ``path`` that reads as a rule id."""
    tree = ast.parse(path.read_text())
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and RULE_LIKE.fullmatch(node.value)
        and node.value not in FIELD_TEXTS
    )


def test_the_scan_sees_the_rule_families():
    assert {"tortoise", "vertical", "noise", "oom", "floor", "limits", "replay"} <= FAMILIES
    assert RULE_LIKE.fullmatch("tortoise.target.keep")
    assert not RULE_LIKE.fullmatch("bot.report.render")


def test_every_rule_id_in_the_code_is_a_member():
    unknown = [
        f"{path.relative_to(ROOT)}:{line}: {text}"
        for path in sorted(BOT.rglob("*.py"))
        for line, text in _rule_like(path)
        if text not in RULE_IDS
    ]
    assert not unknown, "rule ids missing from bot/recommend/rules.py:\n" + "\n".join(unknown)


def test_rule_ids_are_produced_through_the_set_not_spelled():
    """Outside the modules that define the set (and ``REMOVE_METRIC``, a seam value of
    ``bot/model/units.py``), a rule id is a member (``Rule.POLICY_OFF``), never its text."""
    spelled = [
        f"{path.relative_to(ROOT)}:{line}: {text}"
        for path in sorted(BOT.rglob("*.py"))
        if path not in DEFINED_IN
        for line, text in _rule_like(path)
        if not (path == BOT / "model" / "units.py" and text == REMOVE_METRIC)
    ]
    assert not spelled, "\n".join(spelled)


def test_every_member_is_used_by_the_code():
    used: set[str] = set()
    for path in BOT.rglob("*.py"):
        if path in DEFINED_IN:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.value.id == "Rule" and node.attr in Rule.__members__:
                    used.add(Rule[node.attr])
                elif node.value.id == "LimitRule" and node.attr in LimitRule.__members__:
                    used.add(LimitRule[node.attr])
    assert set(RULE_IDS) - used == set()


def test_members_are_their_text():
    assert len(RULE_IDS) == len(Rule) + len(LimitRule)
    assert {str(rule) for rule in RULE_IDS} == {rule.value for rule in RULE_IDS}
    assert (
        f"{Rule.POLICY_OFF}" == "policy.off"
        and str(Rule.TORTOISE_TARGET_REMOVE_METRIC) == REMOVE_METRIC
    )


def _documented() -> dict[str, str]:
    """Rule id -> its row in the rule table of docs/recommendations.md."""
    text = DOCS.read_text()
    start = text.index("## 10. Rule ids")
    rows = {}
    for line in text[start:].splitlines():
        match = re.match(r"\| `([^`]+)` \|", line)
        if match:
            rows[match.group(1)] = line
    return rows


def test_every_rule_id_has_its_row_in_the_docs():
    rows = _documented()
    assert set(RULE_IDS) - rows.keys() == set(), "rule ids without a row in section 10"
    assert rows.keys() - set(RULE_IDS) == set(), "rows of section 10 naming no rule id"
    for rule, row in rows.items():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        assert len(cells) == 4 and all(cells), f"{rule}: what it does, setting, upstream"
