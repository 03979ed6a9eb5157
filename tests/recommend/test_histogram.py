"""VPA histograms against the upstream tests (``util/histogram_options_test.go``,
``util/histogram_test.go``, ``util/decaying_histogram_test.go``), restated as facts."""

from __future__ import annotations

import numpy as np
import pytest

from bot.recommend.errors import CheckpointError
from bot.recommend.vpa.histogram import (
    CPU_OPTIONS,
    MEMORY_OPTIONS,
    DecayingHistogram,
    Histogram,
    HistogramCheckpoint,
    exponential_options,
    linear_options,
    round_to_half_life,
)

EPS = 1e-15
"""The epsilon upstream's histogram tests use."""
DAY_S = 86400.0


def test_linear_options():
    # TestLinearHistogramOptions: Lin(5.0, 0.3): ceil(5/0.3) + 1 = 18 buckets.
    o = linear_options(5.0, 0.3, EPS)
    assert o.num_buckets == 18
    assert o.bucket_start(0) == 0.0
    assert o.bucket_start(17) == pytest.approx(5.1)
    assert o.find_buckets(np.array([-1.0, 0.0, 1.3, 100.0])).tolist() == [0, 0, 4, 17]


def test_exponential_options():
    # TestExponentialHistogramOptions: Exp(500, 40, 1.5): ceil(log_1.5(500·0.5/40 + 1)) + 1 = 6.
    o = exponential_options(500, 40, 1.5, EPS)
    assert o.num_buckets == 6
    assert o.starts.tolist() == pytest.approx([0, 40, 100, 190, 325, 527.5])
    assert o.find_buckets(np.array([-1, 39.99, 40, 100, 900])).tolist() == [0, 0, 1, 2, 5]


def test_default_vpa_layouts():
    # 0.01..1000 cores and 1e7..1e12 bytes, ratio 1.05: 176 buckets each.
    assert CPU_OPTIONS.num_buckets == 176
    assert MEMORY_OPTIONS.num_buckets == 176
    assert int(CPU_OPTIONS.find_buckets(np.array([0.5]))[0]) == 25
    assert CPU_OPTIONS.bucket_start(26) == pytest.approx(0.5111345, rel=1e-7)
    assert int(MEMORY_OPTIONS.find_buckets(np.array([524_288_000.0]))[0]) == 26
    assert CPU_OPTIONS.bucket_start(175) == pytest.approx(1021.11, rel=1e-5)


def _lin10() -> Histogram:
    return Histogram.empty(linear_options(10, 1, EPS))


def test_empty_histogram_percentiles_are_zero():
    h = _lin10()
    for p in (-0.5, 0, 0.5, 1, 1.5):
        assert h.percentile(p) == 0.0


@pytest.mark.parametrize(
    ("p", "expected"),
    [(0.0, 2), (0.1, 2), (0.2, 3), (0.3, 3), (0.4, 4), (0.5, 4), (0.6, 4)]
    + [(q, 5) for q in (0.7, 0.8, 0.9, 1.0)],
)
def test_percentiles_are_bucket_upper_edges(p, expected):
    # TestPercentiles: samples 1, 2, 3, 4 with weight = value (total 10).
    h = _lin10().add(np.array([1.0, 2, 3, 4]), np.array([1.0, 2, 3, 4]))
    assert h.percentile(p) == expected


def test_percentile_out_of_bounds():
    # TestPercentileOutOfBounds, Lin(1.0, 0.1).
    h = Histogram.empty(linear_options(1.0, 0.1, EPS))
    h = h.add(np.array([0.1, 0.2]), np.array([0.1, 0.2]))
    assert h.percentile(-0.1) == pytest.approx(0.2)
    assert h.percentile(1.1) == pytest.approx(0.3)
    h = h.add(np.array([0.0, 1.0]), np.array([0.1, 0.2]))
    assert h.percentile(-0.1) == pytest.approx(0.1)
    assert h.percentile(1.1) == pytest.approx(1.0)  # last bucket returns its start


def test_empty_after_subtracting_below_epsilon():
    # TestEmptyHistogram, Lin(1, 0.1), epsilon as upstream's test.
    eps = 1e-4
    h = Histogram.empty(linear_options(1, 0.1, eps)).add(np.array([0.1]), 2.5 * eps)
    assert not h.is_empty()
    h = h.subtract(0.1, eps)
    assert not h.is_empty()
    h = h.subtract(0.1, eps)
    assert h.is_empty()


def test_non_empty_on_epsilon_addition():
    eps = 1e-4
    h = Histogram.empty(linear_options(10, 0.1, eps)).add(np.array([9.9]), 3 * eps)
    assert not h.is_empty()
    h = h.add(np.array([0.1, 999.9]), 0.3 * eps)
    assert not h.is_empty()


def test_merge():
    # TestHistogramMerge: {1, 2} + {2, 3} == {1, 2, 2, 3}.
    o = linear_options(10, 1, EPS)
    a = Histogram.empty(o).add(np.array([1.0, 2.0]), 1.0)
    b = Histogram.empty(o).add(np.array([2.0, 3.0]), 1.0)
    both = Histogram.empty(o).add(np.array([1.0, 2.0, 2.0, 3.0]), 1.0)
    merged = a.merge(b)
    assert merged.weights.tolist() == both.weights.tolist()
    assert merged.total_weight == both.total_weight == 4.0


def test_checkpoint_save():
    h = _lin10()
    assert h.save_checkpoint().total_weight == 0
    assert dict(h.save_checkpoint().bucket_weights) == {}
    # TestHistogramSaveToCheckpoint: add(1, w 1) -> bucket 1 holds 10000.
    cp = h.add(np.array([1.0]), 1.0).save_checkpoint()
    assert (cp.total_weight, dict(cp.bucket_weights)) == (1.0, {1: 10000})
    # ...DropsRelativelySmallValues: 1/100000 × 10000 rounds to 0.
    cp = h.add(np.array([1.0, 2.0]), np.array([1.0, 100000.0])).save_checkpoint()
    assert (cp.total_weight, dict(cp.bucket_weights)) == (100001.0, {2: 10000})
    # ...ForMultipleValues.
    cp = h.add(np.array([1.0, 2.0, 3.0]), np.array([1.0, 10000.0, 50.0])).save_checkpoint()
    assert (cp.total_weight, dict(cp.bucket_weights)) == (10051.0, {1: 1, 2: 10000, 3: 50})


def test_checkpoint_load():
    # TestHistogramLoadFromCheckpoint: total 6, {0: 1, 1: 2} -> ratio 2 -> weights 2 and 4.
    h = _lin10().load_checkpoint(HistogramCheckpoint(6.0, {0: 1, 1: 2}))
    assert h.weights[:2].tolist() == [2.0, 4.0]
    assert h.total_weight == 6.0


@pytest.mark.parametrize(
    "checkpoint",
    [
        HistogramCheckpoint(1.0, {-1: 1}),
        HistogramCheckpoint(1.0, {99: 1}),
        HistogramCheckpoint(-1.0, {0: 1}),
        None,
    ],
    ids=["negative-bucket", "bucket-out-of-range", "negative-total", "nil"],
)
def test_checkpoint_load_errors(checkpoint):
    with pytest.raises(CheckpointError):
        _lin10().load_checkpoint(checkpoint)


def test_checkpoint_round_trip_keeps_boundary_values():
    # issue #7726: (1, eps) and (2, 10000·eps − eps) must survive a save/load round trip.
    eps = 1e-4
    o = linear_options(10, 1, eps)
    h = Histogram.empty(o).add(np.array([1.0, 2.0]), np.array([eps, 10000 * eps - eps]))
    loaded = Histogram.empty(o).load_checkpoint(h.save_checkpoint())
    assert not loaded.is_empty()


def test_decay_halves_weight_per_half_life():
    # A sample one half-life older weighs half: P50 of {1 @ t, 2 @ t - 1 day} with weights 1
    # and 1 (before decay) is the bucket of 1 (weight 1 vs 0.5, threshold 0.75).
    o = linear_options(10, 1, EPS)
    t = 1_700_006_400.0
    h = DecayingHistogram.empty(o, DAY_S).add(np.array([1.0, 2.0]), 1.0, np.array([t, t - DAY_S]))
    weights = h.histogram.weights
    assert weights[2] / weights[1] == pytest.approx(0.5)
    assert h.percentile(0.5) == 2.0  # bucket 1's upper edge
    assert h.percentile(0.7) == 3.0


def test_reference_is_rounded_from_go_zero_time():
    t = 1_700_006_400.0 + 3600 * 13  # 13:00 UTC rounds up to the next midnight
    assert round_to_half_life(t, DAY_S) == 1_700_006_400.0 + DAY_S
    h = DecayingHistogram.empty(linear_options(10, 1, EPS), DAY_S).add(
        np.array([1.0]), 1.0, np.array([t])
    )
    assert h.reference_s == 1_700_006_400.0 + DAY_S


def test_reference_moves_after_100_half_lives_and_percentiles_do_not_change():
    o = linear_options(10, 1, EPS)
    t0 = 1_700_006_400.0
    times = np.array([t0, t0 + 101 * 3600.0])
    values = np.array([1.0, 2.0])
    short = DecayingHistogram.empty(o, 3600.0).add(values, 1.0, times)
    assert short.reference_s == t0 + 101 * 3600.0
    # 2^-101 for the older sample: far below epsilon, the bucket counts as empty.
    assert short.percentile(0.0) == 3.0


def test_decaying_merge_and_checkpoint():
    o = linear_options(10, 1, EPS)
    t = 1_700_006_400.0
    a = DecayingHistogram.empty(o, DAY_S).add(np.array([1.0]), 1.0, np.array([t]))
    b = DecayingHistogram.empty(o, DAY_S).add(np.array([3.0]), 1.0, np.array([t + DAY_S]))
    merged = a.merge(b)
    assert merged.reference_s == max(a.reference_s, b.reference_s)
    assert merged.histogram.weights[3] / merged.histogram.weights[1] == pytest.approx(2.0)
    cp = merged.save_checkpoint()
    restored = DecayingHistogram.empty(o, DAY_S).load_checkpoint(cp)
    assert restored.reference_s == cp.reference_s
    assert restored.percentile(0.9) == merged.percentile(0.9)
    with pytest.raises(ValueError, match="half-lives"):
        a.merge(DecayingHistogram.empty(o, 3600.0))


@pytest.mark.parametrize("options", [CPU_OPTIONS, MEMORY_OPTIONS], ids=["cpu", "memory"])
def test_every_bucket_start_lands_in_its_own_bucket(options):
    # Go computes log(v(r-1)/F + 1)/log(r); at a start that is an exact integer. numpy's log
    # may be an ulp off, so this pins the boundaries (e.g. 1e7 bytes is bucket 1).
    b = np.arange(1, options.num_buckets)
    assert options.find_buckets(options.starts[1:]).tolist() == b.tolist()
    below = np.nextafter(options.starts[2:], 0)
    assert options.find_buckets(below).tolist() == (b[1:] - 1).tolist()
