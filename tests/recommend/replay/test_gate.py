"""The replay gate backs a risky proposal off to the nearest value the replay accepts."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from bot.config.recommend import RecommendSettings, resolve
from bot.model import MIB, Explained, Recommendation, ReplayFigures, ReplicaReplay
from bot.recommend.engine import recommend
from bot.recommend.folding import limit
from bot.recommend.inputs import WorkloadInput
from bot.recommend.replay.compare import findings
from bot.recommend.replay.context import ReplayContext
from bot.recommend.replay.gate import GATE_RULE, gate
from tests.recommend.factories import (
    NOW_S,
    container,
    container_history,
    history,
    hpa,
    series,
    workload,
)


def _settings(mode: str = "on") -> RecommendSettings:
    return resolve(RecommendSettings(), {"replay": {"gate": mode}})


def _gate(
    inp: WorkloadInput, draft: Recommendation, mode: str = "on", *, report: bool = True
) -> Recommendation:
    settings = _settings(mode)
    by_name = {c.name: c for c in inp.containers}
    context = ReplayContext.build(inp, settings, now_s=NOW_S, report=report)
    assert context is not None
    return gate(
        inp,
        draft,
        settings,
        context=context,
        limit_of=lambda name, res, request: limit(by_name[name], res, request, settings),
    )


def _draft(inp: WorkloadInput) -> Recommendation:
    return recommend(inp, _settings("off"), now_s=NOW_S)


def _set(rec: Recommendation, container: str, **values: float) -> Recommendation:
    """``rec`` with container values (``requests_cpu=0.2`` ...) proposed as given."""
    out = []
    for c in rec.containers:
        for key, value in values.items():
            if c.name != container:
                continue
            kind, resource = key.split("_")
            rr = c.resource(resource)  # type: ignore[arg-type]
            name = "request" if kind == "requests" else "limit"
            moved = Explained(getattr(rr, name).current, value, "test.risky", "a risky proposal")
            rr = replace(rr, request=moved) if name == "request" else replace(rr, limit=moved)
            c = replace(c, cpu=rr) if resource == "cpu" else replace(c, memory=rr)  # noqa: PLW2901
        out.append(c)
    return replace(rec, containers=tuple(out))


def _memory_workload(peak: float = 700 * MIB) -> WorkloadInput:
    n = series(3).size
    mem = np.full(n, 300 * MIB)
    mem[1000:1010] = peak
    return workload(
        container("app", 0.5, 512 * MIB, mem_limit=1024 * MIB),
        hist=history(container_history("app", 0.2, mem, days=3), days=3),
    )


def test_a_memory_limit_below_the_peak_is_held_at_the_nearest_safe_value():
    inp = _memory_workload()
    risky = _set(_draft(inp), "app", requests_memory=400 * MIB, limits_memory=600 * MIB)
    gated = _gate(inp, risky)
    limit = gated.containers[0].memory.limit
    assert limit.rule == GATE_RULE
    assert limit.inputs["wanted"] == 600 * MIB
    assert limit.proposed is not None
    assert 700 * MIB <= limit.proposed <= 700 * MIB + 16 * MIB
    assert limit.proposed % MIB == 0
    assert "OOM" in limit.reason and "wants 600Mi" in limit.reason
    assert gated.replay is not None
    assert gated.replay.findings[0].kind == "oom"
    assert gated.replay.proposed.memory[0].oom_kills == 0
    assert gated.replay.held == (("limits.memory", "app", 600 * MIB, limit.proposed),)


def test_without_report_the_gate_holds_the_same_values_and_attaches_no_figures():
    inp = _memory_workload()
    risky = _set(_draft(inp), "app", requests_memory=400 * MIB, limits_memory=600 * MIB)
    full, lean = _gate(inp, risky), _gate(inp, risky, report=False)
    assert full.containers[0].memory.limit.rule == GATE_RULE  # something was held back
    assert lean.containers == full.containers
    assert lean.hpa == full.hpa
    assert lean.replay is None and full.replay is not None


def test_report_only_shows_the_finding_and_keeps_the_proposal():
    inp = _memory_workload()
    risky = _set(_draft(inp), "app", requests_memory=400 * MIB, limits_memory=600 * MIB)
    shown = _gate(inp, risky, "report-only")
    assert shown.containers[0].memory.limit.proposed == 600 * MIB
    assert shown.replay is not None
    assert [f.kind for f in shown.replay.findings] == ["oom"]
    assert shown.replay.proposed.memory[0].oom_kills == 1
    assert shown.replay.held == ()


def test_gate_off_shows_the_replay_without_findings():
    inp = _memory_workload()
    risky = _set(_draft(inp), "app", requests_memory=400 * MIB, limits_memory=600 * MIB)
    shown = _gate(inp, risky, "off")
    assert shown.containers == risky.containers
    assert shown.replay is not None
    assert shown.replay.findings == ()
    assert shown.replay.proposed.memory[0].oom_kills == 1


def test_a_cpu_request_cut_too_far_is_held_within_the_allowance():
    n = series(3).size
    rng = np.random.default_rng(4)
    cpu = rng.uniform(0.1, 0.4, n)
    inp = workload(
        container("app", 0.5, 512 * MIB),
        hist=history(container_history("app", cpu, 300 * MIB, days=3), days=3),
    )
    risky = _set(_draft(inp), "app", requests_cpu=0.2)
    gated = _gate(inp, risky)
    request = gated.containers[0].cpu.request
    assert request.rule == GATE_RULE
    assert request.proposed is not None
    share = float(np.mean(cpu > request.proposed))
    assert share <= 0.01 + 1 / n
    # the nearest accepted value: one grid step lower would be refused
    assert float(np.mean(cpu > request.proposed - 0.002)) > 0.01 - 1 / n
    assert gated.replay is not None
    assert gated.replay.proposed.cpu[0].over_request_minutes / gated.replay.proposed.cpu[
        0
    ].container_minutes == pytest.approx(share)


def test_a_lower_max_replicas_that_adds_shortfall_is_held():
    days = 8
    n = series(days).size
    t = np.arange(n)
    demand = 2.0 + 1.5 * np.sin(2 * np.pi * t / 1440)  # cores, one recorded pod
    inp = workload(
        container("app", 0.5, 512 * MIB, cpu_policy="horizontal"),
        hist=history(container_history("app", demand, 300 * MIB, days=days), replicas=1, days=days),
        hpa=hpa(2, 20, ("app", "cpu", 70)),
    )
    draft = _draft(inp)
    assert draft.hpa is not None
    low_max = Explained(20, 6, "test.risky", "a risky maxReplicas")
    risky = replace(draft, hpa=replace(draft.hpa, max_replicas=low_max))
    gated = _gate(inp, risky)
    assert gated.hpa is not None
    kept = gated.hpa.max_replicas
    assert kept.rule == GATE_RULE
    assert kept.proposed is not None
    # the nearest max with no more shortfall: the fewest pods whose utilisation at the peak
    # (3.5 cores, 0.5 core requests) is within the tolerance of the 70 % target
    fewest = next(m for m in range(6, 21) if math.floor(350 / (m * 0.5)) / 70 <= 1.1)
    assert kept.proposed == fewest
    assert gated.replay is not None
    assert (
        gated.replay.proposed.replicas.shortfall_minutes
        == gated.replay.current.replicas.shortfall_minutes
    )


def test_a_safe_proposal_passes_with_its_replay_attached():
    inp = _memory_workload(peak=400 * MIB)
    rec = recommend(inp, _settings("on"), now_s=NOW_S)
    assert rec.status == "changes"
    assert rec.replay is not None
    assert rec.replay.findings == ()
    assert rec.replay.held == ()
    assert rec.replay.current.memory[0].limit_bytes == 1024 * MIB


@pytest.mark.parametrize(
    ("current", "proposed", "found"),
    [
        (0.0, 14.0, False),  # within 0.1 % of a 14-day window (20.16 min)
        (0.0, 21.0, True),
        (30.0, 30.0, False),  # no worse than the current HPA
        (30.0, 31.0, True),  # a ceiling: not the current's 30 plus the allowance's 20.16
    ],
)
def test_the_shortfall_allowance_is_a_ceiling_not_an_addition(current, proposed, found):
    def figures(shortfall: float) -> ReplayFigures:
        replicas = ReplicaReplay(3.0, 3.0, 3.0, 1008.0, shortfall, True)
        return ReplayFigures(14 * 86400.0, (), (), replicas, 0.0, 0.0)

    result = findings(
        figures(current), figures(proposed), allowance=0.01, shortfall_allowance=0.001
    )
    assert [f.kind for f in result] == (["shortfall"] if found else [])
