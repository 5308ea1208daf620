"""Integrals of interval sets over time bins, in O((n + bins) log n) with numpy.

A set of intervals [start_i, end_i) with weights w_i defines a step function
L(t) = Σ w_i · 1[start_i ≤ t < end_i] (for example busy GPUs). Time series and monthly costs are
its integrals over bins, computed once at the end of a run, never inside the event loop.
"""

from __future__ import annotations

import numpy as np


def _ramp_sum(points: np.ndarray, weights: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Σ_i w_i · max(0, t − p_i) for each t."""
    order = np.argsort(points, kind="stable")
    p = points[order]
    w = weights[order]
    cw = np.concatenate(([0.0], np.cumsum(w)))
    cwp = np.concatenate(([0.0], np.cumsum(w * p)))
    k = np.searchsorted(p, t, side="right")
    return t * cw[k] - cwp[k]


def cumulative(starts: np.ndarray, ends: np.ndarray, weights: np.ndarray, t: np.ndarray) -> np.ndarray:
    """∫_0^t L(s) ds at each time t (intervals assumed to start at or after 0)."""
    starts = np.asarray(starts, dtype=float)
    ends = np.asarray(ends, dtype=float)
    weights = np.asarray(weights, dtype=float)
    t = np.asarray(t, dtype=float)
    if starts.size == 0:
        return np.zeros_like(t)
    return _ramp_sum(starts, weights, t) - _ramp_sum(ends, weights, t)


def binned(starts: np.ndarray, ends: np.ndarray, weights: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """∫ L over each bin [edges[k], edges[k+1]): the weighted time spent in each bin."""
    return np.diff(cumulative(starts, ends, weights, edges))


def _weight_upto(points: np.ndarray, weights: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Σ_i w_i · 1[p_i ≤ t] for each t."""
    order = np.argsort(points, kind="stable")
    cw = np.concatenate(([0.0], np.cumsum(weights[order])))
    return cw[np.searchsorted(points[order], t, side="right")]


def level_at(starts: np.ndarray, ends: np.ndarray, weights: np.ndarray, t: np.ndarray) -> np.ndarray:
    """L(t) at each time t: a sample of the step function."""
    s = np.asarray(starts, dtype=float)
    e = np.asarray(ends, dtype=float)
    w = np.asarray(weights, dtype=float)
    t = np.asarray(t, dtype=float)
    return _weight_upto(s, w, t) - _weight_upto(e, w, t)
