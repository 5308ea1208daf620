"""Prices a run's usage over any set of time bins, from ``economics``' pure functions.

One function per option kind returns cost line items per bin; the hourly cumulative curve, the
monthly table and the totals all come from it, so they agree by construction.
"""

from __future__ import annotations

import numpy as np

from costsim import economics as eco
from costsim.catalog import CloudPlan, EconomicsValues, OwnedPlan
from costsim.engine import UsageRecord
from costsim.intervals import binned
from costsim.units import SECONDS_PER_HOUR

OWNED_ITEMS = ("capital", "energy", "facility", "maintenance", "staff", "setup")
CLOUD_ITEMS = ("reserved", "cloud", "serving")
ALL_ITEMS = OWNED_ITEMS + CLOUD_ITEMS


def held_intervals(rec: UsageRecord, horizon_h: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every allocation that began within the horizon: its job, [start, end) clipped to the
    horizon, and its row in the record's allocation arrays."""
    k = np.flatnonzero(rec.alloc_start < horizon_h)
    return rec.alloc_job[k], rec.alloc_start[k], np.minimum(rec.alloc_end[k], horizon_h), k


def owned_costs(
    plan: OwnedPlan,
    econ: EconomicsValues,
    rec: UsageRecord,
    job_gpus: np.ndarray,
    horizon_h: float,
    edges: np.ndarray,
    serving_gpu_h: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Owned line items (USD) per bin: capital, facility, maintenance and staff accrue per hour in
    service (from delivery); energy per hour in service plus per busy GPU-hour (RL jobs and, given
    per bin, serving); setup at the start."""
    delivered = min(plan.lead_time_h, horizon_h)
    service_h = binned(np.array([delivered]), np.array([horizon_h]), np.array([1.0]), edges)
    job, s, e, _ = held_intervals(rec, horizon_h)
    busy_gpu_h = binned(s, e, job_gpus[job].astype(float), edges)
    if serving_gpu_h is not None:
        busy_gpu_h = busy_gpu_h + serving_gpu_h
    gpu = plan.gpu
    annual = eco.annual_capital_cost_usd(
        plan.capex_usd, econ.residual_value_frac, econ.depreciation_years, econ.cost_of_capital
    )
    kwh = eco.it_energy_kwh(plan.nodes, gpu.node_idle_kw, gpu.node_max_kw, plan.gpus_per_node, service_h, busy_gpu_h)
    setup = np.zeros(len(edges) - 1)
    if len(setup):
        setup[0] = econ.setup_usd
    return {
        "capital": annual * service_h / 8760.0,
        "energy": eco.energy_cost_usd(kwh, econ.pue, econ.electricity_usd_per_kwh),
        "facility": eco.facility_cost_usd(plan.nodes, gpu.node_max_kw, econ.colo_usd_per_kw_month, service_h),
        "maintenance": eco.maintenance_cost_usd(plan.capex_usd, econ.maintenance_frac_per_year, service_h),
        "staff": eco.staff_cost_usd(plan.gpus, econ.gpus_per_fte, econ.staff_usd_per_fte_year, service_h),
        "setup": setup,
    }


def cloud_bills(plan: CloudPlan, rec: UsageRecord, horizon_h: float) -> tuple[np.ndarray, np.ndarray]:
    """Per allocation: its job and its bill (USD), cut at the horizon. Each allocation (a job holds
    instances again after a preemption) is billed on its own, with its own rounding and minimum."""
    job, s, e, k = held_intervals(rec, horizon_h)
    billed = eco.billed_seconds((e - s) * SECONDS_PER_HOUR, plan.billing_granularity_s, plan.minimum_billing_s)
    return job, eco.cloud_cost_usd(billed, rec.alloc_instances[k], plan.gpus_per_instance, plan.price_per_gpu_hour)


def reserved_costs(plan: CloudPlan, horizon_h: float, edges: np.ndarray) -> dict[str, np.ndarray]:
    """A commitment: reserved GPUs × price for every hour of the horizon, used or not."""
    hours = binned(np.array([0.0]), np.array([horizon_h]), np.array([1.0]), edges)
    return {"reserved": hours * plan.reserved_gpus * plan.price_per_gpu_hour}


def cloud_costs(plan: CloudPlan, rec: UsageRecord, horizon_h: float, edges: np.ndarray) -> dict[str, np.ndarray]:
    """Cloud bill per bin: rented GPU-hours × price as they are held, and each allocation's
    rounding (billing increment, minimum) in the bin where it is released."""
    _, s, e, k = held_intervals(rec, horizon_h)
    gpus = (rec.alloc_instances[k] * plan.gpus_per_instance).astype(float)
    per_bin = binned(s, e, gpus, edges) * plan.price_per_gpu_hour
    _, bill = cloud_bills(plan, rec, horizon_h)
    rounding = bill - (e - s) * gpus * plan.price_per_gpu_hour
    where = np.clip(np.searchsorted(edges, e, side="left") - 1, 0, len(edges) - 2)
    per_bin += np.bincount(where, weights=rounding, minlength=len(edges) - 1)
    return {"cloud": per_bin}
