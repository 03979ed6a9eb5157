"""The matrix fast path decodes real Prometheus answers exactly as the full JSON parse does."""

from __future__ import annotations

import json

import numpy as np
import pytest
import requests

from bot.metrics.decode import decode_matrix

pytestmark = pytest.mark.prometheus


def _answer(prom, cluster, raw: bool) -> bytes:
    end = float(cluster.t_s[-1])
    if raw:
        path, form = (
            "/api/v1/query",
            {"query": "container_memory_working_set_bytes[2h]", "time": end},
        )
    else:
        form = {
            "query": "rate(container_cpu_usage_seconds_total[60s])",
            "start": end - 7200,
            "end": end,
            "step": 60,
        }
        path = "/api/v1/query_range"
    response = requests.post(prom.url + path, data=form, timeout=30)
    response.raise_for_status()
    return response.content


def _slow(content: bytes):
    payload = json.loads(content)
    return [
        (
            item["metric"],
            np.array([float(v[0]) for v in item["values"]]),
            np.array([float(v[1]) for v in item["values"]]),
        )
        for item in payload["data"]["result"]
    ], tuple(payload.get("warnings", ()))


@pytest.mark.parametrize("raw", [True, False], ids=["raw-samples", "range-query"])
def test_fast_path_equals_full_parse(sim_prometheus, sim_cluster, raw):
    content = _answer(sim_prometheus, sim_cluster, raw)
    fast = decode_matrix(content)
    assert fast is not None
    slow, warnings = _slow(content)
    assert len(fast.series) == len(slow) > 5
    assert fast.warnings == warnings == ()
    for (labels_a, t_a, v_a), (labels_b, t_b, v_b) in zip(fast.series, slow, strict=True):
        assert labels_a == labels_b
        np.testing.assert_array_equal(t_a, t_b)
        np.testing.assert_array_equal(v_a, v_b)


def test_warnings_and_special_values():
    content = (
        b'{"status":"success","data":{"resultType":"matrix","result":['
        b'{"metric":{"pod":"a\\"]]}b"},"values":[[1.5,"NaN"],[2,"+Inf"],[3,"-Inf"],[4,"1e-05"]]}'
        b']},"warnings":["partial response"]}'
    )
    decoded = decode_matrix(content)
    assert decoded is not None
    assert decoded.warnings == ("partial response",)
    labels, t, v = decoded.series[0]
    assert labels == {"pod": 'a"]]}b'}
    np.testing.assert_array_equal(t, [1.5, 2, 3, 4])
    assert np.isnan(v[0]) and v[1] == np.inf and v[2] == -np.inf and v[3] == 1e-05


@pytest.mark.parametrize(
    "content",
    [
        b'{"status":"error","errorType":"bad_data","error":"x"}',
        b'{"status":"success","data":{"resultType":"vector","result":[]}}',
        b'{"status": "success", "data": {"resultType": "matrix", "result": []}}',
        b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x"]]}]}}',
        b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1]]}]}}',
        b'{"status":"success","data":{"resultType":"matrix","result":[]},"other":1}',
    ],
    ids=["error", "vector", "spaces", "bad-number", "odd-count", "unknown-key"],
)
def test_other_shapes_fall_back(content):
    assert decode_matrix(content) is None


def test_empty_matrix():
    decoded = decode_matrix(b'{"status":"success","data":{"resultType":"matrix","result":[]}}')
    assert decoded is not None and decoded.series == [] and decoded.warnings == ()
