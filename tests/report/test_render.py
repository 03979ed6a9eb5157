"""Pull-request bodies and the dashboard: content, escaping, state, size limit."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from bot.clock import hour_of_week
from bot.model import (
    MIB,
    ChangeSet,
    ContainerRecommendation,
    Explained,
    FieldChange,
    FieldId,
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
from bot.report.charts import week_profile
from bot.report.proposal import WeekUsage
from tests.report.replays import comparison

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
        FieldChange(ref, FieldId.REQUESTS_CPU, 0.25, 0.5, "app", "P90 x 1.15"),
        FieldChange(ref, FieldId.REQUESTS_MEMORY, 256 * MIB, 512 * MIB, "app", "peak + 15%"),
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
        window_s=(1_700_000_000.0, 1_700_000_000.0 + 14 * 86400),
    )


def test_body_reads_in_one_minute():
    title, body = render_pull_request(
        proposal(), prices=Prices(20.0, 4.0), dashboard_url="http://x/issues/1"
    )
    assert title == "Right-size frontend"
    visible, details = body.split("<details>", 1)
    # One summary line: what changes, the cost with replicas (2 → 1 cores and 4 → 2 GiB on
    # average, at 20 and 4 a month), the replay's risk figures.
    assert visible.startswith(
        "**frontend** (Deployment shop/frontend, prod): CPU request −50 %, memory request "
        "−50 %. Monthly cost with replicas \\$56.00 → \\$28.00 \\(-\\$28.00\\); replayed on the last "
        "14 days\\: OOM kills 0 → 0, CPU over request 0 % → 0 %.\n"
    )
    # One table of changes, the rule in words.
    assert "| value | current → proposed | why |" in visible
    assert "| CPU request | 0.5 → 0.25 | P90 of usage times 1.15 |" in visible
    assert "#### The last 14 days under this proposal" in visible
    assert "| monthly cost | \\$56.00 | \\$28.00 \\(-\\$28.00\\) |" in visible
    assert len(visible) < 3000
    # The rest is folded: rules, usage and the recommender, the week, the data, feedback.
    assert "CPU request: `vpa.target`" in details
    assert (
        "| app | cpu | 0.1 / 0.2 / 0.3 / 0.4 | 2,016 | 0.25 (0.2–0.375) | 0.90 | vertical |"
        in details
    )
    assert (
        "Times are UTC (`report.time_zone`); hours of the week are on the UTC clock of the "
        "replica slots (`recommend.admin.time_zone`).\n"
        "- Window: 2023-11-14 22\\:13 → 2023-11-28 22\\:13 UTC \\(14.0 days\\)" in details
    )
    assert "- `gap` 2 h without samples" in details
    assert body.count("2 h without samples") == 1
    assert "Close this pull request to reject it" in details


def test_inputs_stand_beside_each_value_with_their_terms_defined():
    p = proposal()
    rec = p.change_set.recommendations[0]
    assert rec.hpa is not None
    target = Explained(
        50,
        55,
        "tortoise.target.max_increase",
        "100 - (77% usage - 50% target); toward 73%, at most +5 per change",
        {"rec": 0.763, "request": 1.0, "unlimited": 73},
    )
    low = Explained(2, 3, "tortoise.replicas.min", "ceil(replicas × 0.5)", {"slot_min": 3})
    hpa = replace(
        rec.hpa,
        min_replicas=low,
        targets=(HpaTargetRecommendation("app", "cpu", target),),
        slots={"Mon 09-10": (3, 8), "Tue 09-10": (3, 12), "Wed 09-10": (2, 6)},
    )
    changes = (
        FieldChange(rec.ref, FieldId.HPA_MIN_REPLICAS, 3, 2),
        FieldChange(rec.ref, FieldId.HPA_TARGET_CPU, 55, 50, "app"),
    )
    p = replace(
        p, time_zone="Asia/Tokyo", change_set=ChangeSet(p.key, changes, (replace(rec, hpa=hpa),))
    )
    _, body = render_pull_request(p)
    assert (
        "| minReplicas | 2 → 3 | ceil\\(replicas × 0.5\\); from busiest slot's minimum 3; busiest "
        "slots Mon 09-10, Tue 09-10 |" in body
    )
    assert (
        "| app CPU target | 50% → 55% | 100 - \\(77% usage - 50% target\\); toward 73%, at most +5 "
        "per change; from rec 0.763 cores, request 1 core, before the per-change limit 73% |"
        in body
    )
    assert "usage % = ⌈100 × rec / request⌉" in body and "rec = Tortoise's recommendation" in body
    assert "slots are hours of the week on the Asia/Tokyo clock" in body
    # the legend and the slots' clock; the window is on the display clock (UTC by default)
    assert body.count("Asia/Tokyo") == 2 and "Times are UTC (`report.time_zone`)" in body


def test_one_week_chart_per_workload_shows_what_the_change_is_about():
    hours = tuple(float(h % 24) for h in range(168))
    with_hpa = proposal(replay=comparison())
    replicas = replace(
        with_hpa.change_set.recommendations[0],
        replay=comparison(),
    )
    hpa_change = FieldChange(replicas.ref, FieldId.HPA_MIN_REPLICAS, 3, 2)
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
        time_zone="Asia/Tokyo",
        change_set=ChangeSet(with_hpa.key, (hpa_change,), (replace(replicas, replay=by_hour),)),
    )
    _, body = render_pull_request(hpa_proposal)
    assert body.count("```mermaid\nxychart-beta\n") == 1 and body.count("    line [") == 2
    assert 'x-axis "hour of the week" 0 --> 167' in body
    assert "x: hours from Sunday 00:00 Asia/Tokyo." in body
    assert "current (first line) and proposed" in body
    assert "hours of the week are on the Asia/Tokyo clock of the replica slots" in body
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
    assert "No replay (nothing to replay): cost and risk not estimated." in body
    assert "#### No replay" in body
    assert "/month" not in body and "cores" not in body.split("<details>")[0]


def test_several_workloads_one_line_each_and_one_table():
    one, two = proposal("web"), proposal("api")
    both = ChangeSet(
        "prod/shop",
        one.change_set.changes + two.change_set.changes,
        one.change_set.recommendations + two.change_set.recommendations,
    )
    _, body = render_pull_request(
        replace(one, key="prod/shop", change_set=both), prices=Prices(20.0, 4.0)
    )
    assert body.startswith(
        "**Right-sizing 2 workloads** in prod/shop (4 values): monthly cost with replicas "
        "\\$112.00 → \\$56.00/month \\(-\\$56.00\\).\n\n- **web** (Deployment shop/web, prod): "
    )
    assert "\n- **api** (Deployment shop/api, prod): " in body
    assert "| workload | value | current → proposed | why |" in body
    assert "| api | memory request | 512 MiB → 256 MiB | P90 of usage times 1.15 |" in body
    assert "#### web: the last 14 days under this proposal" in body
    assert body.count("- web: `gap` 2 h without samples") == 1


def test_the_oom_story_replaces_the_restart_count_and_each_note_is_said_once():
    p = proposal("cache", with_hpa=False)
    rec = p.change_set.recommendations[0]
    restarts = Note(
        "restarts", "app restarted 2 times; rate() handled its CPU counter resets", "app"
    )
    said = Note("container-resource-unsupported", "P90 of usage times 1.15", None)
    rec = replace(rec, notes=(*rec.notes, restarts, said))
    p = replace(
        p,
        notes=(rec.notes[0], restarts),
        oom_kills={rec.ref.key: {"app": 2}},
        change_set=replace(p.change_set, recommendations=(rec,)),
    )
    _, body = render_pull_request(p)
    summary_line = body.split("\n", 1)[0]
    assert (
        "cache \\(app\\) was OOM-killed twice without a memory limit \\(request 512 MiB\\)."
        in summary_line
    )
    assert "restarted" not in body
    assert body.count("2 h without samples") == 1
    assert "`container-resource-unsupported`" not in body  # the table's reason says it
    # More restarts than OOM kills: the count stays.
    p = replace(p, oom_kills={rec.ref.key: {"app": 1}})
    _, body = render_pull_request(p)
    assert "was OOM-killed once" in body and body.count("restarted 2 times") == 1


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
            FieldId.REQUESTS_CPU,
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
    assert "too large for the details here" in body and "[dashboard](http://dash)" in body
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
