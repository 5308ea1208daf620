"""Series thinned to what a screen can show, keeping what the eye needs: the highest and the lowest
value in every pixel column's worth of x, and every gap; a cumulative share, every step of its
value instead.

A figure is about 1,500 px wide, so a line of more points than that draws several per pixel column
and only their extremes are seen: a year of hourly points per option is 8,760 × options, and
the browser's time to draw and hover grows with them. Only plotted series are thinned, never a
number in a table or a metric.
"""

from __future__ import annotations

import numpy as np

SCREEN_POINTS = 2000  # the most points a series keeps: about 3 per 2 px of a figure 1,500 px wide


def envelope(x, y, max_points: int = SCREEN_POINTS) -> np.ndarray:
    """Indices (ascending) of the points of a series to draw: every point when there are at most
    ``max_points``; else the x range is cut into ``max_points // 3`` buckets of equal width, and of
    each bucket the point with the lowest y, the one with the highest y and its first missing y
    (NaN: where the line has a gap) are kept, with the first and the last point of the series. So
    each bucket's minimum and maximum are drawn, a gap stays a gap, and at most ``max_points``
    points are kept.

    ``x``: numbers in ascending order (days, hours, hours of delay); ``y``: numbers, NaN where
    there is no value; same length."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    n = len(xs)
    if len(ys) != n:
        raise ValueError(f"envelope(): x has {n} points and y {len(ys)}")
    if max_points < 5:
        raise ValueError(f"envelope(): max_points must be at least 5 (got {max_points})")
    if n <= max_points:
        return np.arange(n)
    buckets = (max_points - 2) // 3  # three points each at most, and the ends
    span = xs[-1] - xs[0]
    if not span > 0:
        bucket = np.zeros(n, dtype=np.int64)
    else:
        bucket = np.minimum(((xs - xs[0]) / span * buckets).astype(np.int64), buckets - 1)
    missing = np.isnan(ys)
    # lexsort orders by bucket, then by value; the buckets are already in order (x ascends), so a
    # bucket's first index in either order is where it starts in the series too
    starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
    lowest = np.lexsort((np.where(missing, np.inf, ys), bucket))[starts]
    highest = np.lexsort((np.where(missing, np.inf, -ys), bucket))[starts]
    gaps = np.flatnonzero(missing)
    first_gaps = gaps[np.r_[True, bucket[gaps][1:] != bucket[gaps][:-1]]] if len(gaps) else gaps
    keep = np.concatenate([[0, n - 1], lowest[~missing[lowest]], highest[~missing[highest]], first_gaps])
    return np.unique(keep)


def steps(y, max_points: int = SCREEN_POINTS) -> np.ndarray:
    """Indices (ascending) of the points of a non-decreasing series drawn as steps (a cumulative
    share: the queue-delay distribution) to keep: every point when there are at most
    ``max_points``; else the first point at or above each of ``max_points - 2`` evenly spaced
    levels from its first to its last value, and both ends. Held flat to the next point kept, the
    curve is then within one level's spacing of the whole series at every x, however the points
    crowd along x (a long tail of delays would leave cutting x into equal buckets blind where most
    jobs are)."""
    ys = np.asarray(y, dtype=float)
    n = len(ys)
    if max_points < 5:
        raise ValueError(f"steps(): max_points must be at least 5 (got {max_points})")
    if n <= max_points:
        return np.arange(n)
    levels = np.linspace(ys[0], ys[-1], max_points - 2)
    at = np.minimum(np.searchsorted(ys, levels, side="left"), n - 1)
    return np.unique(np.concatenate([[0, n - 1], at]))


def thinned(at: np.ndarray, *columns) -> list:
    """Each of ``columns`` (a list, an array, a pandas Series, or None) at the indices ``at``, as
    numpy arrays (rows of a 2-D one; None stays None)."""
    return [None if col is None else np.asarray(col)[at] for col in columns]


def on_screen(x, y, *more, max_points: int = SCREEN_POINTS) -> list:
    """``[x, y, *more]`` thinned together to the points ``envelope(x, y, max_points)`` keeps, as
    numpy arrays (None stays None): a line's points with the hover data that goes with each."""
    return thinned(envelope(x, y, max_points), x, y, *more)


__all__ = ["SCREEN_POINTS", "envelope", "on_screen", "steps", "thinned"]
