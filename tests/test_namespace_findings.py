"""The findings about what a namespace declares (``bot/pipeline/namespace_findings.py``) and the
price of extended resources (``bot/report/replay.py``), each against its known answer: a quota
total at maximum replicas, PDBs that block drains, a GPU workload's raised floor and cost."""

from __future__ import annotations

import pytest

from bot.model import (
    GIB,
    ContainerRecommendation,
    DeclaredContainer,
    DeclaredHPA,
    DeclaredLimitRange,
    DeclaredPDB,
    DeclaredQuota,
    DeclaredWorkload,
    Explained,
    FieldChange,
    FieldId,
    HpaRecommendation,
    NamespaceBounds,
    Recommendation,
    ReplayComparison,
    ReplayFigures,
    ReplicaReplay,
    ResourceRecommendation,
    ResourceValues,
    WorkloadRef,
)
from bot.pipeline.namespace_findings import pdb_notes, with_namespace_findings
from bot.pipeline.plan import WorkloadOutcome
from bot.report.proposal import Prices
from bot.report.replay import cost_formula, monthly_cost

QUOTA = DeclaredQuota(
    "compute", "ns/quota.yaml:1", {FieldId.REQUESTS_CPU: 6.0, FieldId.REQUESTS_MEMORY: 8.0 * GIB}
)

QUOTA_ONLY = NamespaceBounds(quotas=(QUOTA,))


def _container_rec(name: str, cpu: tuple[float, float], memory: tuple[int, int]):
    def res(resource, pair):
        return ResourceRecommendation(
            resource,
            "vertical",
            Explained(pair[0], pair[1], "vertical.ideal", ""),
            Explained(None, None, "limits.none", ""),
        )

    return ContainerRecommendation(name, res("cpu", cpu), res("memory", memory))


def _outcome(
    name: str,
    *,
    cpu: tuple[float, float],
    memory: tuple[int, int] = (GIB, GIB),
    replicas: int | None = 2,
    hpa: tuple[tuple[int, int], tuple[int, int]] | None = None,
    bounds: NamespaceBounds = QUOTA_ONLY,
    extended: dict[str, float] | None = None,
    replay: ReplayComparison | None = None,
) -> WorkloadOutcome:
    """A workload of namespace ``shop`` whose one container moves from ``cpu[0]`` to ``cpu[1]``
    (``hpa``: (min current, min proposed), (max current, max proposed))."""
    ref = WorkloadRef("Deployment", "shop", name)
    container = DeclaredContainer("app", ResourceValues(cpu[0], memory[0]), extended=extended or {})
    declared_hpa = DeclaredHPA(name, hpa[0][0], hpa[1][0]) if hpa else None
    declared = DeclaredWorkload(
        ref, None if hpa else replicas, (container,), hpa=declared_hpa, bounds=bounds
    )
    rec_hpa = (
        HpaRecommendation(
            Explained(hpa[0][0], hpa[0][1], "tortoise.replicas.min_by_replay", ""),
            Explained(hpa[1][0], hpa[1][1], "tortoise.replicas.max_by_replay", ""),
        )
        if hpa
        else None
    )
    rec = Recommendation(
        ref,
        "changes",
        containers=(_container_rec("app", cpu, memory),),
        hpa=rec_hpa,
        replay=replay,
    )
    change = FieldChange(ref, FieldId.REQUESTS_CPU, cpu[1], cpu[0], container="app")
    return WorkloadOutcome(declared, "changes", recommendation=rec, changes=(change,))


def _notes(outcome: WorkloadOutcome, code: str) -> list[str]:
    assert outcome.recommendation is not None
    return [n.message for n in outcome.recommendation.notes if n.code == code]


def test_a_quota_total_counts_maximum_replicas_and_names_the_excess():
    # web: 1 → 1.5 cores × max 4 = 6; api: 0.5 → 0.25 cores × 2 = 0.5; total 6.5 > 6
    # now: 1 × 4 + 0.5 × 2 = 5
    web = _outcome("web", cpu=(1.0, 1.5), hpa=((2, 2), (4, 4)))
    api = _outcome("api", cpu=(0.5, 0.25))
    out = with_namespace_findings([web, api])
    expected = (
        "ResourceQuota compute (ns/quota.yaml:1) requests.cpu 6: the namespace's proposed total "
        "at maximum replicas is 6.5 (now 5), 500m over; pods beyond it are refused at creation"
    )
    assert _notes(out[0], "resource-quota") == [expected]
    assert _notes(out[1], "resource-quota") == [expected]
    # memory: 1 GiB × (4 + 2) = 6 GiB, within 8 GiB: no note for it


def test_within_the_quota_nothing_is_said_and_the_hpa_maximum_counts_as_proposed():
    web = _outcome("web", cpu=(1.0, 1.0), hpa=((2, 2), (4, 5)))  # 5 replicas × 1 = 5
    api = _outcome("api", cpu=(0.5, 0.5))  # + 1 = 6: at the quota, not over
    out = with_namespace_findings([web, api])
    assert _notes(out[0], "resource-quota") == []
    web = _outcome("web", cpu=(1.0, 1.0), hpa=((2, 2), (4, 6)))  # 6 + 1 = 7 > 6
    out = with_namespace_findings([web, api])
    assert (
        "proposed total at maximum replicas is 7 (now 5), 1 over"
        in _notes(out[0], "resource-quota")[0]
    )


def test_a_container_without_a_request_counts_the_default_request():
    limits = DeclaredLimitRange("lr (ns/lr.yaml:1)", default_request=ResourceValues(2.0, None))
    bounds = NamespaceBounds(limits, (QUOTA,))
    web = _outcome("web", cpu=(1.0, 1.5), replicas=2, bounds=bounds)  # 3
    sidecar_only = DeclaredWorkload(
        WorkloadRef("Deployment", "shop", "agent"), 2, (DeclaredContainer("agent"),), bounds=bounds
    )
    agent = WorkloadOutcome(sidecar_only, "no-change")  # 2 × default 2 = 4: total 7
    out = with_namespace_findings([web, agent])
    (note,) = _notes(out[0], "resource-quota")
    assert "is 7 (now 6), 1 over" in note


@pytest.mark.parametrize(
    ("pdb", "want"),
    [
        (DeclaredPDB("web", "pdb.yaml:1", min_available=3), "minAvailable 3 > proposed minReplicas 2: node drains will block"),
        (DeclaredPDB("web", "pdb.yaml:1", min_available=2), "minAvailable 2 = proposed minReplicas 2: no pod may be evicted at that size, node drains will block"),
        (DeclaredPDB("web", "pdb.yaml:1", min_available=1), None),
        (DeclaredPDB("web", "pdb.yaml:1", min_available="50%"), "minAvailable 50% of proposed minReplicas 2 = 1 pod must stay: 1 may be evicted at a time"),
        (DeclaredPDB("web", "pdb.yaml:1", min_available="60%"), "minAvailable 60% of proposed minReplicas 2 = 2 pods must stay: node drains will block"),
        (DeclaredPDB("web", "pdb.yaml:1", max_unavailable=0), "maxUnavailable 0: node drains will block"),
        (DeclaredPDB("web", "pdb.yaml:1", max_unavailable=1), None),
    ],
)  # fmt: skip
def test_a_pdb_against_the_proposed_min_replicas(pdb, want):
    web = _outcome("web", cpu=(1.0, 1.0), hpa=((3, 2), (6, 6)), bounds=NamespaceBounds(pdbs=(pdb,)))
    notes = [n.message for n in pdb_notes(web.declared, web.recommendation)]
    if want is None:
        assert notes == []
    else:
        assert notes == [f"PDB web (pdb.yaml:1) {want}"]


def _figures(mean_replicas: float) -> ReplayFigures:
    hours = 720.0
    replicas = ReplicaReplay(mean_replicas, mean_replicas, mean_replicas, 0.0, None, False)
    return ReplayFigures(hours * 3600, (), (), replicas, mean_replicas * hours, 0.0)


GPU = Prices(30.0, 0.0, "$", {"nvidia.com/gpu": 1500.0})


def test_extended_resources_are_priced_per_replica():
    # 2 replicas × (1 core × $30 + 2 GPUs × $1,500) = $6,060
    assert monthly_cost(_figures(2.0), GPU, {"nvidia.com/gpu": 2.0}) == pytest.approx(6060.0)
    assert monthly_cost(_figures(2.0), GPU) == pytest.approx(60.0)  # no GPUs requested
    # an unpriced resource costs nothing; a GPU price alone is a price
    assert monthly_cost(_figures(2.0), GPU, {"amd.com/gpu": 1.0}) == pytest.approx(60.0)
    only_gpu = Prices(extended={"nvidia.com/gpu": 1000.0})
    assert monthly_cost(_figures(1.5), only_gpu, {"nvidia.com/gpu": 1.0}) == pytest.approx(1500)
    replay = ReplayComparison(_figures(2.0), _figures(3.0), extended={"nvidia.com/gpu": 1.0})
    formula = cost_formula(replay, GPU, brief=True)
    assert formula is not None and "+ 1 nvidia.com/gpu per pod × replicas × $1,500.00" in formula


def test_a_raised_floor_of_a_gpu_workload_names_its_rule_and_cost():
    replay = ReplayComparison(_figures(2.0), _figures(3.0))
    inference = _outcome(
        "inference",
        cpu=(1.0, 1.0),
        hpa=((2, 3), (4, 4)),
        extended={"nvidia.com/gpu": 1.0},
        bounds=NamespaceBounds(),
        replay=replay,
    )
    (out,) = with_namespace_findings([inference], GPU)
    assert _notes(out, "extended-cost") == [
        "minReplicas 2 → 3 (tortoise.replicas.min_by_replay) adds 1 pod × 1 nvidia.com/gpu × "
        "$1,500.00 per unit-month = +$1,500.00/month at the floor"
    ]
    assert out.recommendation is not None and out.recommendation.replay is not None
    assert out.recommendation.replay.extended == {"nvidia.com/gpu": 1.0}
    # without a price: the units still go on the replay, no note
    (out,) = with_namespace_findings([inference])
    assert _notes(out, "extended-cost") == []
    assert out.recommendation is not None and out.recommendation.replay is not None
    assert out.recommendation.replay.extended == {"nvidia.com/gpu": 1.0}
