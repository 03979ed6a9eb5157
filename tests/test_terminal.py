"""The terminal: tables that read at 80 and 120 columns with every identifier whole, plain text
off a terminal, and progress on one (run in a real pseudo-terminal)."""

from __future__ import annotations

import io
import itertools
import json
import re
import shutil
from pathlib import Path

import pytest
from rich.cells import cell_len

import bot.demo
from bot.cli import main
from bot.commands.plan import print_plan
from bot.config.bot import load_bot_settings
from bot.console import AFTER_ARROWS, WORDS, Column, column_widths, make_console, wrap_cell
from bot.metrics.snapshot import SnapshotSource
from bot.outcome_view import short_names
from bot.pipeline.plan import RepositoryOutcome, repository_outcome
from tests.support.terminal import ANSI, in_terminal

DEMO_DIR = Path(bot.demo.__file__).resolve().parent
BOX_DRAWING = re.compile("[\u2500-\u257f]")


@pytest.fixture(scope="module")
def demo_plan(tmp_path_factory) -> RepositoryOutcome:
    root = tmp_path_factory.mktemp("demo") / "demo-shop"
    shutil.copytree(DEMO_DIR / "repo", root)
    source = SnapshotSource(DEMO_DIR / "snapshot.zip")
    settings = load_bot_settings(DEMO_DIR / "bot.yaml")
    return repository_outcome(root, source, settings, now_s=source.end_s)


def _render(plan: RepositoryOutcome, width: int) -> str:
    out = io.StringIO()
    console = make_console(out, "never")
    console.width = width
    print_plan(plan, console, repository="demo-shop", source="embedded demo")
    return out.getvalue()


def _identifiers(plan: RepositoryOutcome) -> set[str]:
    """Names a reader copies: workloads (short, and in full with the environment), containers,
    rules."""
    names = set(short_names([o.ref for o in plan.outcomes]).values())
    for outcome in plan.outcomes:
        names.add(str(outcome.ref))
        rec = outcome.recommendation
        assert rec is not None
        for container in rec.containers:
            names.add(container.name)
            for res in (container.cpu, container.memory):
                names |= {res.request.rule, res.limit.rule}
        if rec.hpa is not None:
            names |= {rec.hpa.min_replicas.rule, rec.hpa.max_replicas.rule}
            names |= {t.value.rule for t in rec.hpa.targets}
    return names


def _count(text: str, word: str) -> int:
    return len(re.findall(rf"(?<![\w.@/-]){re.escape(word)}(?![\w.@/-])", text))


@pytest.mark.parametrize("width", [80, 120])
def test_plan_reads_at_the_width_without_breaking_an_identifier(demo_plan, width):
    narrow, wide = _render(demo_plan, width), _render(demo_plan, 1000)
    lines = narrow.splitlines()
    assert max(cell_len(line) for line in lines) <= width
    assert not [line for line in lines if line != line.rstrip()]
    # Past the one-line summary, the same text: every identifier as often, never cut.
    details_narrow, details_wide = (text.split("\n\n", 2)[2] for text in (narrow, wide))
    identifiers = _identifiers(demo_plan)
    long_ones = {
        "tortoise.replicas.max_by_replay",
        "Deployment/shop/cart@apps/kustomize/overlays/prod",
    }
    assert long_ones | {"istio-proxy"} <= identifiers
    for name in identifiers:
        assert _count(details_narrow, name) == _count(details_wide, name) > 0, name


def test_the_summary_has_one_line_per_workload_first(demo_plan):
    text = _render(demo_plan, 80)
    header, window, blank, summary = text.split("\n", 3)
    assert header == "tortoise-bot plan: demo-shop" and blank == ""
    assert re.fullmatch(r"history \S+ \S+ to \S+ \S+ UTC \(8 days\) from embedded demo", window)
    lines = summary.split("\n\n", 1)[0].splitlines()
    assert lines[0].split() == ["status", "workload", "what", "changes"]
    names = short_names([o.ref for o in demo_plan.outcomes])
    rows = [line for line in lines[1:] if not line.startswith(" ")]  # the rest: wrapped lists
    assert len(rows) == len(demo_plan.outcomes) < len(lines) - 1
    for row, outcome in zip(rows, demo_plan.outcomes, strict=True):
        assert row.split()[:2] == [outcome.status, names[outcome.ref]]
    assert names == {o.ref: o.ref.name for o in demo_plan.outcomes}  # unique names are enough
    assert "…" not in summary  # wrapped between the changes at 80 columns, never cut
    continued = [line for line, after in itertools.pairwise(lines) if after.startswith(" ")]
    assert continued and all(line.endswith(",") for line in continued)
    [frontend] = [o for o in demo_plan.outcomes if o.ref.name == "frontend"]
    assert frontend.recommendation is not None and frontend.recommendation.hpa is not None
    hpa = frontend.recommendation.hpa
    low, high = hpa.min_replicas, hpa.max_replicas
    assert (low.current, high.current) == (3, 20)
    expected = f"replicas 3–20 → {low.proposed}–{high.proposed}"
    assert expected in _render(demo_plan, 1000)


def test_a_column_never_breaks_an_identifier_even_when_too_wide():
    columns = (
        Column("workload"),
        Column("value", breaks=AFTER_ARROWS),
        Column("why", breaks=WORDS, flex=True),
    )
    rows = [("x" * 70, "512 MiB → 410 MiB", "a reason that is long enough to wrap " * 3)]
    widths = column_widths(columns, rows, 80)
    assert widths[0] == 70  # the identifier keeps its width: the table is wider than asked
    assert widths[1] == len("512 MiB →")  # broken only after the arrow
    assert wrap_cell(rows[0][1], AFTER_ARROWS, widths[1]) == ["512 MiB →", "410 MiB"]
    assert widths[2] == len("enough")  # the flex column gave up its width first
    assert wrap_cell("wants 238m (−52 %), step-limited", WORDS, 12) == [
        "wants 238m",
        "(−52 %),",
        "step-limited",
    ]


def test_short_names_grow_only_as_much_as_needed():
    from bot.model import WorkloadRef

    refs = [
        WorkloadRef("Deployment", "shop", "web", "prod"),
        WorkloadRef("Deployment", "shop", "web", "dev"),
        WorkloadRef("Deployment", "blog", "api"),
        WorkloadRef("StatefulSet", "blog", "db"),
        WorkloadRef("Deployment", "blog", "db"),
    ]
    assert list(short_names(refs).values()) == [
        "web@prod",
        "web@dev",
        "api",
        "StatefulSet/blog/db",
        "Deployment/blog/db",
    ]


def test_off_a_terminal_plain_text_without_box_drawing(cli, capsys):
    out = cli("plan", "--demo").stdout
    assert not ANSI.search(out) and not BOX_DRAWING.search(out)
    assert "rule and reason" in out
    assert main(["plan", "--demo", "--color", "always"]) == 0
    forced = capsys.readouterr().out
    assert ANSI.search(forced) and not BOX_DRAWING.search(forced)


def test_plan_shows_progress_on_a_terminal():
    drawn = ANSI.sub("", in_terminal("plan", "--demo"))
    assert re.search(r"namespaces .*1/1", drawn)  # the snapshot answers all at once
    assert re.search(r"workloads \S+ .*5/5 .*0:00:\d\d", drawn)
    assert "tortoise-bot plan: demo-shop" in drawn
    quiet = in_terminal("plan", "--demo", "--color", "never")  # a terminal, told otherwise
    assert "namespaces" not in quiet and "5/5" not in quiet
    assert not ANSI.search(quiet) and not BOX_DRAWING.search(quiet)
    assert "rule and reason" in quiet


def test_the_header_names_the_checkout_not_dot(tmp_path, monkeypatch, capsys):
    root = tmp_path / "shop"
    shutil.copytree(DEMO_DIR / "repo", root)
    monkeypatch.chdir(root)
    args = ["--snapshot", str(DEMO_DIR / "snapshot.zip"), "--config", str(DEMO_DIR / "bot.yaml")]
    assert main(["plan", "--repo", ".", *args]) == 0
    head = " ".join(capsys.readouterr().out.split("\n\n", 1)[0].split())  # wrapped at 80
    assert head.startswith(f"tortoise-bot plan: {root.resolve()} history ")
    assert main(["plan", "--repo", ".", *args, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["repository"] == str(root.resolve())
