"""What an owned pool of node groups (``costsim.plan.groups``) costs, line by line.

Each group is priced as the owned cluster it is, on the usage it carried (the record's part is a
job's group): its capital from its own capex (each GPU type at its catalog price), its energy from
its own nodes' idle and peak draw and the busy GPU-hours on it, its facility from its nodes' peak
draw and its maintenance from its capex. What belongs to the pool as a whole is counted once:
staff for all its GPUs (whole engineers: per group, the rounding and the minimum would be paid
again) and the one-time setup.

Not yet in the result tables: no scenario builds such a pool yet.
"""

from __future__ import annotations

import numpy as np

from costsim.engine.run import UsageRecord
from costsim.models import economics as eco
from costsim.models.intervals import hours_in_bins
from costsim.plan.economics import EconomicsValues
from costsim.plan.groups import GroupedPlan
from costsim.results.costing import only, owned_costs

PER_GROUP = ("capital", "energy", "facility", "maintenance")  # line items each group pays for itself


def grouped_owned_costs(plan: GroupedPlan, econ: EconomicsValues, rec: UsageRecord, job_gpus: np.ndarray,
                        horizon_h: float, edges: np.ndarray) -> dict[str, np.ndarray]:
    """Line items (USD) per bin of ``edges`` (hours) of a pool of node groups bought at once:
    ``PER_GROUP`` items summed over the groups, each priced by ``owned_costs`` on its own usage;
    staff for the pool's GPUs from its delivery; setup once, at the start. ``job_gpus``: GPUs each
    job asked for (what it keeps busy within what it holds)."""
    groups = plan.groups
    lines = {item: np.zeros(len(edges) - 1) for item in (*PER_GROUP, "staff", "setup")}
    for k, group in enumerate(groups):
        own = owned_costs(group, econ, only(rec, k) if len(groups) > 1 else rec, job_gpus, horizon_h, edges)
        for item in PER_GROUP:
            lines[item] += own[item]
        if k == 0:
            lines["setup"] = own["setup"]
    # Every group is delivered with the option (one lead time): staff for all their GPUs from then on.
    delivered = min(groups[0].lead_time_h, horizon_h)
    lines["staff"] = eco.staff_cost_usd(plan.gpus, econ.gpus_per_fte, econ.staff_usd_per_fte_year,
                                        hours_in_bins(delivered, horizon_h, edges), min_fte=econ.staff_min_fte)
    return lines
