"""The quality benchmark at one seed and a small size: its figures are checked for sanity only
(what must hold whatever the engine proposes), never for values."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.quality import Options, main, run, update_doc
from benchmarks.quality.aims import aims
from benchmarks.quality.candidates import krr_simple, vpa_defaults
from benchmarks.quality.options import CANDIDATES, ORACLE
from benchmarks.quality.oracles import Curve, budget_quantile, risk_matched
from benchmarks.quality.run import Pair, Run, backtest_share
from benchmarks.quality.scores import score
from benchmarks.quality.sets import SETS, build, split_start
from bot.config.recommend import RecommendSettings
from bot.sim.cluster import draw_demand
from bot.sim.continuous import prefix, simulate_switched
from bot.sim.load import weekday
from bot.sim.profiles import archetype_cluster
from bot.sim.values import service_ref

SMALL = Options(
    seeds=(1,),
    weekdays=(0,),
    services=("api-daily", "frontend-hpa"),
    days=5,
    score_days=2,
    jobs=1,
)
"""Two archetypes (over-provisioned; HPA'd with a sidecar), a Monday split, short days."""


@pytest.fixture(scope="module")
def small() -> Run:
    found = run(SMALL, RecommendSettings())
    for service, rounds in found.proposals[(1, 0)].items():  # one entry per pull request
        (merged,) = found.scores[(1, 0)][service]["tortoise-bot, merged"].rounds
        assert len(rounds) == merged and all(rounds)
    return found


def test_every_candidate_is_scored_on_the_days_after_the_split(small):
    scores = small.scores[(1, 0)]
    assert list(scores) == list(SMALL.services) and small.leaking == []
    for per_candidate in scores.values():
        assert list(per_candidate) == list(CANDIDATES)
        assert {s.hours for s in per_candidate.values()} == {SMALL.score_days * 24}
        for s in per_candidate.values():
            assert s.used_core_hours > 0 and s.core_hours > 0 and s.risk_core_hours > 0
            assert 0 <= s.unused_gib_hours <= s.gib_hours  # negative slack is never a saving


def test_the_budget_oracle_holds_the_budget_per_container(small):
    api = {n: s.figures() for n, s in small.scores[(1, 0)]["api-daily"].items()}
    assert api[ORACLE]["cpu_over_request"] <= 0.01  # one container: its p99 of per-pod usage
    assert api[ORACLE]["cpu_over_request"] > 0.005
    assert api[ORACLE]["core_hours"] < api["current"]["core_hours"]
    # the same usage whatever the values: one demand, and requests do not change usage
    used = {round(s.used_core_hours, 6) for s in small.scores[(1, 0)]["api-daily"].values()}
    assert len(used) == 1
    frontend = small.scores[(1, 0)]["frontend-hpa"]
    oracle = frontend[ORACLE]
    assert oracle.over_request_minutes / oracle.container_minutes <= 0.01 + 1e-9
    assert oracle.shortfall_minutes <= frontend["current"].shortfall_minutes
    assert frontend["KRR simple"].core_hours == frontend["current"].core_hours  # HPA'd: CPU kept


def test_budget_quantile_and_risk_matched_oracle_have_known_answers():
    usage = np.arange(1.0, 101.0)  # 1 … 100
    assert budget_quantile(usage, 0.01) == 99.0  # one sample (100) above
    assert budget_quantile(usage, 0.0) == 100.0
    # two containers of one hour a sample: a flat one and one with a tall rare peak
    flat = Curve("a", np.full(51, 1.0), 100.0)
    peaky = Curve("b", np.array([50.0, 2.0, *np.full(49, 1.0)]), 100.0)
    # 0.5 % pooled over 200 samples = one sample over: the cheapest is the peak of b
    cost = risk_matched([flat, peaky], 0.005, 1.0)
    assert cost == {"a": 100.0, "b": 200.0}
    assert risk_matched([flat, peaky], 0.0, 1.0) == {"a": 100.0, "b": 5000.0}


def test_aims_are_checked_and_the_backtest_pairs_skip_without_a_backtest(small):
    found = aims(
        small.scores, SMALL.services, [], small.proposals, small.pairs, RecommendSettings()
    )
    texts = [a.text for a in found]
    assert texts[0].startswith("CPU minutes over request") and len(texts) == 10
    backtest = next(a for a in found if a.text.startswith("backtest"))
    if not small.pairs:
        assert "skipped" in backtest.results["tortoise-bot, one PR"][0]
    assert backtest_share(None) is None

    @dataclasses.dataclass
    class Figures:
        container_minutes: float
        over_request_minutes: float

    @dataclasses.dataclass
    class WithBacktest:
        backtest: object

    assert backtest_share(WithBacktest(Figures(200.0, 3.0))) == pytest.approx(0.015)  # type: ignore[arg-type]


def test_the_backtest_pairs_hold_per_service_on_the_mean_of_its_runs_and_per_run(small):
    """Per run a pair holds within ×2 or 0.5 points; per service, the means of its runs do."""
    first, second = SMALL.services[:2]
    pairs = [
        Pair(first, (1, 0), 0.01, 0.025),  # ×2.5 and 1.5 points: misses
        Pair(first, (1, 1), 0.01, 0.005),  # ×2, holds; the means 1 % and 1.5 % hold
        Pair(second, (1, 0), 0.001, 0.02),  # misses, and so do the means
    ]
    found = aims(small.scores, SMALL.services, [], small.proposals, pairs, RecommendSettings())
    by_text = {a.text: a.results.get("tortoise-bot, one PR") for a in found}
    services = next(v for t, v in by_text.items() if "mean of its runs" in t)
    runs = next(v for t, v in by_text.items() if "services × runs" in t)
    assert runs == ("1/3", False)
    assert (
        services is not None
        and services[0].startswith("1/2, ")
        and f"{second} 0.10 % against 2.00 %" in services[0]
    )
    assert services[1] is False
    held = aims(small.scores, SMALL.services, [], small.proposals, pairs[:2], RecommendSettings())
    assert ("1/1", True) in [a.results.get("tortoise-bot, one PR") for a in held]


def test_the_split_ends_training_at_midnight_of_each_weekday():
    for day in range(7):
        split = split_start(day, 14) + 14 * 86400
        assert split % 86400 == 0 and weekday(np.array([split]))[0] == day
    assert split_start(3, 14) == archetype_cluster(1, days=1).start_s  # Thursday: as before
    assert set(SETS["all"]) == set(SETS["design"]) | set(SETS["test"])
    for name in SETS["test"]:
        assert build(name, 1) == build(name, 1) and build(name, 1) != build(name, 2)


def test_a_lower_memory_limit_kills_more_and_krr_and_vpa_follow_their_rules():
    spec = archetype_cluster(1, days=6, names=("cache-leaky", "frontend-hpa"))
    demand = draw_demand(spec)
    frontend, leaky = spec.services  # in archetype order
    leak = demand["quality/cache-leaky"]

    def ooms(values):
        return score(
            simulate_switched(spec, leak, leaky, values, 2880), spec.step_s, 2880
        ).oom_kills

    app = leaky.containers[0]
    assert app.memory_limit_bytes is not None
    lower = dataclasses.replace(app, memory_limit_bytes=app.memory_limit_bytes * 3 // 4)
    assert ooms(dataclasses.replace(leaky, containers=(lower,))) > ooms(leaky) > 0
    history = prefix(spec, simulate_switched(spec, leak, leaky, leaky, 2880), 2880)
    krr = krr_simple(leaky, history.expected_history(service_ref(leaky))).containers[0]
    assert krr.memory_limit_bytes == krr.memory_request_bytes and krr.cpu_limit_cores is None
    assert vpa_defaults(frontend, None) == frontend  # no estimate, nothing changes


def test_the_command_is_deterministic_prints_json_and_updates_a_doc(capsys, tmp_path: Path):
    args = ["--seeds", "1", "--weekdays", "tue", "--services", "tiny-exporter", "--jobs", "1"]
    args += ["--days", "4", "--score-days", "1"]
    assert main([*args, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main([*args, "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    first.pop("seconds"), second.pop("seconds")
    assert first == second
    assert set(first["sets"]["design"]) == set(CANDIDATES)
    assert first["sets"]["design"][ORACLE]["cpu_over_request"] <= 0.01 + 1e-9
    assert first["sets"]["design"]["current"]["worst_weekday"] == "tue"
    assert [a["aim"].split()[0] for a in first["aims"]["design"]][:2] == ["CPU", "no"]
    assert set(first["proposals"]["1/tue"]) == {"tiny-exporter"}
    assert main([*args, "--changes"]) == 0
    text = capsys.readouterr().out
    assert "== design set, pooled" in text and "== aims on the design set" in text
    assert "-- tiny-exporter, seed 1, split tue: " in text
    doc = tmp_path / "quality.md"
    doc.write_text("intro\n<!-- quality:begin -->\nold\n<!-- quality:end -->\nend\n")
    assert main([*args, "--update-doc", str(doc)]) == 0
    updated = doc.read_text()
    assert "old" not in updated and "### Design set, pooled" in updated
    assert updated.startswith("intro\n") and updated.endswith("<!-- quality:end -->\nend\n")
    unmarked = tmp_path / "unmarked.md"
    unmarked.write_text("no markers\n")
    with pytest.raises(SystemExit):
        update_doc(str(unmarked), [])
    for bad in (
        ["--services", "nope"],
        ["--set-name", "test", "--services", "api-daily"],
        ["--weekdays", "moon"],
        ["--set", "noise.nope=1"],
    ):
        with pytest.raises(SystemExit):
            main(bad)
