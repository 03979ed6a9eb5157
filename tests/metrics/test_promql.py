"""PromQL builders, escaping, chunking, pod mapping and the configuration model (no server)."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.config.errors import ConfigError
from bot.config.load import parse_model
from bot.config.metrics import MAX_POINTS_PER_SERIES, LabelNames, PrometheusConfig
from bot.metrics.mapping import PodOwner, map_pods
from bot.metrics.promql import (
    LabelMatch,
    NamespaceQueries,
    chunks,
    pod_name_pattern,
    quote,
    regex_alternatives,
)
from bot.model import WorkloadRef

HOSTILE = ['a"b', "c\\d", "e\nf", '"} or vector(1) or x{a="', "tab\there", "ünï", "\x00\x1f"]


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_quote_round_trips_and_stays_one_literal(value):
    literal = quote(value)
    assert json.loads(literal) == value
    inner = literal[1:-1]
    assert "\n" not in literal
    assert re.search(r'(?<!\\)(?:\\\\)*"', inner) is None  # no unescaped quote inside


@given(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=5), st.text(max_size=8))
def test_regex_alternatives_match_exactly_the_values(values, other):
    pattern = re.compile(regex_alternatives(values))
    for value in values:
        assert pattern.fullmatch(value)
    if other not in values:
        assert not pattern.fullmatch(other)


@given(
    st.integers(0, 10**6),
    st.integers(1, 40 * 86_400),
    st.sampled_from([15, 30, 60, 300]),
    st.integers(10, MAX_POINTS_PER_SERIES),
)
def test_chunks_cover_the_window_aligned_and_bounded(offset, length, step, max_points):
    start = 1_767_225_600 + offset
    end = start + length
    parts = chunks(start, end, step, max_points)
    if -(-start // step) * step > end:  # no aligned evaluation time inside the window
        assert parts == []
        return
    assert parts[0][0] >= start and parts[0][0] - start < step
    assert end - parts[-1][1] < step
    for a, b in parts:
        assert a % step == 0 and b % step == 0
        assert (b - a) / step + 1 <= max_points
    for (_, b), (a, _) in itertools.pairwise(parts):
        assert a == b + step


def _queries(**config) -> NamespaceQueries:
    return NamespaceQueries(
        config=PrometheusConfig(**config),
        namespace='shop"; drop',
        selector=(("cluster", "prod"),),
        workload_names=("web", "api.v2"),
        containers=("app", "istio-proxy"),
    )


def test_queries_group_by_pod_and_container_with_escaped_values():
    q = _queries()
    cpu = q.cpu()
    assert cpu.startswith(
        "max by (namespace, pod, container) (rate(container_cpu_usage_seconds_total{"
    )
    assert 'namespace="shop\\"; drop"' in cpu
    assert 'cluster="prod"' in cpu
    assert 'pod=~"(?:api\\\\.v2|web)-.+"' in cpu
    assert 'container=~"app|istio\\\\-proxy"' in cpu
    assert cpu.endswith("[60000ms]))")
    assert "[59999ms]" in q.memory()
    oom = q.oom_reasons(["web-abc-x2b4c"])
    assert 'reason="OOMKilled"' in oom and 'resource="memory"' in oom
    assert "changes(" not in oom  # restarts are paired on the client, whatever the scrape interval
    assert 'pod=~"web\\\\-abc\\\\-x2b4c"' in oom
    assert q.cpu_raw().promql(3600).endswith("[3599999ms]")


def test_relabelled_names_and_matchers_are_used():
    q = _queries(
        labels=LabelNames(namespace="k8s_ns", pod="pod_name", cluster="env"),
        matchers=[{"label": "team", "op": "!=", "value": "x"}],
        cadvisor_matchers=[{"label": "job", "value": "kubelet"}],
        cpu_rate_window_s=300,
    )
    cpu = q.cpu()
    assert "by (k8s_ns, pod_name, container)" in cpu
    assert 'env="prod"' in cpu and 'team!="x"' in cpu and 'job="kubelet"' in cpu
    assert "[300000ms]" in cpu
    assert 'job="kubelet"' not in q.replicas("Deployment")


def test_label_match_refuses_bad_label_names():
    with pytest.raises(ValueError, match="label name"):
        LabelMatch('pod="x"', "=", "y").render()


@pytest.mark.parametrize(
    ("yaml", "key"),
    [
        ("labels:\n  pod: 'bad-name'\n", "labels.pod"),
        ("metrics:\n  cpu_usage: 'rate(x)'\n", "metrics.cpu_usage"),
        ("auth:\n  bearer_token_env: A\n  basic_username: u\n  basic_password_env: B\n", "auth"),
        ("auth:\n  basic_username: u\n", "auth"),
        ("max_points_per_query: 20000\n", "max_points_per_query"),
        ("matchers:\n  - label: job\n    op: '=='\n    value: x\n", "matchers.0.op"),
    ],
    ids=["label", "metric", "two-auths", "basic-without-password", "points", "operator"],
)
def test_config_refuses_bad_settings(yaml, key):
    with pytest.raises(ConfigError) as caught:
        parse_model(yaml, PrometheusConfig, file="bot.yaml")
    assert key in [p.key for p in caught.value.problems]


def test_pod_name_patterns_are_exclusive():
    web = pod_name_pattern("Deployment", "web")
    web_api = pod_name_pattern("Deployment", "web-api")
    db = pod_name_pattern("StatefulSet", "db")
    assert web.fullmatch("web-7d9f8b6c5-x2b4c")
    assert not web.fullmatch("web-api-7d9f8b6c5-x2b4c")
    assert web_api.fullmatch("web-api-7d9f8b6c5-x2b4c")
    assert db.fullmatch("db-0") and db.fullmatch("db-12")
    assert not db.fullmatch("db-01") and not db.fullmatch("db-7d9f8b6c5-x2b4c")


def test_daemonset_pod_pattern_is_name_and_five_characters():
    agent = pod_name_pattern("DaemonSet", "agent")
    assert agent.fullmatch("agent-x2b4c")
    assert not agent.fullmatch("agent-7d9f8b6c5-x2b4c") and not agent.fullmatch("agent-0")
    rollout = pod_name_pattern("Rollout", "web")
    assert rollout.fullmatch("web-7d9f8b6c5-x2b4c")


def test_map_pods_of_rollouts_and_daemonsets():
    """A Rollout's pods through its ReplicaSets (canary and stable), a DaemonSet's directly; a
    Deployment of the same name is not confused with the Rollout."""
    rollout = WorkloadRef("Rollout", "ns", "web")
    deployment = WorkloadRef("Deployment", "ns", "web")
    agent = WorkloadRef("DaemonSet", "ns", "agent")
    owners = {
        "web-stable-aaaaa": PodOwner("ReplicaSet", "web-stable"),
        "web-canary-bbbbb": PodOwner("ReplicaSet", "web-canary"),
        "web-dep-ccccc": PodOwner("ReplicaSet", "web-dep"),
        "agent-x2b4c": PodOwner("DaemonSet", "agent"),
        "agent-z9z9z": PodOwner("DaemonSet", "agent"),
    }
    replicasets = {
        "web-stable": PodOwner("Rollout", "web"),
        "web-canary": PodOwner("Rollout", "web"),
        "web-dep": PodOwner("Deployment", "web"),
    }
    mapping = map_pods([rollout, deployment, agent], list(owners), owners, replicasets)
    assert mapping.owned[rollout] == {"web-stable-aaaaa", "web-canary-bbbbb"}
    assert mapping.owned[deployment] == {"web-dep-ccccc"}
    assert mapping.owned[agent] == {"agent-x2b4c", "agent-z9z9z"}
    assert not mapping.by_pattern


def test_map_pods_by_owner_then_by_pattern():
    web = WorkloadRef("Deployment", "ns", "web")
    db = WorkloadRef("StatefulSet", "ns", "db")
    owners = {
        "web-abc-zzzzz": PodOwner("ReplicaSet", "web-abc"),
        "web-old-yyyyy": PodOwner("ReplicaSet", "web-bcd"),  # ReplicaSet owner unknown
        "db-0": PodOwner("StatefulSet", "db"),
        "job-x": PodOwner("Job", "job"),
        "web-silent-qqqqq": PodOwner("ReplicaSet", "web-abc"),
    }
    pods = ["web-abc-zzzzz", "web-old-yyyyy", "db-0", "db-1", "job-x", "other-1"]
    mapping = map_pods([web, db], pods, owners, {"web-abc": PodOwner("Deployment", "web")})
    assert mapping.by_pod == {
        "web-abc-zzzzz": web,
        "web-old-yyyyy": web,
        "db-0": db,
        "db-1": db,
        "web-silent-qqqqq": web,
    }
    assert mapping.by_pattern == {"db-1"}
    assert mapping.owned[web] == {"web-abc-zzzzz", "web-old-yyyyy", "web-silent-qqqqq"}
