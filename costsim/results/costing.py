"""Prices a run's usage over any set of time bins, from ``economics``' pure functions.

One function per way a pool is paid for (``owned``, a ``reservation``, a ``rental``: what its plan
says it is) returns cost line items per bin; the hourly cumulative curve, the
monthly table and the totals all come from it (``option_costs``), so they agree by construction.
This module also says where serving runs (``serving_use``) and what capacity each option has
(``capacity``), since both are priced here.

Line items that are lumps rather than rates: ``setup`` in the first bin (paid at the start) and
``commitment_owed`` in the last bin (the rest of a reservation's term, or of a leased tranche's
payments, beyond the horizon, owed at its end).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from costsim.engine.run import ROLLOUT, UsageRecord
from costsim.models import economics as eco
from costsim.models import trend
from costsim.models.intervals import binned, hours_in_bins
from costsim.plan.economics import EconomicsValues
from costsim.plan.fleet import Plan, node_group_pool
from costsim.plan.fleet import pools as plan_pools
from costsim.plan.options import CloudPlan, OwnedPlan, nodes_needed
from costsim.plan.tranches import InService, residual_frac
from costsim.units import HOURS_PER_MONTH, HOURS_PER_YEAR, SECONDS_PER_HOUR
from costsim.workload.jobs import JobTable

OWNED_ITEMS = ("capital", "energy", "facility", "maintenance", "staff", "setup")
CLOUD_ITEMS = ("reserved", "cloud", "serving", "commitment_owed", "rollout")  # rollout: offloaded rollout instances
ALL_ITEMS = OWNED_ITEMS + CLOUD_ITEMS


def bin_edges(horizon_h: float, width_h: float) -> np.ndarray:
    """Bins of ``width_h`` from 0, the last one cut at the horizon."""
    n = int(np.ceil(horizon_h / width_h - 1e-9))
    edges = np.arange(n + 1, dtype=float) * width_h
    edges[-1] = horizon_h
    return edges


def held_intervals(rec: UsageRecord, horizon_h: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every allocation that began within the horizon: its job, [start, end) clipped to the
    horizon, and its row in the record's allocation arrays."""
    k = np.flatnonzero(rec.alloc_start < horizon_h)
    return rec.alloc_job[k], rec.alloc_start[k], np.minimum(rec.alloc_end[k], horizon_h), k


def parts(plan: Plan, rec: UsageRecord) -> list[tuple[OwnedPlan | CloudPlan, UsageRecord]]:
    """The option's pools with the usage each carried: one, or a hybrid's base and burst, a fleet's
    parts (the record's part numbers, in ``plan.fleet.pools`` order); then the rented pool
    its RL classes offload rollouts to (``rollout_parts``), if any."""
    home = plan.home
    rollouts = [(home.rollout, only(rec, ROLLOUT))] if home.rollout is not None else []
    own = plan_pools(plan)
    split = len(own) > 1 or bool(rollouts)
    return [*((part, only(rec, k) if split else rec) for k, part in enumerate(own)), *rollouts]


def rollout_parts(plan: Plan) -> int:
    """How many of ``parts(plan, …)`` (the last, if any) are a rollout pool: 0 or 1."""
    return int(plan.home.rollout is not None)


def only(rec: UsageRecord, part: int) -> UsageRecord:
    """The record with the jobs and allocations of other parts left out (never started, as far as it shows)."""
    other = rec.part != part
    keep = rec.alloc_part == part
    return replace(rec, start_h=np.where(other, np.nan, rec.start_h), end_h=np.where(other, np.nan, rec.end_h),
                   held_gpus=np.where(other, 0, rec.held_gpus), instances=np.where(other, 0, rec.instances),
                   alloc_job=rec.alloc_job[keep], alloc_start=rec.alloc_start[keep], alloc_end=rec.alloc_end[keep],
                   alloc_held=rec.alloc_held[keep], alloc_instances=rec.alloc_instances[keep],
                   alloc_part=rec.alloc_part[keep], alloc_share=rec.alloc_share[keep],
                   **({} if rec.capacity_part is None else {
                       "capacity_change_h": rec.capacity_change_h[rec.capacity_part == part],
                       "capacity_gpus": rec.capacity_gpus[rec.capacity_part == part],
                       "capacity_part": rec.capacity_part[rec.capacity_part == part]}))


def held_gpus(rec: UsageRecord, k: np.ndarray) -> np.ndarray:
    """GPUs the allocations ``k`` hold on average: their GPUs × their share held (1 but on a rollout
    pool, where an instance is up a share of the time and bills its restarts)."""
    return rec.alloc_held[k] * rec.alloc_share[k]


def per_bin(hourly: np.ndarray, horizon_h: float, edges: np.ndarray) -> np.ndarray:
    """GPU-hours per bin of a level that is constant within each hour."""
    h = np.arange(len(hourly), dtype=float)
    return binned(h, np.minimum(h + 1, horizon_h), hourly.astype(float), edges)


def capacity(plan: Plan, rec: UsageRecord, horizon_h: float, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """GPU-hours of capacity and of rented GPUs per bin. A pool of nodes (owned, reserved, a
    hybrid's base) has its installed GPUs; on-demand and spot capacity is what is rented."""
    cap = np.zeros(len(edges) - 1)
    rented = np.zeros(len(edges) - 1)
    for part, sub in parts(plan, rec):
        if part.is_pool:  # its own capacity: a fleet records each pool's (``only``)
            t = np.append(sub.capacity_change_h, horizon_h)
            pool = binned(t[:-1], t[1:], sub.capacity_gpus.astype(float), edges)
            cap += pool
            if part.reservation is not None:  # a commitment's GPUs are rented
                rented += pool
        else:
            _, s, e, k = held_intervals(sub, horizon_h)
            held = binned(s, e, held_gpus(sub, k), edges)
            cap += held
            rented += held
    return cap, rented


Serving = list[tuple[np.ndarray, np.ndarray]] | None  # per part: GPUs served and GPUs rented, per hour


def serving_use(plan: Plan, rec: UsageRecord, demand: np.ndarray | None, horizon_h: float) -> Serving:
    """Where serving runs, per part and hour (GPUs served, GPUs rented for it).

    On a pool (owned, reserved, a hybrid's base) it gets its demand up to what the pool has beside
    the RL jobs (which were admitted leaving it room, so it is short only before delivery or after
    a node failure). On on-demand or spot capacity it rents whole instances for its demand. A
    hybrid serves from its base; while the base is not delivered and the hybrid bridges the lead
    time (``bridge_until_ready``), the demand the base cannot serve that hour is rented on the
    burst in whole instances at the burst's price (every hour that starts before delivery), like
    the RL jobs it bridges. Without bridging it is unmet, as on the owned option alone.
    """
    if demand is None:
        return None
    hourly = bin_edges(horizon_h, 1.0)
    width = np.diff(hourly)
    zero = np.zeros(len(demand))
    out: list[tuple[np.ndarray, np.ndarray]] = []
    pools = parts(plan, rec)
    for part, sub in pools[:len(pools) - rollout_parts(plan)]:
        gpi = part.node_gpus  # rented parts: GPUs per instance
        if part.is_pool and part is not plan.home:  # a fleet's later pools: serving runs on its first only
            out.append((zero, zero))
        elif part.is_pool:
            pool = capacity(part, sub, horizon_h, hourly)[0] / width
            _, st, en, k = held_intervals(sub, horizon_h)
            rl = binned(st, en, sub.alloc_held[k].astype(float), hourly) / width
            out.append((np.minimum(demand, np.maximum(pool - rl, 0.0)), zero))
        elif part is not plan.home:  # a hybrid's burst: serving only while it bridges the base's lead time
            bridging = hourly[:-1] < plan.bridged_h
            short = np.where(bridging, np.maximum(demand - out[0][0], 0.0), 0.0)
            gpus = np.ceil(short - 1e-9).astype(np.int64)  # whole GPUs, without float noise
            out.append((short, (nodes_needed(gpus, gpi) * gpi).astype(float)))
        else:
            out.append((demand.astype(float), (nodes_needed(demand, gpi) * gpi).astype(float)))
    return out + [(zero, zero)] * rollout_parts(plan)  # a rollout pool serves nothing


def option_costs(plan: Plan, econ: EconomicsValues, rec: UsageRecord, jobs: JobTable, horizon_h: float,
                 edges: np.ndarray, serving: Serving = None, by_part: bool = False) -> dict[str, np.ndarray]:
    """Every line item (USD) per bin for one option (a hybrid: its base's and its burst's);
    items the option does not have are zero. ``by_part``: each part's items apart, keyed
    ``item:part`` (the part's option name; a rollout pool's under its own), only those the part has."""
    out = {item: np.zeros(len(edges) - 1) for item in ALL_ITEMS}
    if by_part:
        out = {}
    pools = parts(plan, rec)
    grouped = node_group_pool(plan)  # its groups price their hardware, the pool its staff and setup
    for k, (part, sub) in enumerate(pools):
        served, rented = serving[k] if serving else (None, None)
        own, commitment, rental = part.owned, part.reservation, part.rental  # one of them: what the pool is
        if k >= len(pools) - rollout_parts(plan):  # a rollout pool: its bill is the rollout line
            assert rental is not None  # a rollout pool is rented per use
            items = {"rollout": cloud_costs(rental, sub, horizon_h, edges)["cloud"]}
        elif own is not None:
            extra = per_bin(served, horizon_h, edges) if served is not None else None
            items = owned_costs(own, econ, sub, jobs.gpus, horizon_h, edges, extra, staffed=grouped is None)
        elif commitment is not None:
            items = reserved_costs(commitment, horizon_h, edges)
        else:
            assert rental is not None
            items = cloud_costs(rental, sub, horizon_h, edges)
            if rented is not None:
                items["serving"] = serving_rent_usd(rental, rented, horizon_h, edges)
        for item, v in items.items():
            key = f"{item}:{part.name}" if by_part else item
            out[key] = out.get(key, 0.0) + v
    if grouped is not None:
        # Once for the whole pool (``costsim.results.groups``): per group, whole engineers' rounding
        # and minimum would be paid again, and setup once per group.
        out |= {"staff": staff_costs(grouped.in_service, econ, horizon_h, edges), "setup": setup_costs(econ, edges)}
    return out


def owned_costs(
    plan: OwnedPlan,
    econ: EconomicsValues,
    rec: UsageRecord,
    job_gpus: np.ndarray,
    horizon_h: float,
    edges: np.ndarray,
    serving_gpu_h: np.ndarray | None = None,
    *,
    staffed: bool = True,
) -> dict[str, np.ndarray]:
    """Owned line items (USD) per bin, each tranche from its delivery (to its return to the lessor,
    a lease ending within the horizon): facility, maintenance and energy at idle accrue per hour
    each tranche is in service, staff per hour for the GPUs in service then (whole engineers); capital too, but only until the end of each tranche's
    depreciation life (the hardware is paid for by then: a 7-year horizon on a 5-year life pays
    the capital once), or for a leased tranche its monthly payment over its term, the payments
    due after the horizon owed at its end (``commitment_owed``, in the last bin,
    ``TranchePlan.lease_owed_usd``); energy also per busy GPU-hour (RL jobs and, given per bin,
    serving); setup at the start. ``staffed`` False: no staff nor setup (a node group's: its pool
    pays them once, ``option_costs``)."""
    job, s, e, k = held_intervals(rec, horizon_h)
    # Busy GPUs: the job's own, within what it holds (an offloaded job uses only its training GPUs here).
    busy_gpu_h = binned(s, e, np.minimum(job_gpus[job], rec.alloc_held[k]).astype(float), edges)
    if serving_gpu_h is not None:
        busy_gpu_h = busy_gpu_h + serving_gpu_h
    residual = residual_frac(plan.resale_curve, econ)
    purchases = plan.purchases
    lines = {item: np.zeros(len(edges) - 1)
             for item in ("capital", "energy", "facility", "maintenance", "staff", "commitment_owed")
             if staffed or item != "staff"}
    for n, t in enumerate(purchases):
        delivered = min(t.delivery_h, horizon_h)
        service_h = hours_in_bins(delivered, min(t.returned_h, horizon_h), edges)  # a lease's nodes go back
        if t.leased:
            lease_h = hours_in_bins(delivered, min(t.lease_end_h, horizon_h), edges)
            lines["capital"] += t.lease_usd_per_month * lease_h / HOURS_PER_MONTH
            if len(edges) > 1:
                lines["commitment_owed"][-1] += t.lease_owed_usd(horizon_h)
        else:
            paid_off = min(delivered + econ.depreciation_years * HOURS_PER_YEAR, horizon_h)
            annual = eco.annual_capital_cost_usd(t.capex_usd, residual, econ.depreciation_years, econ.cost_of_capital)
            lines["capital"] += annual * hours_in_bins(delivered, paid_off, edges) / HOURS_PER_YEAR
        # One tranche: the busy GPUs' energy in the same sum as its idle draw (as before tranches, to the bit).
        busy = busy_gpu_h if n == 0 else np.zeros_like(busy_gpu_h)
        # Per node of this cluster's size (the catalog's power is for its full-size server).
        kwh = eco.it_energy_kwh(t.nodes, plan.node_idle_kw, plan.node_max_kw, plan.gpus_per_node, service_h, busy)
        lines["energy"] += eco.energy_cost_usd(kwh, econ.pue, econ.electricity_usd_per_kwh)
        lines["facility"] += eco.facility_cost_usd(t.nodes, plan.node_max_kw, econ.colo_usd_per_kw_month, service_h)
        lines["maintenance"] += eco.maintenance_cost_usd(t.capex_usd, econ.maintenance_frac_per_year, service_h)
    if not staffed:
        return lines
    lines["staff"] = staff_costs(plan.in_service, econ, horizon_h, edges)
    return {**lines, "setup": setup_costs(econ, edges)}


def staff_costs(steps: InService, econ: EconomicsValues, horizon_h: float, edges: np.ndarray) -> np.ndarray:
    """Staff (USD) per bin of ``edges`` (hours) for the GPUs in service (``steps``), from each
    delivery or return to the next, cut at ``horizon_h``: whole engineers for the GPUs then."""
    out = np.zeros(len(edges) - 1)
    for i in range(1, len(steps.times)):  # the first step, from -inf, is before any delivery
        start = min(steps.times[i], horizon_h)
        until = min(steps.times[i + 1], horizon_h) if i + 1 < len(steps.times) else horizon_h
        out += eco.staff_cost_usd(steps.gpus[i], econ.gpus_per_fte, econ.staff_usd_per_fte_year,
                                  hours_in_bins(start, max(until, start), edges), min_fte=econ.staff_min_fte)
    return out


def setup_costs(econ: EconomicsValues, edges: np.ndarray) -> np.ndarray:
    """Setup (USD) per bin of ``edges``: paid once, at the start (the first bin)."""
    setup = np.zeros(len(edges) - 1)
    if len(setup):
        setup[0] = econ.setup_usd
    return setup


def cloud_bills(plan: CloudPlan, rec: UsageRecord, horizon_h: float) -> tuple[np.ndarray, np.ndarray]:
    """Per allocation: its job and its bill (USD), cut at the horizon. Each allocation (a job holds
    instances again after a preemption) is billed on its own, with its own rounding and minimum, times
    its share (``held_gpus``). Under a price trend (``price_change_per_year`` c, ``models.trend``)
    the hours held on [s, e) cost price × ∫ₛᵉ (1 + c)^(t / 8760) dt = price × (clock(e) − clock(s))
    and the billed time beyond them (rounding, minimum) the price at release, price × (1 + c)^(e / 8760)."""
    job, s, e, k = held_intervals(rec, horizon_h)
    billed = eco.billed_seconds((e - s) * SECONDS_PER_HOUR, plan.billing_granularity_s, plan.minimum_billing_s)
    bill = eco.cloud_cost_usd(billed, rec.alloc_instances[k], plan.gpus_per_instance, plan.price_per_gpu_hour)
    if plan.price_change_per_year:
        rate = trend.per_hour(plan.price_change_per_year)
        gpus = rec.alloc_instances[k] * plan.gpus_per_instance
        extra_h = billed / SECONDS_PER_HOUR - (e - s)
        held_h = trend.between(s, e, rate)
        bill = gpus * plan.price_per_gpu_hour * (held_h + extra_h * trend.factor(e, rate))
    return job, bill * rec.alloc_share[k]


def term_prices(plan: CloudPlan, horizon_h: float) -> list[tuple[float, float, float]]:
    """A commitment's terms that begin within the horizon: (start, end, USD per GPU-hour), terms of
    ``term_h`` from hour 0, each at the trended price of its start, price × (1 + c)^(start / 8760),
    locked for the whole term (c = ``price_change_per_year``; one price without a trend)."""
    terms = max(1, math.ceil(horizon_h / plan.term_h - 1e-9))  # as economics.commitment_owed_usd counts them
    rate = trend.per_hour(plan.price_change_per_year)
    return [(j * plan.term_h, (j + 1) * plan.term_h, plan.price_per_gpu_hour * trend.factor(j * plan.term_h, rate))
            for j in range(terms)]


def mean_usd_per_gpu_hour(plan: CloudPlan, horizon_h: float, capacity: InService | None = None) -> float:
    """What a GPU-hour of ``plan`` costs on average over the horizon [0, H], USD, the price a
    break-even set against the horizon's own cost per GPU-hour must use: without a trend its price,
    exactly; under ``price_change_per_year`` a commitment's locked term prices (``term_prices``)
    weighted by each term's hours within H, and on-demand or spot capacity the trended price's mean,
    price × clock(H) / H (``models.trend``). Today's price p of a trended series whose mean is m
    is m × H / clock(H). ``capacity``: the GPUs in service over time of the option it is set
    against, whose cost per GPU-hour covers only those hours: the price is then weighted by them,
    Σ cap(t) p(t) / Σ cap(t) over [0, H] (a cluster delivered after 120 days rents at the price of
    the rest of the year, not of all of it)."""
    if not plan.price_change_per_year or horizon_h <= 0:
        return plan.price_per_gpu_hour
    if capacity is not None:
        bounds = [*(min(max(t, 0.0), horizon_h) for t in capacity.times), horizon_h]
        spans = [(a, b, g) for a, b, g in zip(bounds, bounds[1:], capacity.gpus, strict=False) if b > a and g > 0]
        gpu_h = sum(g * (b - a) for a, b, g in spans)
        if gpu_h > 0:
            return sum(g * _price_hours(plan, a, b, horizon_h) for a, b, g in spans) / gpu_h
    if plan.reservation is not None:
        return sum((min(end, horizon_h) - start) * price for start, end, price in term_prices(plan, horizon_h)) \
            / horizon_h
    return plan.price_per_gpu_hour * float(trend.clock(horizon_h, trend.per_hour(plan.price_change_per_year))) \
        / horizon_h


def _price_hours(plan: CloudPlan, a_h: float, b_h: float, horizon_h: float) -> float:
    """∫ price dt over [a_h, b_h] (USD per GPU, hours within H) under the plan's trend: a
    commitment's locked term prices, else the trended price (``models.trend.between``)."""
    if plan.reservation is not None:
        return sum(max(0.0, min(end, b_h) - max(start, a_h)) * price
                   for start, end, price in term_prices(plan, horizon_h))
    return plan.price_per_gpu_hour * float(trend.between(a_h, b_h, trend.per_hour(plan.price_change_per_year)))


def reserved_costs(plan: CloudPlan, horizon_h: float, edges: np.ndarray) -> dict[str, np.ndarray]:
    """A commitment: reserved GPUs × price for every hour of the horizon, used or not
    (``reserved``), and the rest of the last term begun, owed at the horizon's end even though
    the simulation stops there (``commitment_owed``, in the last bin). Under a price trend each
    term pays its own locked price (``term_prices``)."""
    assert plan.reserved_gpus is not None  # a reservation commits to reserved_gpus
    owed = np.zeros(len(edges) - 1)
    if plan.price_change_per_year:
        terms = term_prices(plan, horizon_h)
        usd = np.zeros(len(edges) - 1)
        for start, end, price in terms:
            usd += hours_in_bins(start, min(end, horizon_h), edges) * price
        if len(owed):
            _, end, price = terms[-1]
            owed[-1] = plan.reserved_gpus * price * max(end - horizon_h, 0.0)
        return {"reserved": usd * plan.reserved_gpus, "commitment_owed": owed}
    hours = hours_in_bins(0.0, horizon_h, edges)
    if len(owed):
        owed[-1] = eco.commitment_owed_usd(plan.reserved_gpus, plan.price_per_gpu_hour, plan.term_h, horizon_h)
    return {"reserved": hours * plan.reserved_gpus * plan.price_per_gpu_hour, "commitment_owed": owed}


def rented_usd(plan: CloudPlan, starts: np.ndarray, ends: np.ndarray, gpus: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """USD per bin of ``gpus`` rented on each [start, end) at the plan's price, trended as it is
    held: GPU-hours on the trend's clock (``models.trend``: ∫ (1 + c)^(t / 8760) dt over each
    part of an interval in a bin) × price; plain GPU-hours × price without a trend."""
    rate = trend.per_hour(plan.price_change_per_year)
    return binned(trend.clock(starts, rate), trend.clock(ends, rate), gpus, trend.clock(edges, rate)) \
        * plan.price_per_gpu_hour


def serving_rent_usd(plan: CloudPlan, rented_hourly: np.ndarray, horizon_h: float, edges: np.ndarray) -> np.ndarray:
    """USD per bin of GPUs rented for serving, a level per hour (``serving_use``), at the plan's
    price trended as it is held (``rented_usd``)."""
    h = np.arange(len(rented_hourly), dtype=float)
    return rented_usd(plan, h, np.minimum(h + 1, horizon_h), rented_hourly.astype(float), edges)


def cloud_costs(plan: CloudPlan, rec: UsageRecord, horizon_h: float, edges: np.ndarray) -> dict[str, np.ndarray]:
    """Cloud bill per bin: rented GPU-hours × price as they are held (trended, ``rented_usd``), and
    each allocation's rounding (billing increment, minimum) in the bin where it is released."""
    _, s, e, k = held_intervals(rec, horizon_h)
    gpus = rec.alloc_instances[k] * plan.gpus_per_instance * rec.alloc_share[k]
    per_bin_usd = rented_usd(plan, s, e, gpus, edges)
    _, bill = cloud_bills(plan, rec, horizon_h)
    rounding = bill - trend.between(s, e, trend.per_hour(plan.price_change_per_year)) * gpus * plan.price_per_gpu_hour
    where = np.clip(np.searchsorted(edges, e, side="left") - 1, 0, len(edges) - 2)
    per_bin_usd += np.bincount(where, weights=rounding, minlength=len(edges) - 1)
    return {"cloud": per_bin_usd}
