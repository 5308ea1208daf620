"""Integrals of interval sets over time bins, computed once at the end of a run with numpy.

A set of intervals [start_i, end_i) with weights w_i defines a step function
L(t) = Σ w_i · 1[start_i ≤ t < end_i] (for example held GPUs). Time series and monthly costs
are its integrals over bins. Bins an interval covers whole are summed with a difference array
(exact for integer weights); the two partial bins at its ends are added directly, so the
result is exact to rounding: an hour with every GPU held shows exactly the capacity.
"""

from __future__ import annotations

import numpy as np


def binned(starts: np.ndarray, ends: np.ndarray, weights: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """∫ L over each bin [edges[k], edges[k+1]): the weighted time spent in each bin."""
    edges = np.asarray(edges, dtype=float)
    nb = len(edges) - 1
    s = np.clip(np.asarray(starts, dtype=float), edges[0], edges[-1])
    e = np.clip(np.asarray(ends, dtype=float), edges[0], edges[-1])
    w = np.broadcast_to(np.asarray(weights, dtype=float), s.shape)
    keep = e > s
    s, e, w = s[keep], e[keep], w[keep]
    ks = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, nb - 1)  # bin holding the start
    ke = np.clip(np.searchsorted(edges, e, side="left") - 1, 0, nb - 1)  # bin holding the end
    one = ks == ke
    out = np.zeros(nb)
    out += np.bincount(ks[one], weights=w[one] * (e[one] - s[one]), minlength=nb)
    ks, ke, s, e, w = ks[~one], ke[~one], s[~one], e[~one], w[~one]
    out += np.bincount(ks, weights=w * (edges[ks + 1] - s), minlength=nb)
    out += np.bincount(ke, weights=w * (e - edges[ke]), minlength=nb)
    level = np.zeros(nb + 1)
    np.add.at(level, ks + 1, w)
    np.add.at(level, ke, -w)
    out += np.cumsum(level)[:nb] * np.diff(edges)
    return out


def hours_in_bins(start_h: float, end_h: float, edges: np.ndarray) -> np.ndarray:
    """Hours of the one interval [start_h, end_h) that fall in each bin (a service period, a term)."""
    return binned(np.array([start_h]), np.array([end_h]), np.array([1.0]), edges)
