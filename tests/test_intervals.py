"""Interval integrals (time series, monthly costs) against a brute-force sum over intervals."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from costsim.intervals import binned, cumulative, level_at


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


@given(intervals, st.floats(0, 90))
def test_level_matches_brute_force(items, t):
    s = np.array([a for a, _, _ in items], dtype=float)
    e = np.array([a + d for a, d, _ in items], dtype=float)
    w = np.array([x for _, _, x in items], dtype=float)
    expect = sum(x for a, b, x in zip(s, e, w, strict=True) if a <= t < b)
    assert level_at(s, e, w, np.array([t]))[0] == expect


def test_cumulative_of_one_interval():
    # 4 GPUs held from 2 h to 5 h: 0 by 2 h, 4 GPU-h by 3 h, 12 GPU-h from 5 h on.
    c = cumulative(np.array([2.0]), np.array([5.0]), np.array([4.0]), np.array([0, 2, 3, 5, 9.0]))
    assert c.tolist() == [0, 0, 4, 12, 12]
