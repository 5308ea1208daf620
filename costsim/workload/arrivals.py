"""Arrivals drawn in sequence, so that variants of a scenario are paired job for job.

A class's arrivals are a unit-rate Poisson process carried onto its rate by the time change
t = Λ⁻¹(S): S₁ < S₂ < … are cumulative Exp(1) gaps and Λ(t) is the integral of the class's rate
from the start of its arrivals (a Poisson process of rate λ(t) is exactly a unit-rate process in
the clock Λ). What that buys:

- **horizon**: the points are drawn in order, in blocks of a fixed size (``ARRIVAL_BLOCK`` gaps,
  then as many uniforms), until they pass Λ(horizon). A longer horizon draws more blocks after the
  same ones, so every earlier arrival is where it was, bit for bit;
- **arrival scale s**: layers j = 0, 1, …, ⌈s⌉ − 1, each an independent process at the base rate
  from its own stream (``arrivals``, class, j). Point k of layer j carries a uniform u from the same
  block and is kept when u < s − j: always in the ⌊s⌋ whole layers, with probability s − ⌊s⌋ in the
  last. The superposition is Poisson at s·λ(t), and whatever s1 < s2 keeps, s2 keeps too, at the
  same time (a layer s1 uses is used by s2, and u < s1 − j implies u < s2 − j);
- **job shapes**: job k of layer j takes value k of its layer's draws (``layer_draws``: per layer
  one stream, drawn in fixed-size blocks), so its shape depends neither on the horizon nor on the
  scale, nor on how many jobs come before it. Per-iteration draws (response lengths) are indexed
  the same way by the layer's iteration number (``iteration_rows``).

Drawing the shapes of the candidates a partial layer thins out is the price of that pairing: it
never costs more than the whole layer would.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from costsim.workload.rng import stream

ARRIVAL_BLOCK = 4096
"""Points (gaps and their uniforms) drawn at a time: a fixed size, so point k never depends on how many are drawn."""
SHAPE_BLOCK = 1024
"""Jobs whose shapes are drawn at a time."""
ITERATION_BLOCK = 8192
"""Iterations whose response lengths are drawn at a time."""

Draw = Callable[[np.random.Generator, int], tuple[np.ndarray, ...]]
"""``draw(rng, n)``: n values of each of a tuple of arrays (one entry per job or iteration)."""


def unit_process(rng: np.random.Generator, total: float) -> tuple[np.ndarray, np.ndarray]:
    """The points S₁ < S₂ < … < ``total`` of a unit-rate Poisson process and a U[0, 1) mark per
    point, drawn in blocks of ``ARRIVAL_BLOCK`` (gaps, then marks): the first points are the same
    for any larger ``total``."""
    points, marks, last = [], [], 0.0
    while last < total:
        s = last + np.cumsum(rng.standard_exponential(ARRIVAL_BLOCK))
        points.append(s)
        marks.append(rng.random(ARRIVAL_BLOCK))
        last = float(s[-1])
    if not points:
        return np.zeros(0), np.zeros(0)
    s, u = np.concatenate(points), np.concatenate(marks)
    n = int(np.searchsorted(s, total, side="left"))
    return s[:n], u[:n]


@dataclass(frozen=True)
class Arrivals:
    """A class's kept arrivals, sorted by time (ties: lower layer first): each one's time (h), its
    layer and its index among its layer's points (the job's identity: stable across horizons and
    scales)."""

    submit_h: np.ndarray
    layer: np.ndarray  # int64
    index: np.ndarray  # int64
    layers: int  # layers drawn: ⌈scale⌉

    def __len__(self) -> int:
        return len(self.submit_h)

    def head(self, n: int | None) -> Arrivals:
        """The first ``n`` arrivals (all when None): a class's ``count`` cap."""
        if n is None or n >= len(self):
            return self
        return Arrivals(self.submit_h[:n], self.layer[:n], self.index[:n], self.layers)

    def sizes(self) -> list[int]:
        """Per layer, how many of its first points the kept jobs reach (largest index + 1; 0 if none)."""
        top = np.full(self.layers, -1, dtype=np.int64)
        np.maximum.at(top, self.layer, self.index)
        return [int(k) + 1 for k in top]

    def ids(self, name: str) -> np.ndarray:
        """Job ids: ``<name>-<index>`` (index zero-padded to 5 digits) in layer 0, ``<name>-<index>~<layer>``
        in the layers an arrival scale above 1 adds (``COPY_MARK``'s form, reserved then)."""
        return np.array([f"{name}-{k:05d}" if j == 0 else f"{name}-{k:05d}~{j}"
                         for j, k in zip(self.layer.tolist(), self.index.tolist(), strict=True)], dtype=object)


def layered_arrivals(seed: int, name: str, scale: float, total: float,
                     to_time: Callable[[np.ndarray], np.ndarray], end_h: float) -> Arrivals:
    """The arrivals before ``end_h`` of class ``name`` at arrival scale ``scale`` (> 0): layers of
    unit-rate points up to ``total`` = Λ(end_h), each carried to hours by ``to_time`` = Λ⁻¹ plus the
    start (vectorised, non-decreasing), kept by their marks as the module says."""
    times, layers, index = [], [], []
    count = max(math.ceil(scale), 1)
    for j in range(count):
        s, u = unit_process(stream(seed, "arrivals", name, j), total)
        t = np.asarray(to_time(s), dtype=float)
        k = np.flatnonzero((u < scale - j) & (t < end_h))
        times.append(t[k])
        layers.append(np.full(len(k), j, dtype=np.int64))
        index.append(k.astype(np.int64))
    t, layer, k = np.concatenate(times), np.concatenate(layers), np.concatenate(index)
    order = np.argsort(t, kind="stable")
    return Arrivals(t[order], layer[order], k[order], count)


def in_blocks(rng: np.random.Generator, draw: Draw, n: int, size: int) -> tuple[np.ndarray, ...]:
    """The first ``n`` values of ``draw(rng, size)`` called again and again: value i is the same
    for every ``n`` (a fixed call size; a generator's output for one size need not be a prefix of
    its output for a larger one)."""
    if n <= 0:
        return tuple(a[:0] for a in draw(rng, 0))
    parts = [draw(rng, size) for _ in range(-(-n // size))]
    return tuple(np.concatenate(column)[:n] for column in zip(*parts, strict=True))


def layer_draws(arrivals: Arrivals, seed: int, kind: str, name: str, draw: Draw,
                size: int = SHAPE_BLOCK) -> list[tuple[np.ndarray, ...]]:
    """Per layer, the values of its first ``arrivals.sizes()`` points, from stream (``kind``,
    ``name``, layer) in blocks of ``size``."""
    return [in_blocks(stream(seed, kind, name, j), draw, n, size) for j, n in enumerate(arrivals.sizes())]


def per_job(arrivals: Arrivals, per_layer: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """The kept jobs' values (in ``arrivals``' order) from ``layer_draws``' per-layer values."""
    sizes = [len(values[0]) for values in per_layer]
    offset = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    at = offset[arrivals.layer] + arrivals.index
    return tuple(np.concatenate(column)[at] for column in zip(*per_layer, strict=True))


def iteration_rows(arrivals: Arrivals, iterations: list[np.ndarray]) -> tuple[np.ndarray, list[int]]:
    """Which per-iteration draws the kept jobs take. ``iterations``: per layer, the iteration counts
    of its points (``layer_draws``). Layer j's iterations are numbered in point order over all of
    its points, kept or not, so job k's rows never depend on which other jobs are kept. Returns
    the rows into the layers' draws concatenated (the kept jobs' iterations, job after job in
    ``arrivals``' order) and how many iterations to draw per layer."""
    needed = [int(its.sum()) for its in iterations]
    base = np.cumsum([0, *needed[:-1]], dtype=np.int64)  # layer j's first row in the draws concatenated
    start, n = per_job(arrivals, [(base[j] + np.cumsum(its) - its, its) for j, its in enumerate(iterations)])
    rows = np.repeat(start - (np.cumsum(n) - n), n) + np.arange(int(n.sum()), dtype=np.int64)
    return rows, needed
