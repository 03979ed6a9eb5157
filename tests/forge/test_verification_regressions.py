"""The regressions a whole ``serve_repository`` run finds beyond CPU over request and OOM kills,
on real parts (a real Prometheus backfilled with the history around the merges, the GitHub
emulator holding the merged pull requests, real manifests):

- ``api``: its CPU request and limit were cut; once live, its pods are throttled far above the
  share its pull request predicted: regressed, and the revert restores the limit only;
- ``web``: the same cut, throttled above the prediction but within ``verify.margins
  .throttle_share``: verified;
- ``cart``: its HPA's minReplicas and maxReplicas were cut; once live, its replicas sit at the
  new maxReplicas with the CPU above the target all day, the load within the range before the
  merge: regressed (capacity shortfall), and the revert restores maxReplicas only;
- ``pay``: the same cut, but the load rose well past the peaks before the merge: the load left
  the range, said, not reverted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from bot.config.verify import VerifyMargins
from bot.manifests.quantities import parse_quantity
from bot.model import (
    ChangeSet,
    FieldChange,
    FieldId,
    FileChange,
    Number,
    Recommendation,
    ReplayComparison,
)
from bot.report import Proposal, parse_state
from bot.report.markdown import escape
from bot.report.numbers import field_value
from bot.report.proposal import PullRequestState, change_id
from bot.report.verification import said_verdicts
from tests.forge.test_verification import DAY, LIVE, NOW, START, merge_open
from tests.forge.test_verification_run import _comment, _serve, ref
from tests.forge.verify_history import HpaSpec, Workload, generation, write
from tests.report.replays import WINDOW_S, comparison
from tests.support.github.scenario import REPO, run_once
from tests.support.github.server import GitHubEmulator, Issue
from tests.support.prometheus import RunningPrometheus, backfill, start_prometheus

END = NOW + DAY
MARGINS = VerifyMargins()
"""The default margins, which the runs use."""

PREDICTED_THROTTLE = 0.02
"""The share of CPU minutes over the new limit the throttled workloads' replays predicted."""
THROTTLED = {"api": 0.30, "web": PREDICTED_THROTTLE + MARGINS.throttle_share / 2}
"""The share of CFS periods throttled after the merge: far above the prediction, within it."""
CPU_REQUEST = (0.5, 0.25)
CPU_LIMIT = (1.0, 0.3)
"""The throttled workloads' CPU request and limit, before and merged (cores)."""
CPU_CORES = 0.2
"""Their usage (cores a pod), under the new request: only the limit regresses."""

PREDICTED_SHORTFALL = 70.0
"""Capacity-shortfall minutes the HPA'd workloads' replays predicted over their window."""
TARGET = 70
"""Their HPA's CPU utilisation target (percent of the 500m request)."""
MIN_REPLICAS = (2, 1)
MAX_REPLICAS = (4, 2)
"""Their HPA's bounds, before and merged."""
CORES = {"cart": (0.35, 0.40), "pay": (0.30, 0.45)}
"""Cores a pod before and after the merge, two pods throughout: ``cart`` runs above its target
beyond the tolerance (80 % > 77 %) at the new maxReplicas, its peak within the range before
the merge × (1 + ``load_fraction``) (0.8 <= 0.84); ``pay`` above it (0.9 > 0.72)."""
assert CORES["cart"][1] <= CORES["cart"][0] * (1 + MARGINS.load_fraction)
assert CORES["pay"][1] > CORES["pay"][0] * (1 + MARGINS.load_fraction)
assert all(after / 0.5 * 100 > TARGET * 1.1 for _, after in CORES.values())

THROTTLED_NAMES = ("api", "web")
HPA_NAMES = ("cart", "pay")

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: shop
spec:
{replicas}  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
        - name: app
          image: example/{name}:1
          resources:
            requests:
              cpu: 500m
              memory: 256Mi
{limits}"""
LIMITS = "            limits:\n              cpu: 1000m\n"
HPA = f"""---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{name}}
  namespace: shop
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{name}}
  minReplicas: {MIN_REPLICAS[0]}
  maxReplicas: {MAX_REPLICAS[0]}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {TARGET}
"""


def manifest(name: str) -> str:
    """``apps/NAME.yaml`` before the merges: a Deployment with a CPU limit, or with an HPA."""
    if name in THROTTLED_NAMES:
        return DEPLOYMENT.format(name=name, replicas="  replicas: 2\n", limits=LIMITS)
    return DEPLOYMENT.format(name=name, replicas="", limits="") + HPA.format(name=name)


def _pods(name: str, generation_hash: str) -> tuple[str, str]:
    return (f"{name}-{generation_hash}-bcdfg", f"{name}-{generation_hash}-hjklm")


def _workload(name: str) -> Workload:
    """Two pods with the values before the merge until ``LIVE``, two new ones from it."""
    if name in THROTTLED_NAMES:
        before = {"cpu_request": CPU_REQUEST[0], "cpu_limit": CPU_LIMIT[0]}
        after = {"cpu_request": CPU_REQUEST[1], "cpu_limit": CPU_LIMIT[1]}
        before |= {"cpu_cores": CPU_CORES, "throttled_share": 0.0}
        after |= {"cpu_cores": CPU_CORES, "throttled_share": THROTTLED[name]}
        hpa: tuple[HpaSpec, ...] = ()
    else:
        before = {"cpu_request": 0.5, "cpu_cores": CORES[name][0]}
        after = {"cpu_request": 0.5, "cpu_cores": CORES[name][1]}
        hpa = (
            HpaSpec(START, LIVE, MIN_REPLICAS[0], MAX_REPLICAS[0]),
            HpaSpec(LIVE, END, MIN_REPLICAS[1], MAX_REPLICAS[1]),
        )
    gens = (
        generation(_pods(name, "7c9d8b"), START, LIVE, before),
        generation(_pods(name, "5f6g7h"), LIVE, END, after),
    )
    return Workload(name, gens, hpa)


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningPrometheus]:
    work = tmp_path_factory.mktemp("regressions")
    written = write([_workload(n) for n in (*THROTTLED_NAMES, *HPA_NAMES)], work / "history.om")
    backfill([work / "history.om"], work / "data", expected_samples=written)
    with start_prometheus(work / "data", workdir=work) as running:
        yield running


def _replay(*, throttle: float | None = None, shortfall: float | None = None) -> ReplayComparison:
    """A replay of the proposed values predicting no CPU over request, no OOM kill and this
    share of CPU minutes over the limit / these shortfall minutes over its window."""
    base = comparison()
    cpu = base.proposed.cpu[0]
    if throttle is not None:
        limit = CPU_LIMIT[1]
        cpu = replace(cpu, limit_cores=limit, over_limit_minutes=throttle * cpu.container_minutes)
    replicas = replace(base.proposed.replicas, shortfall_minutes=shortfall)
    return replace(base, proposed=replace(base.proposed, cpu=(cpu,), replicas=replicas))


def _changes(name: str) -> tuple[tuple[FieldChange, ...], dict[bytes, bytes], ReplayComparison]:
    """What ``name``'s merged pull request changed, its manifest edits and its replay."""
    if name in THROTTLED_NAMES:
        (req_was, req), (lim_was, lim) = CPU_REQUEST, CPU_LIMIT
        changes = (
            FieldChange(ref(name), FieldId.REQUESTS_CPU, req, req_was, "app"),
            FieldChange(ref(name), FieldId.LIMITS_CPU, lim, lim_was, "app"),
        )
        edits = {b"cpu: 500m": b"cpu: 250m", b"cpu: 1000m": b"cpu: 300m"}
        return changes, edits, _replay(throttle=PREDICTED_THROTTLE)
    (min_was, low), (max_was, high) = MIN_REPLICAS, MAX_REPLICAS
    changes = (
        FieldChange(ref(name), FieldId.HPA_MIN_REPLICAS, low, min_was),
        FieldChange(ref(name), FieldId.HPA_MAX_REPLICAS, high, max_was),
    )
    edits = {
        f"minReplicas: {min_was}".encode(): f"minReplicas: {low}".encode(),
        f"maxReplicas: {max_was}".encode(): f"maxReplicas: {high}".encode(),
    }
    return changes, edits, _replay(shortfall=PREDICTED_SHORTFALL)


def _proposals(checkout: Path) -> list[Proposal]:
    """What an earlier run proposed for each workload, with its replay's prediction."""
    out = []
    for name in (*THROTTLED_NAMES, *HPA_NAMES):
        path = f"apps/{name}.yaml"
        old = new = (checkout / path).read_bytes()
        changes, edits, replay = _changes(name)
        for was, now in edits.items():
            new = new.replace(was, now)
        rec = replace(Recommendation(ref(name), "changes"), replay=replay)
        key = f"default/shop/{name}"
        change_set = ChangeSet(key, changes, (rec,))
        out.append(Proposal(key, f"Right-size {name}", change_set, (FileChange(path, old, new),)))
    return out


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitHubEmulator]:
    """One emulator for the module: every test reads the one run ``served`` made."""
    with GitHubEmulator(tmp_path_factory.mktemp("github")) as gh:
        yield gh


@pytest.fixture(scope="module")
def merged(emulator, tmp_path_factory):
    """The repository with each workload's pull request merged two hours before ``LIVE``."""
    gh, tmp_path = emulator, tmp_path_factory.mktemp("merged")
    names = (*THROTTLED_NAMES, *HPA_NAMES)
    files = {f"apps/{n}.yaml": manifest(n).encode() for n in names}
    files[".tortoise-bot.yaml"] = b"update_mode: auto\npull_requests:\n  max_new_per_run: 0\n"
    owner, repo = REPO.split("/")
    gh.create_repository(owner, repo, files)
    run_once(gh, tmp_path / "earlier", _proposals)
    numbers = merge_open(gh)
    assert sorted(numbers) == sorted(names)
    return gh, numbers


def _state(pull: Issue) -> PullRequestState:
    state = parse_state(pull.body)
    assert state is not None, pull.body
    return state


def _reverts(gh) -> dict[int, Issue]:
    """The open revert pull requests by the number of the pull request each reverts."""
    out = {}
    for pull in gh.pulls(REPO, state="open"):
        state = parse_state(pull.body)
        if pull.title.startswith("Revert #") and state is not None and state.reverts:
            out[state.reverts] = pull
    return out


def _read(gh, pull: Issue, name: str) -> list[dict]:
    """The documents of ``apps/NAME.yaml`` on the branch of ``pull``."""
    assert pull.pull is not None
    text = gh.repository(REPO).git.read_file(pull.pull.head, f"apps/{name}.yaml")
    return list(YAML(typ="safe").load_all(text))


def _row(comment: str, figure: str) -> list[str]:
    """The cells (predicted, before the merge, after) of ``figure``'s row in ``comment``."""
    match = re.search(rf"^\| {re.escape(figure)} \| (.*) \|$", comment, re.MULTILINE)
    assert match is not None, comment
    return [cell.strip() for cell in match.group(1).split("|")]


def _pct(share: float) -> str:
    return f"{share * 100:.1f} %"


def _id(name: str, field_id: FieldId) -> str:
    return change_id(ref(name), None if field_id.is_hpa else "app", field_id)


def _restored(field_id: FieldId, merged: Number, previous: Number) -> str:
    return f"`{field_id.text}`: {field_value(field_id, merged)} → {field_value(field_id, previous)}"


@pytest.fixture(scope="module")
def served(merged, prom, tmp_path_factory):
    """One run a week after the values went live: its report, the merged numbers, the forge
    (once for the module: the tests only read what it did)."""
    gh, numbers = merged
    tmp_path = tmp_path_factory.mktemp("served")
    report = _serve(gh, prom, tmp_path / "run", NOW)
    assert report.ok, report.message
    return gh, numbers, report


def test_throttling_above_the_margin_regresses_and_reverts_the_limit_only(served):
    gh, numbers, report = served
    assert "verification: regressed 2, load left the range 1, verified 1" in report.message
    comment = _comment(gh, numbers["api"])
    assert said_verdicts(comment) == {ref("api").key: "regressed"}
    observed = THROTTLED["api"]
    said = (
        f"app: {_pct(observed)} of CFS periods throttled, predicted {_pct(PREDICTED_THROTTLE)} "
        f"over the limit (margin {_pct(MARGINS.throttle_share)})"
    )
    assert f"regressed: {escape(said)}" in comment
    # predicted, before the merge (old pods: never throttled), after
    assert _row(comment, "app\\: CPU throttled") == [
        _pct(PREDICTED_THROTTLE),
        _pct(0.0),
        _pct(observed),
    ]
    assert _row(comment, "app\\: CPU minutes over request") == [_pct(0.0)] * 3  # not a finding
    (low, high), (request_was, request) = CPU_LIMIT, CPU_REQUEST
    assert _restored(FieldId.LIMITS_CPU, high, low) in comment
    assert "`requests.cpu`" not in comment  # changed, but not what regressed

    revert = _reverts(gh)[numbers["api"]]
    assert revert.title == f"Revert #{numbers['api']}"
    state = _state(revert)
    assert dict(state.changes) == {_id("api", FieldId.LIMITS_CPU): low}
    assert dict(state.previous) == {_id("api", FieldId.LIMITS_CPU): high}
    (deployment,) = _read(gh, revert, "api")
    resources = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert parse_quantity(resources["limits"]["cpu"]) == parse_quantity(str(low))
    assert parse_quantity(resources["requests"]["cpu"]) == parse_quantity(str(request))
    assert request != request_was  # the merged request stays
    assert f"Revert: [#{revert.number}](http" in comment
    (dashboard,) = gh.issues(REPO)
    (line,) = [x for x in dashboard.body.splitlines() if f"#{numbers['api']}]" in x]
    assert "regressed" in line and "CFS periods throttled" in line


def test_throttling_within_the_margin_is_verified(served):
    gh, numbers, _ = served
    comment = _comment(gh, numbers["web"])
    assert said_verdicts(comment) == {ref("web").key: "verified"}
    observed = THROTTLED["web"]
    assert PREDICTED_THROTTLE < observed <= PREDICTED_THROTTLE + MARGINS.throttle_share
    assert _row(comment, "app\\: CPU throttled") == [
        _pct(PREDICTED_THROTTLE),
        _pct(0.0),
        _pct(observed),
    ]
    assert numbers["web"] not in _reverts(gh) and "Previous values" not in comment


def test_a_shortfall_at_the_new_max_replicas_regresses_and_reverts_max_replicas_only(served):
    gh, numbers, _ = served
    comment = _comment(gh, numbers["cart"])
    assert said_verdicts(comment) == {ref("cart").key: "regressed"}
    predicted = PREDICTED_SHORTFALL / (WINDOW_S / DAY)
    row = _row(comment, escape("capacity shortfall at maxReplicas (min/day)"))
    # at maxReplicas above the target at every sample of the week: the whole day
    assert row[:2] == [f"{predicted:.0f}", "0"]
    assert float(row[2]) == pytest.approx(DAY / 60, rel=0.01)
    said = (
        f"capacity shortfall at maxReplicas {row[2]} min/day, predicted {predicted:.0f} "
        f"(margin {MARGINS.shortfall_minutes_per_day:.0f})"
    )
    assert f"regressed: {escape(said)}" in comment
    (low_was, low), (high_was, high) = MIN_REPLICAS, MAX_REPLICAS
    assert _restored(FieldId.HPA_MAX_REPLICAS, high, high_was) in comment
    assert "`hpa.minReplicas`" not in comment

    revert = _reverts(gh)[numbers["cart"]]
    state = _state(revert)
    assert dict(state.changes) == {_id("cart", FieldId.HPA_MAX_REPLICAS): high_was}
    _, hpa = _read(gh, revert, "cart")
    assert (hpa["spec"]["maxReplicas"], hpa["spec"]["minReplicas"]) == (high_was, low)
    assert low != low_was  # the merged minReplicas stays
    assert "slots are hours" not in (revert.body or "")  # its rows name no slot: no legend
    # its terms line defines only what it uses: a revert has no backtest, no step toward a target
    (terms,) = [x for x in (revert.body or "").splitlines() if x.startswith("Terms (")]
    assert "backtest = " not in terms and "step k of n = " not in terms
    # the dashboard's line of the open revert says what it restores, not the engine's proposal
    (dashboard,) = gh.issues(REPO)
    (line,) = [x for x in dashboard.body.splitlines() if f"[#{revert.number}]" in x]
    said = (
        f"reverts #{numbers['cart']}, whose outcome regressed: hpa.maxReplicas {high} → {high_was}"
    )
    assert escape(said) in line, line


def test_a_load_that_left_the_range_is_said_and_not_reverted(served):
    gh, numbers, _ = served
    comment = _comment(gh, numbers["pay"])
    assert said_verdicts(comment) == {ref("pay").key: "load-left-range"}
    before, after = (2 * cores for cores in CORES["pay"])  # two pods
    said = (
        f"but the load left the range: the workload's CPU peaked at {after:.2f} cores, above "
        f"{before:.2f} before the merge"
    )
    assert escape(said) in comment
    assert "capacity shortfall at maxReplicas" in comment  # what was worse, said
    assert numbers["pay"] not in _reverts(gh) and "Previous values" not in comment
    assert sorted(_reverts(gh)) == sorted([numbers["api"], numbers["cart"]])
