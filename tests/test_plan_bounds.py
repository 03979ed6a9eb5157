"""simulate and plan end to end on a namespace that bounds its proposals: a Kustomize base with
a LimitRange, a ResourceQuota and PDBs, a Spring Boot Deployment (``JAVA_TOOL_OPTIONS``), a Go
service (``GOMEMLIMIT``) with a sidecar without requests, and a GPU inference Deployment."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.config.bot import BotSettings
from bot.metrics.snapshot import SnapshotSource
from bot.model import GIB, MIB
from bot.pipeline.plan import repository_outcome
from bot.pipeline.proposals import build_proposals
from bot.report import render_pull_request
from tests.conftest import PROJECT, require_binary
from tests.support.demo_shop import console

BOUNDS = PROJECT / "tests" / "manifests" / "bounds"
NOW = "2026-11-01T00:00:00Z"


@pytest.fixture(scope="module")
def bounds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``tests/manifests/bounds`` copied once for the module, never changed: each test edits a
    copy (``payments``)."""
    require_binary("kubectl")
    root = tmp_path_factory.mktemp("bounds") / "payments"
    shutil.copytree(BOUNDS, root)
    return root


@pytest.fixture
def payments(bounds: Path, tmp_path: Path) -> Path:
    """A copy of ``bounds`` for this test alone."""
    return Path(shutil.copytree(bounds, tmp_path / "payments"))


@pytest.fixture(scope="module")
def history(bounds: Path) -> Path:
    """Fourteen days of simulated history of ``bounds`` (seed 3), once for the module:
    simulating reads only the manifests, which the tests change after it."""
    out = bounds.parent / "history.zip"
    args = ("--repo", str(bounds), "--out", str(out), "--days", "14", "--seed", "3", "--now", NOW)
    result = console("simulate", *args)
    assert result.returncode == 0, result.stderr
    return out


def _plan(cli, root: Path, history: Path, *more: str) -> dict:
    result = cli(
        "plan", "--repo", str(root), "--snapshot", str(history), "--now", NOW, "--format", "json",
        *more,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    return {w["name"]: w for w in doc["workloads"]}


@pytest.fixture(scope="module")
def free(bounds: Path, history: Path) -> dict:
    """The plan of ``bounds`` as it is, by workload name (read, never changed, by the tests)."""
    return _plan(console, bounds, history)


def _notes(workload: dict, code: str) -> list[str]:
    return [
        (f"{n['container']}: " if n["container"] else "") + n["message"]
        for n in workload["notes"]
        if n["code"] == code
    ]


def test_plan_names_what_the_namespace_and_the_runtime_declare(cli, bounds, history, free):
    by_name = free
    assert all(w["status"] == "changes" for w in by_name.values())
    # every proposal is within the LimitRange: requests and limits at most 2 cores and 3 GiB,
    # at least 50m and 64 MiB, CPU limits at most 4 × their request
    for w in by_name.values():
        for c in w["containers"]:
            cpu, memory = c["cpu"], c["memory"]
            for value, low, high in (
                (cpu["request"]["proposed"], 0.05, 2.0),
                (cpu["limit"]["proposed"], 0.05, 2.0),
                (memory["request"]["proposed"], 64 * MIB, 3 * GIB),
                (memory["limit"]["proposed"], 64 * MIB, 3 * GIB),
            ):
                assert value is None or low <= value <= high, (w["name"], c["name"])
            if cpu["limit"]["proposed"] and cpu["request"]["proposed"]:
                assert cpu["limit"]["proposed"] <= 4 * cpu["request"]["proposed"] + 1e-9
    ledger, rates = by_name["ledger"], by_name["rates"]
    assert _notes(ledger, "pdb") == [
        "PDB ledger (base/pdb.yaml:1) minAvailable 3 = proposed minReplicas 3: no pod may be "
        "evicted at that size, node drains will block"
    ]
    assert _notes(rates, "pdb") == [
        "PDB rates (base/pdb.yaml:11) minAvailable 50% of replicas 2 = 1 pod must stay: 1 may "
        "be evicted at a time"
    ]
    assert _notes(ledger, "runtime-memory") == [
        "ledger: env JAVA_TOOL_OPTIONS: -Xms512m (512Mi) under the memory limit 2Gi",
        "ledger: env JAVA_TOOL_OPTIONS: -Xmx1536m (1.5Gi) under the memory limit 2Gi",
    ]
    (go,) = _notes(rates, "runtime-memory")
    assert go.startswith("rates: env GOMEMLIMIT: GOMEMLIMIT=900MiB (900Mi) is 88% of the limit")
    assert go.endswith("change it with the limit")
    assert _notes(rates, "limit-range-default") == [
        f"metrics-agent: no {r} request in the manifest: LimitRange container-bounds "
        f"(base/namespace.yaml:3) gives it {v} at admission"
        for r, v in (("cpu", "100m"), ("memory", "256Mi"))
    ]
    # the quota: requests × maximum replicas over the namespace, named with the excess
    quota = _notes(ledger, "resource-quota")
    assert (
        quota == _notes(rates, "resource-quota") == _notes(by_name["inference"], "resource-quota")
    )
    cpu_line = next(q for q in quota if " requests.cpu 6:" in q)
    assert cpu_line.startswith("ResourceQuota compute (base/namespace.yaml:29) requests.cpu 6: ")
    assert "over; pods beyond it are refused at creation" in cpu_line
    text = cli("plan", "--repo", str(bounds), "--snapshot", str(history), "--now", NOW).stdout
    assert "note: PDB ledger (base/pdb.yaml:1) minAvailable 3 = proposed minReplicas 3" in text


def test_limit_range_and_heap_bound_the_proposed_values(cli, payments, history, free):
    """With a LimitRange max of 1280 MiB (the manifest at 1 GiB requested, 1280 MiB limit), the
    inference request that wants 1.53 GiB is clamped to it, and so is its limit; a heap of
    900 MiB would keep the limit at 900 MiB + 256 MiB non-heap, below the max."""
    assert free["inference"]["containers"][0]["memory"]["request"]["proposed"] > 1.25 * GIB
    namespace = payments / "base" / "namespace.yaml"
    namespace.write_text(namespace.read_text().replace("memory: 3Gi", "memory: 1280Mi", 1))
    inference = payments / "base" / "inference.yaml"
    inference.write_text(
        inference.read_text()
        .replace("memory: 2Gi", "memory: 1Gi")
        .replace("memory: 3Gi", "memory: 1280Mi")
        .replace(
            'args: ["tritonserver", "--model-repository=/models"]',
            'args: ["tritonserver", "--model-repository=/models"]\n'
            "          env:\n"
            "            - name: JAVA_TOOL_OPTIONS\n"
            '              value: "-Xmx900m"',
        )
    )
    memory = _plan(cli, payments, history)["inference"]["containers"][0]["memory"]
    request, limit = memory["request"], memory["limit"]
    assert (request["proposed"], request["rule"]) == (1280 * MIB, "limitrange.max")
    assert "LimitRange container-bounds (base/namespace.yaml:3) max 1.2Gi" in request["reason"]
    # the proportional limit (× 1.25) is over the LimitRange max: clamped to it
    assert (limit["proposed"], limit["rule"]) == (1280 * MIB, "limitrange.max")


def test_a_memory_limit_is_not_proposed_below_the_heap(cli, payments, history, free):
    """The inference limit falls from 3 GiB to 2.3 GiB with its request; with -Xmx2400m it
    stays at 2400 MiB + 256 MiB non-heap (``runtime.heap``), and the note says so."""
    limit = free["inference"]["containers"][0]["memory"]["limit"]
    assert limit["proposed"] < 2656 * MIB < limit["current"]
    inference = payments / "base" / "inference.yaml"
    inference.write_text(
        inference.read_text().replace(
            'args: ["tritonserver", "--model-repository=/models"]',
            'args: ["java", "-Xmx2400m", "-jar", "/app/server.jar"]',
        )
    )
    by_name = _plan(cli, payments, history)
    limit = by_name["inference"]["containers"][0]["memory"]["limit"]
    assert (limit["proposed"], limit["rule"]) == (2656 * MIB, "runtime.heap")
    assert "not below args -Xmx2400m + non-heap 256Mi = 2.6Gi" in limit["reason"]
    (note,) = _notes(by_name["inference"], "runtime-memory")
    assert note == (
        "server: args: -Xmx2400m (2.3Gi) holds the memory limit at 2.6Gi (from 3Gi): lower the "
        "limit further only with it"
    )


def test_gpus_are_priced_in_the_monthly_cost(cli, payments, history):
    """``pull_requests.cost.extended_resources``: the inference replay's monthly cost holds
    1 GPU per pod × 2 replicas × $1,500 beside 2 cores × $30 and 4 GiB × $4 requested now."""
    (payments / ".tortoise-bot.yaml").write_text(
        "pull_requests:\n  cost:\n    cpu_core_month: 30\n    memory_gib_month: 4\n"
        '    extended_resources:\n      "nvidia.com/gpu": 1500\n'
    )
    by_name = _plan(cli, payments, history)
    replay = by_name["inference"]["replay"]
    assert replay["extended_resources"] == {"nvidia.com/gpu": 1.0}
    assert replay["prices"]["extended"] == {"nvidia.com/gpu": 1500.0}
    assert replay["current"]["monthly_cost"] == pytest.approx(2 * 30 + 4 * 4 + 2 * 1500)
    assert by_name["ledger"]["replay"]["extended_resources"] == {}
    text = cli("plan", "--repo", str(payments), "--snapshot", str(history), "--now", NOW).stdout
    assert "+ 1 nvidia.com/gpu per pod × replicas × $1,500.00 per unit-month" in " ".join(
        text.split()
    )


def test_the_pull_request_names_the_findings(bounds, history):
    """Each workload's pull request body lists the quota, PDB and heap notes once (with the
    data notes), and its visible part stays under 3,000 characters."""
    source = SnapshotSource(history)
    plan = repository_outcome(
        bounds, source, BotSettings(), now_s=source.end_s, grouping="workload"
    )
    bodies = {}
    for proposal in build_proposals(plan):
        _, body = render_pull_request(proposal, prices=plan.prices)
        bodies[proposal.workloads[0].name] = body.replace("\\", "")  # Markdown escapes
    assert set(bodies) == {"ledger", "rates", "inference"}
    ledger = bodies["ledger"]
    assert ledger.count("ResourceQuota compute (base/namespace.yaml:29) requests.cpu 6") == 1
    assert "PDB ledger (base/pdb.yaml:1) minAvailable 3 = proposed minReplicas 3" in ledger
    assert "-Xmx1536m (1.5Gi) under the memory limit 2Gi" in ledger
    assert "GOMEMLIMIT=900MiB (900Mi) is 88% of the limit" in bodies["rates"]
    for name, body in bodies.items():
        assert len(body.split("<details>", 1)[0]) < 3000, name
