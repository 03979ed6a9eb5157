"""The replay for people: table rows, monthly cost, risk line, held values, gate sentences."""

from __future__ import annotations

import json
from dataclasses import replace

import jsonschema  # type: ignore[import-untyped]
import pytest

from bot.model import (
    ContainerRecommendation,
    Explained,
    FieldId,
    GateFinding,
    Recommendation,
    ReplayComparison,
    ResourceRecommendation,
    WorkloadRef,
)
from bot.report import DashboardRow, Prices, render_dashboard
from bot.report import held as held_view
from bot.report import replay as view
from bot.report.outcome_json import plan_json
from tests.conftest import PROJECT
from tests.report.replays import comparison, figures

PLAN_SCHEMA = json.loads((PROJECT / "docs" / "schemas" / "plan.schema.json").read_text())

PRICES = Prices(core_month=20.0, gib_month=4.0, currency="€")
REF = WorkloadRef("Deployment", "shop", "web", "prod")
CPU_FINDING = GateFinding(
    "cpu",
    "app",
    0.0,
    0.05,
    0.01,
    "app: CPU above the proposed request 5.0% of the container-minutes",
)


REQUEST = Explained(0.5, 0.25, "vpa.target", "P90")


def _rec(replay, *, request=REQUEST) -> Recommendation:
    cpu = ResourceRecommendation(
        "cpu", "vertical", request, Explained(None, None, "limits.none", "")
    )
    memory = ResourceRecommendation(
        "memory",
        "vertical",
        Explained(512.0, 512.0, "noise.min_change", ""),
        Explained(1024.0, 1024.0, "limits.keep_ratio", ""),
    )
    return Recommendation(
        REF, "changes", containers=(ContainerRecommendation("app", cpu, memory),), replay=replay
    )


def test_monthly_cost_is_the_mean_requests_times_the_prices():
    cur = figures(672.0, 1344.0)  # 2 cores and 4 GiB on average over 336 h
    assert view.mean_cores(cur) == 2.0 and view.mean_gib(cur) == 4.0
    assert view.monthly_cost(cur, PRICES) == pytest.approx(2 * 20.0 + 4 * 4.0)
    assert view.monthly_cost(cur, Prices()) is None


def test_rows_current_and_proposed():
    rows = {r.label: (r.current, r.proposed) for r in view.rows(comparison(), PRICES)}
    assert rows == {
        "replicas mean / p95 / max": ("2 / 3 / 4", "2 / 3 / 4"),
        "requested CPU, mean with replicas": ("2 cores", "1 core"),
        "requested memory, mean with replicas": ("4.00 GiB", "2.00 GiB"),
        "CPU minutes over request": ("0 of 40,320 (0 %)", "0 of 40,320 (0 %)"),
        "predicted OOM kills": ("0", "0"),
        "monthly cost": ("€56.00", "€28.00 (-€28.00)"),
    }
    formula = view.cost_formula(comparison(), PRICES)
    assert formula is not None
    assert "× €20.00 per core-month" in formula and "/ 336 h" in formula
    assert "current 672.0 core-hours and 1,344.0 GiB-hours" in formula


def test_rows_name_eviction_risk_without_a_limit_and_shortfall_with_an_hpa():
    cur = figures(672.0, 1344.0, oom_kills=None, eviction_minutes=12.0, shortfall=3.0)
    new = figures(
        672.0, 1344.0, oom_kills=None, eviction_minutes=90.0, shortfall=0.0, over_request=403.2
    )
    cmp = replace(comparison(), current=cur, proposed=new)
    labels = {r.label: (r.current, r.proposed) for r in view.rows(cmp, Prices())}
    assert "predicted OOM kills" not in labels and "monthly cost" not in labels
    assert labels["eviction-risk minutes (no memory limit)"] == ("12 min", "90 min")
    assert labels["capacity shortfall"] == ("3 min", "0 min")
    assert labels["CPU minutes over request"][1] == "403 of 40,320 (1.0 %)"
    assert view.risk_figures(cmp) == (
        "above memory request (no limit) 12 → 90 min, CPU over request 0 % → 1.0 %, "
        "shortfall 3 → 0 min"
    )
    assert view.summary(cmp, Prices()) == view.risk_figures(cmp)
    assert view.summary(cmp, PRICES).startswith("cost +€0.00/month, ")


def test_held_values_take_their_reason_from_the_recommendation():
    held = Explained(
        0.5,
        0.45,
        "replay.gate",
        f"wants 250m; held at 450m: the replay of the history shows {CPU_FINDING.message}",
        {"wanted": 0.25, "wanted_rule": "vpa.target"},
    )
    rec = _rec(
        comparison(findings=(CPU_FINDING,), held=((FieldId.REQUESTS_CPU, "app", 0.25, 0.45),)),
        request=held,
    )
    [value] = held_view.held_values(rec)
    assert (value.field, value.container, value.wanted, value.kept) == (
        "requests.cpu",
        "app",
        0.25,
        0.45,
    )
    assert value.why == f"the replay of the history shows {CPU_FINDING.message}"
    assert value.text().startswith("requests.cpu (app) wanted 0.25, kept 0.45: the replay")
    assert held_view.gate_lines(rec) == [f"Held back by the replay: {value.text()}"]


@pytest.mark.parametrize(
    ("gate", "expected"),
    [
        (
            "report-only",
            "The replay warns (replay.gate: report-only; proposed as wanted): app: CPU",
        ),
        ("off", "The replay gate is off (replay.gate: off): figures shown, not checked."),
        ("on", "The replay found: app: CPU above"),
    ],
)
def test_gate_lines_say_what_the_gate_did(gate, expected):
    findings = () if gate == "off" else (CPU_FINDING,)
    [line] = held_view.gate_lines(_rec(comparison(gate=gate, findings=findings)))
    assert line.startswith(expected)


def test_no_finding_no_gate_line_and_no_replay_no_figure():
    assert held_view.gate_lines(_rec(comparison())) == []
    assert held_view.gate_lines(_rec(None)) == []
    assert view.summary(None, PRICES).startswith("no replay")
    assert "no replay" in view.markdown(_rec(None), PRICES, heading="### web", column="prod")


def test_cost_totals_sum_replays_and_name_the_workloads_without_one():
    other = replace(_rec(None), ref=WorkloadRef("Deployment", "shop", "api", "prod"))
    totals = view.cost_totals([_rec(comparison()), _rec(comparison()), other], PRICES)
    assert totals.current_month == pytest.approx(112.0)
    assert totals.proposed_month == pytest.approx(56.0)
    assert (totals.current_cores, totals.proposed_cores) == (4.0, 2.0)
    assert totals.unreplayed == ("Deployment/shop/api",) and totals.replayed == 2
    assert totals.cost_text() == "€112.00 → €56.00/month (-€56.00)"
    assert totals.requests_text() == "CPU 4 cores → 2 cores, memory 8.00 GiB → 4.00 GiB"
    assert view.cost_totals([other], PRICES).cost_text() is None


def test_window_days():
    assert view.window_days(14 * 86400.0) == "14 days"
    assert view.window_days(86400.0) == "1 day"
    assert view.window_days(6.5 * 86400.0) == "6.5 days"


def test_dashboard_lines_carry_cost_and_risk_and_list_held_values():
    held = Explained(
        0.5,
        0.45,
        "replay.gate",
        f"wants 250m; held at 450m: the replay of the history shows {CPU_FINDING.message}",
        {"wanted": 0.25},
    )
    rec = _rec(
        comparison(findings=(CPU_FINDING,), held=((FieldId.REQUESTS_CPU, "app", 0.25, 0.45),)),
        request=held,
    )
    rows = [
        DashboardRow(
            REF, "proposal-open", "usage fell", "prod/shop/web", "http://pr/5", 5, proposal=rec
        ),
        DashboardRow(WorkloadRef("Deployment", "shop", "quiet", "prod"), "up-to-date"),
    ]
    body = render_dashboard(rows, title="Dashboard", prices=PRICES)
    line = next(x for x in body.splitlines() if "**Deployment/shop/web**" in x)
    assert "cost -€28.00/month, OOM kills 0 → 0, CPU over request 0 % → 0 %" in line
    assert line.endswith("[#5](http://pr/5)")
    quiet = next(x for x in body.splitlines() if "quiet" in x)
    assert "cost" not in quiet
    held_section = body.split("## Held back by the replay", 1)[1]
    assert (
        "| Deployment/shop/web | prod | `requests.cpu (app)` | 0.25 | 0.45 | the replay of the "
        "history shows app\\: CPU above the proposed request 5.0% of the container-minutes |"
    ) in held_section
    without = render_dashboard(rows[1:], title="Dashboard", prices=PRICES)
    assert "Held back" not in without


def test_replay_json_matches_the_published_schema():
    nan = float("nan")
    by_hour = (nan,) + (2.0,) * 167
    current = figures(672.0, 1344.0, by_hour=by_hour, oom_kills=None, eviction_minutes=4.0)
    rec = _rec(
        ReplayComparison(
            current,
            figures(336.0, 672.0, shortfall=2.0),
            "on",
            (CPU_FINDING,),
            ((FieldId.REQUESTS_CPU, "app", 0.25, 0.45),),
        )
    )
    document = plan_json([(rec, ["deploy.yaml"])], prices=PRICES)
    jsonschema.validate(document, PLAN_SCHEMA)
    replay = document["workloads"][0]["replay"]
    assert replay["current"]["replicas"]["by_hour"][:2] == [None, 2.0]
    assert replay["current"]["monthly_cost"] == pytest.approx(56.0)
    assert replay["prices"] == {"core_month": 20.0, "gib_month": 4.0, "currency": "€"}
    assert replay["held"][0]["kept"] == 0.45 and replay["findings"][0]["kind"] == "cpu"
    assert json.loads(json.dumps(document, allow_nan=False)) == document
    unpriced = plan_json([(rec, [])])["workloads"][0]["replay"]
    assert unpriced["prices"] is None and unpriced["current"]["monthly_cost"] is None
    assert plan_json([(_rec(None), [])])["workloads"][0]["replay"] is None
