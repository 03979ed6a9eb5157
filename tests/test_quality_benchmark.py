"""The quality benchmark at one seed and a small size: its figures are checked for sanity only
(what must hold whatever the engine proposes), never for values."""

from __future__ import annotations

import dataclasses
import json

import pytest

from benchmarks.quality import Options, main, run
from benchmarks.quality.candidates import krr_simple, oracle, vpa_defaults
from benchmarks.quality.report import CANDIDATES
from benchmarks.quality.scores import Score, score
from bot.config.recommend import RecommendSettings
from bot.sim.cluster import draw_demand, simulate_window
from bot.sim.profiles import archetype_cluster
from bot.sim.values import service_ref

SMALL = Options(
    seeds=(1,), services=("api-daily", "frontend-hpa", "cache-leaky"), days=8, score_days=2
)
"""Three archetypes: over-provisioned, HPA'd with a sidecar, leaking."""


@pytest.fixture(scope="module")
def small() -> tuple[dict[int, dict[str, dict[str, Score]]], list[str]]:
    found = run(SMALL, RecommendSettings())
    for service, rounds in found.proposals[1].items():  # one entry per pull request proposed
        (merged,) = found.scores[1][service]["tortoise-bot, merged"].rounds
        assert len(rounds) == merged and all(rounds)
    return found.scores, found.leaking


def test_every_candidate_is_scored_on_the_same_window(small):
    results, leaking = small
    assert leaking == ["cache-leaky"]
    scores = results[1]
    assert list(scores) == list(SMALL.services)
    for per_candidate in scores.values():
        assert list(per_candidate) == list(CANDIDATES)
        hours = {s.hours for s in per_candidate.values()}
        assert hours == {SMALL.score_days * 24}
        for s in per_candidate.values():
            assert s.used_core_hours > 0 and s.core_hours > 0 and s.container_minutes > 0


def test_the_oracle_is_leaner_than_over_provisioned_settings(small):
    results, _ = small
    api = results[1]["api-daily"]
    figures = {name: s.figures() for name, s in api.items()}
    assert figures["oracle"]["cpu_slack"] < figures["current"]["cpu_slack"]
    assert figures["oracle"]["core_hours"] < figures["current"]["core_hours"]
    # its CPU request is the held-out p98: exceeded in about 2 % of the minutes
    assert 0.005 < figures["oracle"]["cpu_over_request"] < 0.05
    # the same usage whatever the values: one demand, and requests do not change usage
    used = {round(s.used_core_hours, 6) for s in api.values()}
    assert len(used) == 1


def test_the_hpa_oracle_keeps_the_replayed_replicas(small):
    results, _ = small
    frontend = results[1]["frontend-hpa"]
    assert frontend["oracle"].pod_hours == pytest.approx(frontend["current"].pod_hours, rel=0.02)
    assert frontend["KRR simple"].core_hours == frontend["current"].core_hours  # HPA'd: CPU kept


def test_the_merge_loop_counts_its_rounds(small):
    results, _ = small
    for per_candidate in results[1].values():
        (rounds,) = per_candidate["tortoise-bot, merged"].rounds
        assert rounds >= 0
        one, merged = per_candidate["tortoise-bot, one PR"], per_candidate["tortoise-bot, merged"]
        if rounds == 0:  # nothing proposed: both are the current values
            assert one.core_hours == merged.core_hours == per_candidate["current"].core_hours


def test_a_lower_memory_limit_kills_more_and_krr_and_vpa_follow_their_rules():
    spec = archetype_cluster(1, days=6, names=("cache-leaky", "frontend-hpa"))
    demand = draw_demand(spec)
    frontend, leaky = spec.services  # in archetype order

    def ooms(values):
        part = simulate_window(spec, demand, start_day=2, days=4, services=[values])
        return score(part.services[0], spec.step_s).oom_kills

    app = leaky.containers[0]
    assert app.memory_limit_bytes is not None
    lower = dataclasses.replace(app, memory_limit_bytes=app.memory_limit_bytes * 3 // 4)
    assert ooms(dataclasses.replace(leaky, containers=(lower,))) > ooms(leaky) > 0
    history = simulate_window(spec, demand, start_day=0, days=2, services=[leaky])
    krr = krr_simple(leaky, history.expected_history(service_ref(leaky))).containers[0]
    assert krr.memory_limit_bytes == krr.memory_request_bytes and krr.cpu_limit_cores is None
    assert vpa_defaults(frontend, None) == frontend  # no estimate, nothing changes
    scored = simulate_window(spec, demand, start_day=2, days=4, services=[frontend])
    best = oracle(frontend, scored.services[0])
    assert best.hpa is not None and frontend.hpa is not None
    assert best.hpa.min_replicas == frontend.hpa.min_replicas


def test_the_command_is_deterministic_and_prints_json(capsys):
    args = ["--seeds", "1", "--services", "tiny-exporter", "--days", "8", "--score-days", "1"]
    assert main([*args, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main([*args, "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    first.pop("seconds"), second.pop("seconds")
    assert first == second
    assert set(first["pooled"]) == set(CANDIDATES)
    assert first["services"]["tiny-exporter"]["oracle"]["cpu_over_request"] < 0.05
    assert [a["aim"].split()[0] for a in first["aims"]][:2] == ["CPU", "memory"]
    assert set(first["proposals"]["1"]) == {"tiny-exporter"}
    assert main([*args, "--changes"]) == 0
    text = capsys.readouterr().out
    assert "== pooled" in text and "tortoise-bot, merged" in text and "== aims" in text
    assert "-- tiny-exporter, seed 1: " in text.split("== tortoise-bot's pull requests")[1]
    assert main([*args, "--json", "--set", "replay.gate=off", "--set", "limits.policy=leave"]) == 0
    chosen = json.loads(capsys.readouterr().out)
    assert chosen["set"] == ["replay.gate=off", "limits.policy=leave"]
    assert chosen["pooled"]["VPA defaults"] == first["pooled"]["VPA defaults"]  # upstream's
    for bad in (["--services", "nope"], ["--set", "noise.nope=1"], ["--set", "noise"]):
        with pytest.raises(SystemExit):
            main(bad)
