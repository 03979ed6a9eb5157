"""Pull-request bodies and the dashboard: content, escaping, state, size limit."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.model import (
    ChangeSet,
    ContainerRecommendation,
    Explained,
    FieldChange,
    FileChange,
    HpaRecommendation,
    HpaTargetRecommendation,
    Note,
    Recommendation,
    ResourceRecommendation,
    Usage,
    VpaEstimate,
    WorkloadRef,
)
from bot.report import (
    MAX_BODY_CHARS,
    DashboardRow,
    Prices,
    Proposal,
    PullRequestState,
    embed_state,
    parse_state,
    render_dashboard,
    render_pull_request,
    replace_state,
    state_of,
    ticked_keys,
)
from bot.report.charts import hour_of_week, hourly_profile, week_profile, weekday_peaks
from bot.report.proposal import WeekUsage
from tests.report.replays import comparison

MIB = 1024**2
HOSTILE = "web<script>alert(1)</script>@octo/admins|x"


def resource(kind, current, proposed, usage=None):
    return ResourceRecommendation(
        resource=kind,
        policy="vertical",
        request=Explained(current, proposed, "vpa.target", "P90 of usage times 1.15"),
        limit=Explained(None, None, "limit.unset", "no limit"),
        usage=usage,
        vpa=VpaEstimate(
            target=proposed,
            lower_bound=proposed * 0.8,
            upper_bound=proposed * 1.5,
            uncapped_target=proposed,
            confidence=0.9,
        ),
    )


def proposal(name="frontend", *, n_changes=2, with_hpa=True, replay=None):
    ref = WorkloadRef("Deployment", "shop", name, "prod")
    changes = (
        FieldChange(ref, "requests.cpu", 0.25, 0.5, "app", "P90 x 1.15"),
        FieldChange(ref, "requests.memory", 256 * MIB, 512 * MIB, "app", "peak + 15%"),
    )[:n_changes]
    hpa = HpaRecommendation(
        min_replicas=Explained(2, 3, "tortoise.min", "weekly low"),
        max_replicas=Explained(10, 12, "tortoise.max", "peak x 2"),
        targets=(
            HpaTargetRecommendation("app", "cpu", Explained(50, 70, "tortoise.target", "headroom")),
        ),
    )
    rec = Recommendation(
        ref,
        "changes",
        reasons=("usage fell",),
        containers=(
            ContainerRecommendation(
                "app",
                cpu=resource("cpu", 0.5, 0.25, Usage(0.1, 0.2, 0.3, 0.4, samples=2016)),
                memory=resource(
                    "memory",
                    512 * MIB,
                    256 * MIB,
                    Usage(100 * MIB, 200 * MIB, 220 * MIB, 230 * MIB, samples=2016),
                ),
            ),
        ),
        hpa=hpa if with_hpa else None,
        notes=(Note("gap", "2 h without samples", "app"),),
        replay=replay if replay is not None else comparison(),
    )
    return Proposal(
        key=f"prod/shop/{name}",
        title=f"Right-size {name}",
        change_set=ChangeSet(f"prod/shop/{name}", changes, (rec,)),
        files=(FileChange("deploy.yaml", b"old", b"new"),),
        week_usage={
            ref.key: WeekUsage("app", "cpu", tuple(0.1 + h / 1000 for h in range(168)), 95.0)
        },
        replica_peaks={ref.key: (5, 6, 7, 6, 5, 2, 2)},
        window_s=(1_700_000_000.0, 1_700_000_000.0 + 14 * 86400),
    )


def test_body_has_every_section():
    title, body = render_pull_request(
        proposal(), prices=Prices(20.0, 4.0), dashboard_url="http://x/issues/1"
    )
    assert title == "Right-size frontend"
    # The summary is the replay's, with replicas: 2 → 1 cores and 4 → 2 GiB on average.
    assert (
        "Replayed on the last 14 days with replicas: requested CPU 2 cores → 1 core, memory "
        "4.00 GiB → 2.00 GiB (means), monthly cost $56.00 → $28.00/month (-$28.00)." in body
    )
    assert "### frontend: the last 14 days under this proposal" in body
    assert "| monthly cost | \\$56.00 | \\$28.00 \\(-\\$28.00\\) |" in body
    assert (
        "| app | cpu | 0.5 → 0.25 | — → — | -50% | 0.1 / 0.2 / 0.3 / 0.4 | 2016 | 0.25 (0.2–0.375) | 0.90 | vertical |"
        in body
    )
    assert "| minReplicas | 2 → 3 |" in body and "| target cpu (app) | 50% → 70% |" in body
    assert "Peak replicas per weekday: Mon 5, Tue 6, Wed 7, Thu 6, Fri 5, Sat 2, Sun 2." in body
    assert "(14.0 days)" in body and "2 h without samples" in body
    assert "Close this pull request to reject it" in body


def test_one_week_chart_per_workload_shows_what_the_change_is_about():
    hours = tuple(float(h % 24) for h in range(168))
    with_hpa = proposal(replay=comparison())
    replicas = replace(
        with_hpa.change_set.recommendations[0],
        replay=comparison(),
    )
    hpa_change = FieldChange(replicas.ref, "hpa.minReplicas", 3, 2)
    by_hour = replace(
        replicas.replay,
        current=replace(
            replicas.replay.current,
            replicas=replace(
                replicas.replay.current.replicas, by_hour=hours, time_zone="Asia/Tokyo"
            ),
        ),
        proposed=replace(
            replicas.replay.proposed,
            replicas=replace(replicas.replay.proposed.replicas, by_hour=hours),
        ),
    )
    hpa_proposal = replace(
        with_hpa,
        change_set=ChangeSet(with_hpa.key, (hpa_change,), (replace(replicas, replay=by_hour),)),
    )
    _, body = render_pull_request(hpa_proposal)
    assert body.count("```mermaid\nxychart-beta\n") == 1 and body.count("    line [") == 2
    assert 'x-axis "hour of the week" 0 --> 167' in body
    assert "Sunday 00:00 Asia/Tokyo" in body and "current (first line) and proposed" in body
    # A change about requests: usage against the current and the proposed request.
    _, body = render_pull_request(proposal())
    assert body.count("```mermaid\nxychart-beta\n") == 1 and body.count("    line [") == 3
    assert "lines in order: usage P95, current request, proposed request" in body
    assert (
        "    line [0.1, 0.101, 0.102," in body and "    line [" + ", ".join(["0.25"] * 168) in body
    )


def test_a_workload_without_replay_gets_no_per_pod_figure():
    p = proposal(replay=None)
    rec = replace(p.change_set.recommendations[0], replay=None)
    p = replace(p, change_set=replace(p.change_set, recommendations=(rec,)))
    _, body = render_pull_request(p, prices=Prices(20.0, 4.0))
    assert "No replay for Deployment/shop/frontend: cost and risk not estimated there." in body
    assert "### frontend: no replay" in body
    assert "/month" not in body and "cores" not in body.split("### Changes")[0]


def test_hostile_names_are_escaped_everywhere():
    _, body = render_pull_request(proposal(HOSTILE))
    visible = re.sub(r"<!-- tortoise-bot-state: .*? -->", "", body, flags=re.DOTALL)
    visible = re.sub(r"</?(details|summary|sub)>", "", visible)
    assert "<script>" not in visible and "@octo" not in visible
    assert "&lt;script&gt;" in visible and "&#64;octo/admins\\|x" in visible
    state = parse_state(body)
    assert state is not None and state.key == f"prod/shop/{HOSTILE}"


def test_state_round_trips_and_tracks_proposal_and_files():
    p = proposal()
    _, body = render_pull_request(p)
    assert parse_state(body) == state_of(p)
    moved = Proposal(p.key, p.title, p.change_set, (FileChange("deploy.yaml", b"moved", b"new"),))
    assert state_of(moved).proposal == state_of(p).proposal
    assert state_of(moved).files != state_of(p).files
    other = proposal(n_changes=1)
    assert state_of(other).proposal != state_of(p).proposal


def test_replace_state_keeps_the_rest_of_the_body():
    p = proposal()
    _, body = render_pull_request(p)
    noted = state_of(p).with_human_noted()
    new = replace_state(body, noted)
    assert parse_state(new) == noted
    assert new.replace(" ", "")[:200] == body.replace(" ", "")[:200]
    assert parse_state(replace_state("hand-written", noted)) == noted


def test_large_groups_fit_the_limit_and_link_the_dashboard():
    base = proposal()
    changes = tuple(
        FieldChange(
            WorkloadRef("Deployment", "shop", f"w{i:04d}-{'x' * 40}", "prod"),
            "requests.cpu",
            0.1,
            0.2,
            "app",
            "r" * 40,
        )
        for i in range(2000)
    )
    recs = base.change_set.recommendations * 300
    big = Proposal(base.key, base.title, ChangeSet(base.key, changes, recs), base.files)
    _, body = render_pull_request(big, dashboard_url="http://dash")
    assert len(body) <= MAX_BODY_CHARS
    assert "too large for the full rationale" in body and "[dashboard](http://dash)" in body
    assert re.search(r"…and \d+ more changes", body)
    assert parse_state(body) is not None


def test_dashboard_lists_every_status_and_parses_ticks():
    ref = WorkloadRef("Deployment", "shop", HOSTILE, "prod")
    rows = [
        DashboardRow(ref, "suppressed", "closed unmerged in #4", key="prod/shop/a", checkbox=True),
        DashboardRow(
            WorkloadRef("Deployment", "shop", "b"),
            "proposal-open",
            key="k/b",
            url="http://pr/5",
            number=5,
        ),
        DashboardRow(
            WorkloadRef("Deployment", "shop", "c"), "error", "manifest.yaml:3: bad quantity"
        ),
        DashboardRow(WorkloadRef("Deployment", "shop", "d"), "gathering-data", "3 of 7 days"),
        DashboardRow(WorkloadRef("Deployment", "shop", "e"), "pending", key="k/e", checkbox=True),
    ]
    body = render_dashboard(rows, title="Dashboard", not_done=["2 pull requests (rate limit)"])
    assert body == render_dashboard(
        list(reversed(rows)), title="Dashboard", not_done=["2 pull requests (rate limit)"]
    )
    for heading in (
        "## Errors",
        "## Suppressed",
        "## Pending",
        "## Open pull requests",
        "## Gathering data",
    ):
        assert heading in body
    assert "[#5](http://pr/5)" in body and "&lt;script&gt;" in body and "<script>" not in body
    assert "could not finish" in body
    assert ticked_keys(body) == set()
    ticked = body.replace(
        "- [ ] <!-- tortoise-bot-request: k/e -->", "- [x] <!-- tortoise-bot-request: k/e -->"
    )
    assert ticked_keys(ticked) == {"k/e"}


def test_hour_of_the_week_on_a_wall_clock():
    # 1970-01-04 was a Sunday: 00:00 UTC is hour 0 in UTC and 09:00 (hour 9) in Tokyo;
    # 1970-01-03 23:00 UTC (Saturday) is hour 167 in UTC and Sunday 08:00 in Tokyo.
    t = np.array([3 * 86400.0, 3 * 86400.0 - 3600.0, 3 * 86400.0 + 1800.0])
    assert hour_of_week(t, "UTC").tolist() == [0, 167, 0]
    assert hour_of_week(t, "Asia/Tokyo").tolist() == [9, 8, 9]
    assert hour_of_week(t, "Asia/Kolkata").tolist() == [5, 4, 6]  # +05:30
    assert hour_of_week(t, "Not/AZone").tolist() == [0, 167, 0]
    profile = week_profile(t, np.array([1.0, 2.0, 3.0]), "UTC", percentile=100.0)
    assert len(profile) == 168 and profile[0] == 3.0 and profile[167] == 2.0
    assert np.isnan(profile[1])


def test_chart_helpers():
    t = np.arange(0, 7 * 86400, 3600, dtype=np.float64)
    values = (t % 86400) / 3600
    profile = hourly_profile(t, values)
    assert profile[0] == 0.0 and profile[23] == pytest.approx(23.0)
    peaks = weekday_peaks(t, np.arange(t.size, dtype=np.float64))
    assert peaks[3] == pytest.approx(23.0)  # 1970-01-01 was a Thursday: the first day in the series
    assert len(peaks) == 7


@given(
    key=st.text(min_size=1),
    changes=st.dictionaries(
        st.text(),
        st.one_of(st.none(), st.integers(), st.floats(allow_nan=False, allow_infinity=False)),
    ),
    noted=st.booleans(),
)
def test_state_survives_any_key_and_values(key, changes, noted):
    state = PullRequestState(key, "p", "f", changes, noted, head="abc")
    body = "text before\n" + embed_state(state) + "\ntext after -->"
    assert parse_state(body) == state
    assert embed_state(state).count("-->") == 1


def test_huge_dashboard_is_cut_at_the_limit():
    rows = [
        DashboardRow(
            WorkloadRef("Deployment", "ns", f"w{i:05d}-{'x' * 60}"), "gathering-data", "y" * 80
        )
        for i in range(2000)
    ]
    body = render_dashboard(rows, title="Dashboard")
    assert len(body) <= MAX_BODY_CHARS and body.endswith("size limit.\n")


def test_state_survives_even_when_warnings_alone_exceed_the_limit():
    base = proposal()
    notes = tuple(Note(f"w{i}", "x" * 200) for i in range(1000))
    big = Proposal(base.key, base.title, base.change_set, base.files, notes=notes)
    _, body = render_pull_request(big)
    assert len(body) <= MAX_BODY_CHARS
    assert parse_state(body) == state_of(big)
    assert "cut at GitHub's size limit" in body
