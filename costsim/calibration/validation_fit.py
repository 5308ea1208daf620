"""How the decode constants were fitted, once, to the validation rows together (DESIGN.md section
13): a grid per rollout engine, each point scored by its worst row, never a constant per row.

- SGLang's (η_mem, t_floor), ``rl.sglang_*``, against the AReaL rows (AReaL generates with SGLang)
  and the rollout-share rows: ``calibrate``.
- vLLM's (η_mem, t_floor), ``rl.hbm_efficiency`` and ``rl.decode_step_floor_s``, against every
  carried NeMo RL and verl row (both generate with vLLM): ``calibrate_vllm``.

``python -m costsim.calibration.validation --calibrate`` prints both grids' best beside the
catalog's score; nothing here edits the catalog.
"""

from __future__ import annotations

import dataclasses
import math

from costsim.calibration import validation_gaps as gaps
from costsim.calibration import validation_rows as vr
from costsim.calibration import validation_v3 as v3
from costsim.catalog.load import Catalog, default_catalog
from costsim.models import rl

ETA_GRID = tuple(round(0.40 + 0.05 * k, 2) for k in range(8))  # SGLang: 0.40 … 0.75
FLOOR_GRID_S = tuple(k / 1000 for k in range(4, 15))  # SGLang: 4 … 14 ms
VLLM_ETA_GRID = tuple(round(0.30 + 0.05 * k, 2) for k in range(5))  # vLLM: 0.30 … 0.50
VLLM_FLOOR_GRID_S = (0.008, 0.010, 0.012, 0.014)  # vLLM: 8 … 14 ms
Grid = dict[tuple[float, float], float]


def row_distance(row: vr.Row) -> float:
    """How far a row is from its published figure in log terms: |log(simulated / published)|
    for a point, the distance to the nearer end of the band for a band (0 inside)."""
    if row.score == "band":
        if row.low <= row.simulated <= row.high:
            return 0.0
        return min(abs(math.log(row.simulated / row.low)), abs(math.log(row.simulated / row.high)))
    assert row.published
    return abs(math.log(row.simulated / row.published))


def score(table: list[vr.Row]) -> float:
    """The largest distance over the rows calibration weighs (``Row.score`` set)."""
    return max(row_distance(r) for r in table if r.score)


def with_engine(hw: rl.Hardware, engine: str, mem_efficiency: float, step_floor_s: float) -> rl.Hardware:
    """``hw`` with one engine's decode constants replaced (vLLM's are also the hardware's own)."""
    hw = dataclasses.replace(hw, engines={**hw.engines, engine: (mem_efficiency, step_floor_s)})
    return dataclasses.replace(hw, mem_efficiency=mem_efficiency, step_floor_s=step_floor_s) if engine == "vllm" else hw


def rl_score(mem_efficiency: float, step_floor_s: float, catalog: Catalog | None = None) -> float:
    """``score`` of the AReaL and rollout-share rows with these two SGLang constants in place of the
    catalog's (the AReaL rows generate with SGLang)."""
    cat = catalog or default_catalog()
    hw8 = with_engine(vr.h800(cat), "sglang", mem_efficiency, step_floor_s)
    hw1 = with_engine(vr.gpu_hardware(cat.gpus["H100"], catalog=cat), "sglang", mem_efficiency, step_floor_s)
    return score(vr.rl_rows(hw8, hw1, plateau=False))


def vllm_score(mem_efficiency: float, step_floor_s: float, catalog: Catalog | None = None) -> float:
    """The worst |log(simulated ÷ published)| over the carried NeMo RL and verl rows (they generate
    with vLLM) with these two vLLM constants in place of the catalog's."""
    cat = catalog or default_catalog()
    h100, h20 = (with_engine(vr.gpu_hardware(cat.gpus[g], catalog=cat), "vllm", mem_efficiency, step_floor_s)
                 for g in ("H100", "H20"))
    table = [r for r in v3.nemo_rows(h100, vr.Row) + v3.verl_rows(h20, vr.Row) if r.key not in gaps.NOT_CARRIED]
    return max(abs(math.log(r.simulated / r.published)) for r in table)


def calibrate(catalog: Catalog | None = None) -> tuple[tuple[float, float], float, Grid]:
    """SGLang's grid over ``ETA_GRID`` × ``FLOOR_GRID_S``: ((η, t_floor) with the smallest
    ``rl_score``, that score, every grid point's score)."""
    grid = {(eta, floor): rl_score(eta, floor, catalog) for eta in ETA_GRID for floor in FLOOR_GRID_S}
    best = min(grid, key=grid.__getitem__)
    return best, grid[best], grid


def calibrate_vllm(catalog: Catalog | None = None) -> tuple[tuple[float, float], float, Grid]:
    """vLLM's grid over ``VLLM_ETA_GRID`` × ``VLLM_FLOOR_GRID_S``, scored by ``vllm_score``."""
    grid = {(eta, floor): vllm_score(eta, floor, catalog) for eta in VLLM_ETA_GRID for floor in VLLM_FLOOR_GRID_S}
    best = min(grid, key=grid.__getitem__)
    return best, grid[best], grid
