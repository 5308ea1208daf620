"""What a pool of node groups costs (costsim/results/costing.py, costsim/results/groups.py): by hand on a two-type pool, and a
pool of one group against the plain owned cluster's line items."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import owned, scenario

from costsim.catalog.load import default_catalog
from costsim.engine.run import run_groups, run_option
from costsim.models import economics as eco
from costsim.plan.groups import NodeGroup
from costsim.plan.resolve import economics_values, node_groups, resolve
from costsim.results.costing import OWNED_ITEMS, option_costs, owned_costs
from costsim.units import HOURS_PER_MONTH, HOURS_PER_YEAR
from costsim.workload.jobs import generate
from costsim.workload.plan import plan_work

HORIZON_H = 24.0


def grouped(sc, *groups):
    return node_groups(sc.options[0], tuple(NodeGroup(gpu_type=t, nodes=n, gpus_per_node=g) for t, n, g in groups), sc)


def test_two_types_by_hand(tmp_path):
    # One 8-GPU H100 node and one 8-GPU A100 node for a day. Job 0 (8 GPUs, 10 h) runs on the H100s,
    # job 1 (4 GPUs, 5 h) on the A100s (the H100 node is full): 80 and 20 busy GPU-hours.
    sc = scenario(tmp_path, [(0.0, 8, 10.0), (0.0, 4, 5.0)], [owned(gpus=8, gpus_per_node=8)], horizon_days=1)
    plan = grouped(sc, ("H100", 1, 8), ("A100", 1, 8))
    jobs = generate(sc, 0)
    rec = run_groups(plan, [plan_work(sc, jobs, g) for g in plan.groups], HORIZON_H)
    assert rec.part.tolist() == [0, 1]
    econ, cat = economics_values(sc), default_catalog()
    h, a = cat.gpus["H100"], cat.gpus["A100"]
    lines = option_costs(plan, econ, rec, jobs, HORIZON_H, np.array([0.0, HORIZON_H]))
    kwh = (h.node_idle_kw * 24 + (h.node_max_kw - h.node_idle_kw) / 8 * 80
           + a.node_idle_kw * 24 + (a.node_max_kw - a.node_idle_kw) / 8 * 20)
    assert lines["energy"][0] == pytest.approx(kwh * econ.pue * econ.electricity_usd_per_kwh, rel=1e-12)
    assert lines["facility"][0] == pytest.approx((h.node_max_kw + a.node_max_kw) * econ.colo_usd_per_kw_month
                                                 * 24 / HOURS_PER_MONTH, rel=1e-12)
    capex = plan.groups[0].capex_usd + plan.groups[1].capex_usd
    assert capex == pytest.approx(plan.capex_usd) and plan.groups[0].capex_usd != plan.groups[1].capex_usd
    assert lines["maintenance"][0] == pytest.approx(capex * econ.maintenance_frac_per_year * 24 / HOURS_PER_YEAR)
    # The capital cost per year is linear in capex (straight line or annuity): the groups' sum is the total's.
    annual = eco.annual_capital_cost_usd(capex, econ.residual_value_frac, econ.depreciation_years,
                                         econ.cost_of_capital)
    assert lines["capital"][0] == pytest.approx(annual * 24 / HOURS_PER_YEAR, rel=1e-12)
    # Staff and setup once for the pool: 16 GPUs' whole engineers, not each group's rounded up.
    fte = eco.staff_fte(16, econ.gpus_per_fte, econ.staff_min_fte)
    assert lines["staff"][0] == pytest.approx(fte * econ.staff_usd_per_fte_year * 24 / HOURS_PER_YEAR)
    assert lines["setup"][0] == pytest.approx(econ.setup_usd)


def test_one_group_costs_what_the_plain_cluster_does(tmp_path):
    rows = [(0.0, 8, 10.0), (1.0, 4, 5.0), (2.0, 16, 3.0), (30.0, 2, 50.0)]
    sc = scenario(tmp_path, rows, [owned(gpus=32, gpus_per_node=8, lead_time_days=0.5)], horizon_days=4)
    plain = resolve(sc)[0]
    plan = grouped(sc, ("H100", 4, 8))
    jobs = generate(sc, 0)
    work = plan_work(sc, jobs, plain)
    rec = run_option(plain, work, sc.horizon_h)  # a pool of one group runs as it (tests/engine/test_node_groups.py)
    edges = np.arange(0.0, sc.horizon_h + 1, 24.0)
    econ = economics_values(sc)
    a = owned_costs(plain, econ, rec, np.asarray(jobs.gpus), sc.horizon_h, edges)
    b = option_costs(plan, econ, rec, jobs, sc.horizon_h, edges)
    assert a.keys() == {*OWNED_ITEMS, "commitment_owed"}  # owed: a lease's payments after the horizon
    for item in a:
        np.testing.assert_allclose(b[item], a[item], rtol=1e-12, err_msg=item)


def test_power_and_facility_scale_with_gpus_not_nodes(tmp_path):
    # 16 H100s as 8 nodes × 2 GPUs or 2 nodes × 8, each as a plain cluster and as one node group,
    # for a day, job 0 busy on 2 GPUs for 10 h: 20 busy GPU-hours. A node's draw is the catalog
    # server's (8 GPUs) × its share of the server's GPUs, so both shapes draw 16 / 8 servers' worth.
    sc = scenario(tmp_path, [(0.0, 2, 10.0)], [owned(gpus=16, gpus_per_node=2)], horizon_days=1)
    econ, h = economics_values(sc), default_catalog().gpus["H100"]
    kwh = 2 * h.node_idle_kw * 24 + (h.node_max_kw - h.node_idle_kw) / 8 * 20
    energy = kwh * econ.pue * econ.electricity_usd_per_kwh
    facility = 2 * h.node_max_kw * econ.colo_usd_per_kw_month * 24 / HOURS_PER_MONTH
    jobs = generate(sc, 0)
    edges = np.array([0.0, HORIZON_H])
    for nodes, gpn in ((8, 2), (2, 8)):
        for plan in (resolve(sc.model_copy(update={"options": (sc.options[0].model_copy(update={
                         "gpus_per_node": gpn}),)}))[0], grouped(sc, ("H100", nodes, gpn))):
            rec = run_option(plan, plan_work(sc, jobs, plan.home), HORIZON_H)
            lines = option_costs(plan, econ, rec, jobs, HORIZON_H, edges)
            assert lines["energy"][0] == pytest.approx(energy, rel=1e-12), (nodes, gpn, plan)
            assert lines["facility"][0] == pytest.approx(facility, rel=1e-12), (nodes, gpn, plan)
