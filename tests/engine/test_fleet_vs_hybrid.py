"""A hybrid is the fleet of two parts: ``fleet [base, burst]`` must give the hybrid's numbers, job for
job and dollar for dollar, over bases (owned with a lead time, failures and tranches; reserved),
bursts (on demand, spot with preemptions), every waiting policy, bridging or not, serving, and
several seeds.

The two are simulated in separate scenarios under the same option name, so their random streams
(keyed by option name) are the same draws. What may differ, by design: the summary's ``kind`` and
``pricing`` words, and the costs table, whose fleet rows name their part (``capital:own``): summed
per line item they must equal the hybrid's rows.
"""

from __future__ import annotations

import pandas as pd
import pytest

import costsim
from costsim.scenario import scenario_from_data

HORIZON_DAYS = 40
CLASSES = [
    {"name": "small", "arrivals_per_day": 6, "gpus": 8, "iterations": {"mean": 120, "cv": 0.6}, "model_params_b": 7,
     "checkpoint": {"every_iterations": 30, "write_minutes": 2}},
    {"name": "big", "arrivals_per_day": 0.6, "priority": 1, "gpus": 32, "iterations": {"mean": 300, "cv": 0.4},
     "model_params_b": 32},
]
OWNED = {"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 32, "lead_time_days": 6, "scheduler": "backfill"}
RESERVED = {"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": 32}
ON_DEMAND = {"name": "od", "kind": "cloud", "gpu_type": "H100", "pricing": "on_demand"}
SPOT = {"name": "spot", "kind": "cloud", "gpu_type": "A100", "pricing": "spot", "preemptions_per_instance_day": 0.5}

WAITS = {
    "constant": {"max_wait_h": 3},
    "zero": {"wait_policy": "zero"},
    "linear_runtime": {"wait_policy": "linear_runtime", "wait_per_hour_h": 0.3},
    "linear_gpus": {"wait_policy": "linear_gpus", "wait_per_gpu_h": 0.1},
    "linear_cost": {"wait_policy": "linear_cost", "wait_per_gpu_hour_h": 0.01},
}


def pair(base: dict, burst: dict, wait: dict, bridge: bool, **top) -> tuple[costsim.Scenario, costsim.Scenario]:
    """The same scenario twice, its last option ``mix`` a hybrid in one and the two-part fleet in the other."""
    hybrid = {"name": "mix", "kind": "hybrid", "base": base["name"], "burst": burst["name"],
              "bridge_until_ready": bridge, **wait}
    fleet = {"name": "mix", "kind": "fleet", "parts": [{"option": base["name"]}, {"option": burst["name"], **wait}],
             "bridge_until_ready": bridge}
    out = []
    for mix in (hybrid, fleet):
        data = {"name": "pair", "horizon_days": HORIZON_DAYS, "workload": {"classes": CLASSES},
                "options": [base, burst, mix], **top}
        out.append(scenario_from_data(data, "test", "."))
    return out[0], out[1]


def assert_same_numbers(a: costsim.Results, b: costsim.Results) -> None:
    ja, jb = (r.jobs[r.jobs.option == "mix"].reset_index(drop=True) for r in (a, b))
    pd.testing.assert_frame_equal(ja, jb, obj="jobs")
    sa, sb = (r.summary[r.summary.option == "mix"].drop(columns=["kind", "pricing"]).reset_index(drop=True)
              for r in (a, b))
    pd.testing.assert_frame_equal(sa, sb, obj="summary")
    for table in ("timeseries", "cashflow", "phases"):
        ta, tb = (getattr(r, table) for r in (a, b))
        pd.testing.assert_frame_equal(ta[ta.option == "mix"].reset_index(drop=True),
                                      tb[tb.option == "mix"].reset_index(drop=True), obj=table)
    ca = a.costs[a.costs.option == "mix"].set_index(["month", "item"]).cost_usd.sort_index()
    cb = b.costs[b.costs.option == "mix"].assign(item=lambda d: d.item.str.split(":").str[0])
    cb = cb.groupby(["month", "item"]).cost_usd.sum().sort_index()
    pd.testing.assert_series_equal(ca, cb, obj="costs by line item", rtol=1e-12)
    assert b.costs[b.costs.option == "mix"].item.str.contains(":").all()  # the fleet's rows name their part


CASES = {
    "owned-bridged-on-demand": (OWNED, ON_DEMAND, True, {}),
    "owned-unbridged-spot": (OWNED, SPOT, False, {}),
    "owned-with-failures-and-tranches": (
        {**OWNED, "failures": {"node_failures_per_1000_node_days": 40, "repair_hours": 12}, "gpus_per_node": 8,
         "tranches": [{"gpus": 16, "order_day": 0}, {"gpus": 16, "order_day": 10}], "lead_time_days": 4},
        ON_DEMAND, True, {}),
    "reserved-on-demand": (RESERVED, ON_DEMAND, True, {}),
    "owned-serving": ({**OWNED, "gpus": 48}, ON_DEMAND, True, {"serving": {"gpus": {"base": 6, "diurnal_amplitude": 0.5}}}),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("seed", [0, 3])
def test_a_fleet_of_base_and_burst_gives_the_hybrids_numbers(case, seed):
    base, burst, bridge, top = CASES[case]
    hybrid, fleet = pair(base, burst, WAITS["constant"], bridge, **top)
    a, b = costsim.simulate(hybrid, seed=seed), costsim.simulate(fleet, seed=seed)
    assert_same_numbers(a, b)
    jobs = a.jobs[a.jobs.option == "mix"]
    assert set(jobs.ran_on) - {""} == {base["name"], burst["name"]}  # both parts used: the case tests routing


@pytest.mark.parametrize("policy", sorted(WAITS))
def test_every_waiting_policy_routes_a_fleet_as_the_hybrid(policy):
    hybrid, fleet = pair(OWNED, ON_DEMAND, WAITS[policy], True)
    assert_same_numbers(costsim.simulate(hybrid, seed=1), costsim.simulate(fleet, seed=1))


def test_the_comparison_can_fail():
    """A different wait on the fleet's burst changes its jobs: the equality above is not vacuous."""
    hybrid, _ = pair(OWNED, ON_DEMAND, WAITS["constant"], True)
    _, fleet = pair(OWNED, ON_DEMAND, {"max_wait_h": 30}, True)
    with pytest.raises(AssertionError):
        assert_same_numbers(costsim.simulate(hybrid, seed=0), costsim.simulate(fleet, seed=0))


def test_a_fleet_offloading_rollouts_gives_the_hybrids_numbers():
    """Rollout offload (docs/rollout-offload.md) on the first part, named by the fleet as by the hybrid."""
    classes = [*CLASSES, {"name": "dis", "arrivals_per_day": 2, "gpus": 16, "iterations": 80, "model_params_b": 7,
                          "placement": "disaggregated", "rollout_gpu_fraction": 0.5}]
    pool = {**SPOT, "name": "ro", "gpu_type": "H100"}
    out = []
    for mix in ({"name": "mix", "kind": "hybrid", "base": "own", "burst": "od", "max_wait_h": 3, "rollout_pool": "ro"},
                {"name": "mix", "kind": "fleet", "parts": [{"option": "own"}, {"option": "od", "max_wait_h": 3}],
                 "rollout_pool": "ro"}):
        data = {"name": "pair", "horizon_days": HORIZON_DAYS, "workload": {"classes": classes},
                "options": [OWNED, ON_DEMAND, pool, mix]}
        out.append(costsim.simulate(scenario_from_data(data, "test", "."), seed=5))
    assert_same_numbers(*out)
    assert out[1].summary.set_index("option").loc["mix", "cost_rollout_usd"] > 0  # rollouts were offloaded
