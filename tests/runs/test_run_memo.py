"""``simulate(..., memo=RunMemo())`` gives the same tables as a plain run, whatever changed since
the runs it remembers (the dashboard's workers reuse jobs, work plans and option runs this way).

Truth is a plain ``costsim.simulate`` of the same scenario and seed. Every shipped scenario is run
through one memo along a chain of edits a user makes with the knobs: a price, the electricity and
depreciation, an option's size and fabric, the serving load, the seed, back to the first
settings; each step must equal a plain run. The memo must also repeat only what an edit touches (a price edit reruns only the priced
option), see an edited trace file (one a ``Prepared`` was prepared from too), and keep its arrays read-only.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import halve_trace, lab_trace_copy, same_tables
from paths import ROOT

import costsim
from costsim.errors import ArgumentError
from costsim.runs import api
from costsim.runs.memo import RunMemo
from costsim.scenario import scenario_from_data
from tests.golden.regenerate import cut

SHIPPED = sorted((ROOT / "scenarios").glob("*.yaml"))
def edited(scenario: costsim.Scenario, change) -> costsim.Scenario:
    data = scenario.model_dump(mode="json")
    change(data)
    return scenario_from_data(data, "edited", scenario.base_dir)


def priced(data: dict) -> None:
    """The first rented option's price set (a hybrid's burst is another option, so it follows), or
    the first owned option's capex when none is rented."""
    for option in data["options"]:
        if option["kind"] == "cloud":
            option["price_per_gpu_hour"] = round((option["price_per_gpu_hour"] or 2.5) * 1.1, 4)
            return
    next(o for o in data["options"] if o["kind"] == "owned")["capex_usd_per_gpu"] = 31_000.0


def economics(data: dict) -> None:
    data["economics"].update(electricity_usd_per_kwh=0.173, depreciation_years=4)


def resized(data: dict) -> None:
    """The first option with a GPU count, one node (or instance) bigger."""
    for option in data["options"]:
        for field in ("gpus", "reserved_gpus"):
            if isinstance(option.get(field), int):
                option[field] += 8
                return


def rewired(data: dict) -> None:
    """The first option's fabric switched (its work plan changes: collectives take longer or less)."""
    option = next(o for o in data["options"] if o.get("network"))
    option["network"] = "roce" if option["network"] == "infiniband" else "infiniband"


def served(data: dict) -> None:
    """More serving load, where there is any."""
    if data.get("serving"):
        data["serving"]["gpus"]["base"] += 16


def reseeded(data: dict) -> None:
    data["seed"] = data["seed"] + 1


def short(scenario: costsim.Scenario) -> costsim.Scenario:
    """The scenario over at most 30 days (the memo's keys and reuse do not depend on the
    horizon), its warm-up kept shorter."""
    if scenario.horizon_days <= 30:
        return scenario
    # as the golden tables cut it: a tranche ordered past the horizon left out
    return edited(scenario, lambda d: d.update(cut(d, 30), warmup_days=min(d.get("warmup_days", 0), 7)))


@pytest.mark.slow
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_a_chain_of_knob_edits_through_one_memo_equals_plain_runs(path):
    first = short(costsim.load_scenario(path))
    memo = RunMemo()
    steps = [first]
    for change in (priced, economics, resized, rewired, served, reseeded):
        steps.append(edited(steps[-1], change))
    steps.append(first)  # back: the memo's oldest entries
    plain: dict[int, costsim.Results] = {}  # the first step comes back at the end: run it plainly once
    for step in steps:
        if id(step) not in plain:
            plain[id(step)] = api.simulate(step)
        same_tables(api.simulate(step, memo=memo), plain[id(step)])
    assert memo.hits > 0


def baseline() -> costsim.Scenario:
    return short(costsim.load_scenario(ROOT / "scenarios" / "baseline.yaml"))


@pytest.mark.slow
def test_a_price_edit_simulates_nothing_again():
    sc = baseline()
    memo = RunMemo()
    api.simulate(sc, memo=memo)
    options = len(sc.options)
    hits, misses = memo.hits, memo.misses
    assert misses == 1 + 2 * options and hits == 0  # the jobs, then a work plan and a run per option

    def cloud_price(data):
        od = next(o for o in data["options"] if o["kind"] == "cloud" and o.get("pricing") == "on_demand")
        od["price_per_gpu_hour"] = 2.79

    priced = api.simulate(edited(sc, cloud_price), memo=memo)
    assert memo.misses == misses  # work plans and runs never read prices (they get them as NaN)
    assert memo.hits - hits == 1 + 2 * options
    same_tables(priced, api.simulate(edited(sc, cloud_price)))
    assert not priced.summary.total_cost_usd.isna().any()


def test_payment_terms_and_a_resale_curve_simulate_nothing_again(tmp_path):
    """How tranches are paid and what the hardware resells for move no job: such an edit reuses
    every run, and its tables equal a plain run's."""
    (tmp_path / "t.csv").write_text("submit_h,gpus,duration_h\n0,16,5\n3,8,2\n")
    data = {"name": "t", "horizon_days": 40, "workload": {"trace": "t.csv"},
            "options": [{"name": "own", "kind": "owned", "gpu_type": "H100", "lead_time_days": 0, "failures": None,
                         "tranches": [{"gpus": 8}, {"gpus": 8, "order_day": 1}]},
                        {"name": "cloud", "kind": "cloud", "gpu_type": "H100"}]}
    sc = scenario_from_data(data, "t", tmp_path)
    memo = RunMemo()
    api.simulate(sc, memo=memo)
    misses = memo.misses

    def lease_and_curve(d):
        d["options"][0]["tranches"][1].update(payment="lease", lease_term_months=12)
        d["options"][0]["resale_curve"] = [{"age_years": 1, "value_frac": 0.5}]

    again = api.simulate(edited(sc, lease_and_curve), memo=memo)
    assert memo.misses == misses
    same_tables(again, api.simulate(edited(sc, lease_and_curve)))
    assert not again.cashflow.capex_usd.isna().any()


def test_work_plans_and_runs_are_given_no_prices():
    """What plan_work and the engine receive has NaN prices: were one read there, the chain test
    above would see NaN (or other) numbers against plain runs."""
    from costsim.catalog.load import default_catalog
    from costsim.plan.resolve import resolve

    for path in SHIPPED:
        for plan in resolve(costsim.load_scenario(path), default_catalog()):
            bare = plan.unpriced()
            for part in (bare.base, bare.burst) if hasattr(bare, "burst") else (bare,):
                prices = [getattr(part, f) for f in ("capex_usd", "price_per_gpu_hour") if hasattr(part, f)]
                assert prices and all(p != p for p in prices), (path.name, plan.name)


def test_a_seed_is_its_own_entry():
    sc = baseline()
    memo = RunMemo()
    a = api.simulate(sc, seed=1, memo=memo)
    b = api.simulate(sc, seed=2, memo=memo)
    assert not a.summary.equals(b.summary)
    same_tables(api.simulate(sc, seed=1, memo=memo), a)


def test_an_edited_trace_file_is_read_again(tmp_path):
    sc = lab_trace_copy(tmp_path)
    memo = RunMemo()
    before = api.simulate(sc, memo=memo)
    halve_trace(sc)  # half the jobs, even with an older mtime
    after = api.simulate(sc, memo=memo)
    assert after.summary.jobs_submitted.iloc[0] < before.summary.jobs_submitted.iloc[0]
    same_tables(after, api.simulate(sc))


def test_a_prepared_traces_jobs_are_kept_by_the_file_it_was_prepared_from(tmp_path):
    sc = lab_trace_copy(tmp_path)
    memo = RunMemo()
    before = costsim.prepare(sc)
    first = costsim.simulate(before, memo=memo)
    halve_trace(sc)
    after = costsim.prepare(sc)
    assert after.trace_identity != before.trace_identity
    shorter = costsim.simulate(after, memo=memo)
    assert shorter.summary.jobs_submitted.iloc[0] < first.summary.jobs_submitted.iloc[0]
    same_tables(shorter, costsim.simulate(sc))
    same_tables(costsim.simulate(before, memo=memo), first)  # run as it was prepared, from the memo


def test_what_the_memo_keeps_is_read_only():
    memo = RunMemo()
    api.simulate(baseline(), memo=memo)
    kept = [v for table in memo._tables.values() for v in table.values()]
    arrays = []

    def collect(value):
        if isinstance(value, np.ndarray):
            arrays.append(value)
        elif isinstance(value, tuple):
            for item in value:
                collect(item)
        elif hasattr(value, "__dataclass_fields__"):
            for name in value.__dataclass_fields__:
                collect(getattr(value, name))

    for value in kept:
        collect(value)
    assert arrays and not any(a.flags.writeable for a in arrays)


def test_entries_are_bounded_and_a_bad_memo_argument_is_refused():
    memo = RunMemo(jobs=1, works=2, runs=2)
    sc = baseline()
    api.simulate(sc, memo=memo)
    assert [len(t) for t in memo._tables.values()] == [1, 2, 2]
    with pytest.raises(ArgumentError, match="memo"):
        api.simulate(sc, memo={})
    for bad in (0, -1, 2.5, True, "3", None):
        with pytest.raises(ArgumentError, match=r"RunMemo\(\): runs: must be a whole number"):
            RunMemo(runs=bad)
