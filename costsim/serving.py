"""Serving load (DESIGN.md section 5): inference GPUs over time, a daily swing around a growing base.

Demand is a step function of whole GPUs, constant within each hour h:
``D_h = ceil(base · (1 + growth · t/8760) · (1 + amplitude · sin(2π t / 24)))`` at the middle of the
hour, t = h + 0.5. ``RangeMax`` answers "most GPUs serving needs over [t0, t1)" in O(1), which is
what RL admission on owned and reserved capacity asks before every start.
"""

from __future__ import annotations

import numpy as np

from costsim.units import HOURS_PER_DAY, HOURS_PER_YEAR


def hourly_demand(base_gpus: float, diurnal_amplitude: float, growth_per_year: float, hours: int) -> np.ndarray:
    """Whole GPUs serving asks for in each hour [h, h + 1), h = 0 .. hours − 1."""
    t = np.arange(hours) + 0.5
    level = base_gpus * (1 + growth_per_year * t / HOURS_PER_YEAR) * (1 + diurnal_amplitude * np.sin(2 * np.pi * t / HOURS_PER_DAY))
    return np.ceil(np.maximum(level, 0.0) - 1e-9).astype(np.int64)


class RangeMax:
    """Sparse table over hourly demand: the maximum over the hours an interval touches."""

    def __init__(self, demand: np.ndarray):
        self.demand = np.asarray(demand, dtype=np.int64)
        levels = [self.demand]
        width = 1
        while 2 * width <= len(self.demand):
            prev = levels[-1]
            levels.append(np.maximum(prev[:-width], prev[width:]))
            width *= 2
        self.levels = [lv.tolist() for lv in levels]

    def peak(self, t0: float, t1: float) -> int:
        """Most GPUs demanded in any hour overlapping [t0, t1) (hours past the table: its last hour)."""
        n = len(self.demand)
        a = min(int(t0), n - 1)
        b = min(max(int(np.ceil(t1)) - 1, a), n - 1)
        k = (b - a + 1).bit_length() - 1
        row = self.levels[k]
        return max(row[a], row[b - (1 << k) + 1])
