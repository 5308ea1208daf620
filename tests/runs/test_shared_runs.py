"""Variants that differ only in prices share their simulation (``costsim.runs.taskrun``): a sweep,
the tornado and the optimiser run each distinct simulation once per replication and re-cost it for
the price variants, with the tables each variant gives alone.

Which fields are prices is decided in one place, the run memo's keys (``costsim.runs.memo.usage_key``):
what no run reads. Simulations are counted where they happen, ``engine.run_option`` (one per option).
"""

from __future__ import annotations

import pandas as pd
import pytest
from helpers import bits, cloud, option_runs, owned, scenario, tiny_sweep_files

import costsim
from costsim.decisions.sensitivity import tornado
from costsim.runs.sweepfile import load_sweep
from costsim.runs.taskrun import TaskRunner, run_task, shared_runs, tasks

PRICES = "options.cloud.price_per_gpu_hour: [2.0, 3.0, 4.5]\n  economics.electricity_usd_per_kwh: [0.08, 0.2]\n"


@pytest.fixture
def simulated(monkeypatch) -> list[str]:
    return option_runs(monkeypatch)


def _sweep(tmp_path, grid: str, replications: int = 2):
    files = tiny_sweep_files(tmp_path, f"base: s.yaml\nseed: 3\nreplications: {replications}\ngrid:\n  {grid}")
    return load_sweep(files / "sw.yaml")


def test_price_variants_of_a_replication_form_one_group_and_a_size_another(tmp_path):
    spec = _sweep(tmp_path, "options.own.gpus: [16, 24]\n  " + PRICES.split("\n")[0] + "\n")
    todo = tasks(spec)
    groups = shared_runs(todo)
    # 2 sizes × 2 replications, each group the 3 prices of one size on one seed
    assert len(groups) == 4 and all(len(g) == 3 for g in groups)
    for g in groups:
        assert len({todo[i].seed for i in g}) == 1
        assert len({todo[i].scenario["options"][0]["gpus"] for i in g}) == 1


def test_groups_start_heaviest_first_ties_in_task_order(tmp_path):
    spec = _sweep(tmp_path, "workload.arrival_scale: [0.5, 2.0, 1.0]\n  options.cloud.price_per_gpu_hour: [2.0, 3.0]\n",
                  replications=1)
    todo = tasks(spec)
    scales = [[todo[i].scenario["workload"]["arrival_scale"] for i in g] for g in shared_runs(todo)]
    assert scales == [[2.0, 2.0], [1.0, 1.0], [0.5, 0.5]]  # the most jobs first
    spec = _sweep(tmp_path, "options.own.gpus: [16, 24]\n  options.cloud.price_per_gpu_hour: [2.0, 3.0]\n")
    todo = tasks(spec)
    assert shared_runs(todo) == sorted(shared_runs(todo))  # equal weights: the order of their first task


def test_a_price_only_sweep_simulates_once_per_replication_with_each_variants_own_tables(tmp_path, simulated):
    spec = _sweep(tmp_path, PRICES)
    res = costsim.sweep(spec, executor="local")
    assert len(res.runs) == 6 * 2 * 2  # 6 variants × 2 replications × 2 options
    assert sorted(simulated) == ["cloud", "cloud", "own", "own"]  # one simulation per replication
    simulated.clear()
    alone = pd.concat([run_task(t).summary for t in tasks(spec)], ignore_index=True)
    assert len(simulated) == 6 * 2 * 2
    assert bits(res.runs) == bits(alone)
    assert res.runs["total_cost_usd"].nunique() > 6  # the prices did change the costs


def test_a_sweep_starts_no_more_workers_than_it_has_groups(tmp_path, monkeypatch):
    """Six price variants of one replication are one simulation: one worker, not six (or the
    machine's cores) each started for nothing."""
    import costsim.runs.sweep as sweep_module
    from costsim.runs.executors import open_executor

    asked = []

    def recorded(executor, workers, address):
        asked.append(workers)
        return open_executor("local", 1, None)

    monkeypatch.setattr(sweep_module, "open_executor", recorded)
    costsim.sweep(_sweep(tmp_path, PRICES, replications=1), executor="processes", workers=4)
    assert asked == [1]
    asked.clear()
    costsim.sweep(_sweep(tmp_path, PRICES, replications=3), executor="processes", workers=2)
    assert asked == [2]


def test_a_sweep_mixing_sizes_and_prices_simulates_each_size_once_per_replication(tmp_path, simulated):
    spec = _sweep(tmp_path, "options.own.gpus: [16, 24]\n  options.cloud.price_per_gpu_hour: [2.0, 3.0]\n")
    costsim.sweep(spec, executor="local")
    assert len(simulated) == 2 * 2 * 2  # 2 sizes × 2 replications × 2 options


def test_a_group_runs_through_one_memo_and_its_runner_prepares_each_variant_once(tmp_path, simulated):
    spec = _sweep(tmp_path, PRICES, replications=1)
    todo = tasks(spec)
    runner = TaskRunner(kept=6)
    outs = runner(todo)
    assert runner.prepares == 6 and len(simulated) == 2
    for t, out in zip(todo, outs, strict=True):
        pd.testing.assert_frame_equal(out.summary, run_task(t).summary, check_exact=True)


def _one_node(folder):
    rows = [(10.0 * k, 8, 5.0) for k in range(40)]
    return scenario(folder, rows, [owned(gpus=8, capex_usd_per_gpu=10_000.0), cloud(price_per_gpu_hour=2.99)], 20.0)


PRICE_INPUTS = ["cloud_price", "capex_per_gpu", "electricity_usd_per_kwh", "pue", "depreciation_years",
                "cost_of_capital"]


def test_a_price_only_tornado_simulates_the_base_once_per_replication(tmp_path, simulated):
    sc = _one_node(tmp_path)
    shared = tornado(sc, replications=2, inputs=PRICE_INPUTS, executor="local")
    assert sorted(simulated) == ["cloud", "cloud", "own", "own"]  # 13 variants, one simulation per seed
    assert shared.table["swing_usd"].gt(0).all()
    simulated.clear()
    with_usage = tornado(sc, replications=2, inputs=[*PRICE_INPUTS, "lead_time_days"], executor="local")
    assert len(simulated) == 3 * 2 * 2  # the base and the lead time's two ends, each once per replication
    pd.testing.assert_frame_equal(with_usage.table[with_usage.table["input"] != "lead time"].reset_index(drop=True),
                                  shared.table, check_exact=True)
