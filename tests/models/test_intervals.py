"""Interval integrals (time series, monthly costs) against a brute-force sum over intervals."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from costsim.models.intervals import binned


def brute_binned(s, e, w, edges):
    out = np.zeros(len(edges) - 1)
    for a, b, x in zip(s, e, w, strict=True):
        for k in range(len(edges) - 1):
            lo, hi = max(a, edges[k]), min(b, edges[k + 1])
            out[k] += x * max(0.0, hi - lo)
    return out


intervals = st.lists(
    st.tuples(st.floats(0, 50), st.floats(0, 30), st.integers(1, 16)), min_size=0, max_size=40
)


@given(intervals)
def test_binned_matches_brute_force(items):
    s = np.array([a for a, _, _ in items], dtype=float)
    e = np.array([a + d for a, d, _ in items], dtype=float)
    w = np.array([x for _, _, x in items], dtype=float)
    edges = np.array([0, 1, 2.5, 7, 20, 33.3, 90.0])
    np.testing.assert_allclose(binned(s, e, w, edges), brute_binned(s, e, w, edges), atol=1e-9)


def test_one_interval_by_hand():
    # 4 GPUs held from 2.5 h to 5 h over hourly bins: half of bin 2, all of bins 3 and 4.
    out = binned(np.array([2.5]), np.array([5.0]), np.array([4.0]), np.arange(0, 8.0))
    assert out.tolist() == [0, 0, 2, 4, 4, 0, 0]


def test_full_bins_are_exact():
    # 512 one-GPU intervals covering an hour with ragged ends sum to exactly 512 in that hour.
    rng = np.random.default_rng(0)
    s = rng.uniform(0, 100, 512)
    e = 101 + rng.uniform(0, 8000, 512)
    assert binned(s, e, np.ones(512), np.array([100.0, 101.0]))[0] == 512.0
