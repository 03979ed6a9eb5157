"""What the namespace and the runtime bound (``bot/recommend/namespace.py``): a LimitRange's
``max``, ``min``, ``maxLimitRequestRatio``, default limit and ``type: Pod`` max clamp requests
and limits through the same clamp as the largest node, each named by its rule; a memory limit
keeps room for an explicit JVM heap or ``GOMEMLIMIT`` (``runtime.heap``). Known answers."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from bot.config.recommend import RecommendSettings, resolve
from bot.model import (
    GIB,
    MIB,
    DeclaredContainer,
    DeclaredLimitRange,
    DeclaredWorkload,
    NamespaceBounds,
    ResourceValues,
    RuntimeMemory,
    WorkloadRef,
)
from bot.recommend.engine import recommend
from bot.recommend.inputs import ContainerInput, pod_room
from tests.recommend.factories import NOW_S, container, container_history, history, workload

NO_GATE = resolve(RecommendSettings(), {"replay": {"gate": "off"}})
LR = DeclaredLimitRange("limits (ns/limits.yaml:1)")


def _run(app: ContainerInput, cpu: float = 2.5, mem: float = 3 * GIB, settings=NO_GATE):
    inp = workload(app, hist=history(container_history(app.name, cpu, mem)))
    return recommend(inp, settings, now_s=NOW_S).containers[0]


def _busy(limit_range: DeclaredLimitRange | None, **more) -> ContainerInput:
    """Requests 1 core and 2 GiB, using 2.5 cores and 3 GiB: the engine wants more."""
    return replace(container("app", 1.0, 2 * GIB, **more), limit_range=limit_range)


def test_limit_range_max_clamps_the_request_like_the_node():
    free = _run(_busy(None))
    assert free.cpu.request.proposed is not None and free.cpu.request.proposed > 2.0
    got = _run(_busy(replace(LR, max=ResourceValues(2.0, None)), cpu_limit=2.0))
    cpu = got.cpu.request
    assert (cpu.proposed, cpu.rule) == (2.0, "limitrange.max")
    assert "LimitRange limits (ns/limits.yaml:1) max 2" in cpu.reason
    assert cpu.inputs["limit_range_max"] == 2.0
    assert got.cpu.limit.proposed is not None and got.cpu.limit.proposed <= 2.0


@pytest.mark.parametrize(
    ("node", "range_max", "want", "rule"),
    [
        (1.5, 2.0, 1.5, "node.max_allocatable"),  # the node is smaller: it clamps
        (2.0, 1.8, 1.8, "limitrange.max"),  # the LimitRange is smaller
        (2.0, 2.0, 2.0, "node.max_allocatable"),  # a tie: the node's rule, as before
    ],
)
def test_the_lowest_ceiling_wins(node, range_max, want, rule):
    app = _busy(
        replace(LR, max=ResourceValues(range_max, None)),
        cpu_limit=range_max,
        max_allocatable=ResourceValues(node, None),
    )
    cpu = _run(app).cpu.request
    assert (cpu.proposed, cpu.rule) == (want, rule)


def test_a_container_without_a_limit_gets_the_default_limit_as_its_ceiling():
    cpu = _run(_busy(replace(LR, default_limit=ResourceValues(1.6, None)))).cpu.request
    assert (cpu.proposed, cpu.rule) == (1.6, "limitrange.default_limit")
    # with a limit of its own the default does not apply
    cpu = _run(_busy(replace(LR, default_limit=ResourceValues(1.6, None)), cpu_limit=4.0))
    assert cpu.cpu.request.rule != "limitrange.default_limit"


def test_limit_range_min_raises_a_cut_to_it():
    idle = replace(container("app", 0.5, 512 * MIB), limit_range=None)
    free = _run(idle, cpu=0.02, mem=200 * MIB)
    assert free.cpu.request.proposed is not None and free.cpu.request.proposed < 0.2
    bounded = replace(idle, limit_range=replace(LR, min=ResourceValues(0.2, 300 * MIB)))
    got = _run(bounded, cpu=0.02, mem=200 * MIB)
    assert (got.cpu.request.proposed, got.cpu.request.rule) == (0.2, "limitrange.min")
    assert got.memory.request.proposed == 300 * MIB
    assert got.memory.request.rule == "limitrange.min"


def test_max_limit_request_ratio_caps_the_limit():
    # a 1:4 limit kept by the ratio rule would be 4 × the new request; the LimitRange says 2
    app = _busy(None, cpu_limit=4.0)
    free = _run(app, cpu=0.6)
    new_request = free.cpu.request.proposed
    assert new_request is not None and free.cpu.limit.proposed is not None
    assert free.cpu.limit.proposed > 2 * new_request
    got = _run(replace(app, limit_range=replace(LR, max_ratio={"cpu": 2.0})), cpu=0.6)
    assert got.cpu.request.proposed == new_request
    assert got.cpu.limit.proposed == pytest.approx(2 * new_request)
    assert got.cpu.limit.rule == "limitrange.max_ratio"
    assert "maxLimitRequestRatio 2" in got.cpu.limit.reason


def test_pod_max_leaves_the_room_the_other_containers_limits_do_not_take():
    ref = WorkloadRef("Deployment", "shop", "frontend")
    pod_lr = replace(
        LR, pod_max=ResourceValues(3.0, 4 * GIB), default_limit=ResourceValues(0.5, None)
    )
    declared = DeclaredWorkload(
        ref,
        1,
        (
            DeclaredContainer("app", ResourceValues(1.0, GIB), ResourceValues(2.0, 2 * GIB)),
            DeclaredContainer("proxy", ResourceValues(0.1, 128 * MIB), ResourceValues(1.0, GIB)),
            DeclaredContainer("log", ResourceValues(0.1, 64 * MIB)),  # default limit 0.5, 64Mi
            DeclaredContainer("migrate", ResourceValues(4.0, 4 * GIB), init=True),  # not counted
        ),
        bounds=NamespaceBounds(pod_lr),
    )
    # 3 − (1 + 0.5) cores; 4 GiB − (1 GiB + 64 MiB: no default memory limit, its request)
    assert pod_room(declared, "app") == ResourceValues(1.5, 4 * GIB - GIB - 64 * MIB)
    app = _busy(pod_lr, cpu_limit=2.0, mem_limit=2 * GIB)
    app = replace(app, pod_room=pod_room(declared, "app"))
    got = _run(app)
    assert (got.cpu.request.proposed, got.cpu.request.rule) == (1.5, "limitrange.pod_max")
    assert got.cpu.limit.proposed == 1.5


def _java(heap: float | None, kind="max_heap", text="-Xmx900m") -> ContainerInput:
    """Requests and limits 2 GiB, using 300 MiB: the engine lowers both."""
    app = container("app", 0.5, 2 * GIB, mem_limit=2 * GIB)
    runtime = (RuntimeMemory(kind, "env JAVA_TOOL_OPTIONS", text, heap),) if kind else ()
    return replace(app, runtime=runtime)


def test_a_memory_limit_keeps_the_heap_and_its_non_heap_overhead():
    free = _run(_java(None, kind=None), cpu=0.2, mem=300 * MIB).memory.limit
    assert free.proposed is not None and free.proposed < 900 * MIB + 256 * MIB
    got = _run(_java(900.0 * MIB), cpu=0.2, mem=300 * MIB)
    limit = got.memory.limit
    assert (limit.proposed, limit.rule) == (900 * MIB + 256 * MIB, "runtime.heap")
    assert "env JAVA_TOOL_OPTIONS -Xmx900m + non-heap 256Mi" in limit.reason
    notes = [
        n.message
        for n in recommend(
            workload(_java(900.0 * MIB), hist=history(container_history("app", 0.2, 300 * MIB))),
            NO_GATE,
            now_s=NOW_S,
        ).notes
        if n.code == "runtime-memory"
    ]
    assert notes and "env JAVA_TOOL_OPTIONS: -Xmx900m (900Mi)" in notes[0]
    # the overhead is a setting
    small = resolve(NO_GATE, {"limits": {"jvm_non_heap_bytes": 100 * MIB}})
    assert (
        _run(_java(900.0 * MIB), cpu=0.2, mem=300 * MIB, settings=small).memory.limit.proposed
        == 1000 * MIB
    )


def test_gomemlimit_keeps_its_headroom():
    app = _java(900.0 * MIB, kind="gomemlimit", text="GOMEMLIMIT=900MiB")
    limit = _run(app, cpu=0.2, mem=300 * MIB).memory.limit
    assert (limit.proposed, limit.rule) == (math.ceil(900 * MIB * 1.1), "runtime.heap")


def test_max_ram_percentage_names_the_heap_at_the_proposed_limit():
    app = _java(75.0, kind="max_ram_percentage", text="-XX:MaxRAMPercentage=75")
    inp = workload(app, hist=history(container_history("app", 0.2, 300 * MIB)))
    rec = recommend(inp, NO_GATE, now_s=NOW_S)
    limit = rec.containers[0].memory.limit
    assert limit.rule != "runtime.heap" and limit.proposed is not None
    (note,) = [n for n in rec.notes if n.code == "runtime-memory"]
    assert "heap 1.5Gi at the limit 2Gi" in note.message
    from bot.recommend.units import amount

    assert f"heap {amount(limit.proposed * 0.75, 'memory')} at the proposed" in note.message


def test_a_value_from_value_from_is_unknown():
    app = _java(None, text="valueFrom")
    inp = workload(app, hist=history(container_history("app", 0.2, 300 * MIB)))
    rec = recommend(inp, NO_GATE, now_s=NOW_S)
    (note,) = [n for n in rec.notes if n.code == "runtime-memory"]
    assert "unknown" in note.message
    assert rec.containers[0].memory.limit.rule != "runtime.heap"


def test_a_missing_request_is_explained_by_the_default_request():
    app = replace(
        container("app", None, 512 * MIB),
        limit_range=replace(LR, default_request=ResourceValues(0.1, None)),
    )
    inp = workload(app, hist=history(container_history("app", 0.2, 300 * MIB)))
    rec = recommend(inp, NO_GATE, now_s=NOW_S)
    (note,) = [n for n in rec.notes if n.code == "limit-range-default"]
    assert note.container == "app"
    assert (
        "no cpu request in the manifest: LimitRange limits (ns/limits.yaml:1) gives it 100m"
        in note.message
    )
