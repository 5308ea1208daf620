"""The optimiser and the tornado on the executors (``costsim.decisions.search``): the same answer
and tables from this process, a process pool and Dask; the bisection's guesses, run by idle
workers, never change the answer, and this process never runs one; configurations that differ only
in a price share their simulation.

Simulations are counted where they happen, ``engine.run_option`` (one per option), in this process.
"""

from __future__ import annotations

import contextlib

import pandas as pd
import pytest
from helpers import bits, cloud, option_runs, owned, scenario

from costsim.decisions.optimize import Optimum, optimize
from costsim.decisions.sensitivity import tornado
from costsim.runs.executors import Lanes
from costsim.scenario import dump_scenario
from costsim.workload.synth import JobGroup, make_trace

TARGET = ["p95_delay_h<=0.05"]
VARY = ["options.own.gpus=8..40"]  # 1-GPU nodes: 33 levels, the grid 8, 16, 24, 32, 40, then 3 bisection steps


def _mmc(folder, days: float = 12.0) -> str:
    """Poisson arrivals of 1-GPU jobs (8 an hour, 1 h each) on an owned pool of 1-GPU nodes and
    on-demand: M/M/c, whose p95 wait crosses the target between 8 and 16 servers."""
    trace = make_trace([JobGroup("mm", per_day=8 * 24, gpus=1, mean_h=1.0, law="exponential")], days, seed=1)
    sc = scenario(folder, trace[["submit_h", "gpus", "duration_h"]].itertuples(index=False),
                  [owned(gpus=8, gpus_per_node=1, scheduler="fifo"), cloud(price_per_gpu_hour=60.0)],
                  horizon_days=days * 1.05, warmup_days=days * 0.05)
    path = folder / "mmc.yaml"
    path.write_text(dump_scenario(sc))
    return str(path)


@pytest.fixture
def simulated(monkeypatch) -> list[str]:
    return option_runs(monkeypatch)


def same_answer(a: Optimum, b: Optimum) -> None:
    assert (a.values, a.option, a.meets, a.runs, a.stopped, a.range_ends) == \
        (b.values, b.option, b.meets, b.runs, b.stopped, b.range_ends)
    pd.testing.assert_series_equal(pd.Series(a.metrics), pd.Series(b.metrics), check_exact=True)
    pd.testing.assert_frame_equal(pd.DataFrame(a.intervals), pd.DataFrame(b.intervals), check_exact=True)
    assert bits(a.evaluated) == bits(b.evaluated) and bits(a.frontier) == bits(b.frontier)


class _Ran:
    def __init__(self, value, error=None):
        self.value, self.error = value, error


class Eager(Lanes):
    """Four idle workers in this process: a task runs as soon as it is started, so every guess the
    search queues runs, as on a pool whose workers are idle."""

    slots = 4

    def start(self, fn, task):
        try:
            return _Ran(fn(task))
        except Exception as error:  # a worker's error comes back with its result, as a pool's
            return _Ran(None, error)

    def wait(self, handles):
        return [next(iter(handles))]

    def result(self, handle):
        if handle.error is not None:
            raise handle.error
        return handle.value

    def abandon(self, handles):
        return []


def test_guesses_run_by_idle_workers_change_nothing_and_this_process_runs_none(tmp_path, simulated, monkeypatch):
    path = _mmc(tmp_path)
    here = optimize(path, TARGET, VARY, replications=2, executor="local")
    stages = list(here.evaluated["stage"])
    assert stages.count("bisection") == 3 * 2 and here.meets  # 3 steps, two options each
    assert len(simulated) == here.runs * 2  # every simulation recorded: none guessed in vain
    simulated.clear()
    monkeypatch.setattr("costsim.decisions.optimize.open_executor", lambda *args: contextlib.nullcontext(Eager()))
    eager = optimize(path, TARGET, VARY, replications=2, executor="local")
    same_answer(eager, here)
    # The first two steps guessed both of the next step's midpoints (2 replications each), and
    # the guesses the search went past ran in vain, beside the 16 runs recorded.
    assert here.runs < len(simulated) // 2 <= here.runs + 2 * 2 * 2


def test_a_guess_that_fails_stops_nothing_unless_the_search_comes_to_want_it(tmp_path, monkeypatch):
    """On a pool a guess may finish, and fail, before the step the search waits for: its error
    belongs to the guess, raised only were that configuration wanted, so every level the search
    never wants failing leaves the answer as it is."""
    from costsim.runs.taskrun import TaskRunner

    path = _mmc(tmp_path)
    here = optimize(path, TARGET, VARY, replications=2, executor="local")
    wanted = {row["options.own.gpus"] for _, row in here.evaluated.iterrows()}
    run = TaskRunner.__call__

    def failing_unwanted(self, group):
        gpus = {next(o for o in t.scenario["options"] if o["kind"] == "owned")["gpus"] for t in group}
        if gpus - wanted:
            raise RuntimeError(f"a run-time failure at gpus={sorted(gpus)}")
        return run(self, group)

    class FailingFirst(Eager):
        """A failure comes back first, as a pool's quick failure would, before the step waited for."""

        def wait(self, handles):
            return [next((h for h in handles if h.error is not None), next(iter(handles)))]

    monkeypatch.setattr(TaskRunner, "__call__", failing_unwanted)
    monkeypatch.setattr("costsim.decisions.optimize.open_executor", lambda *args: contextlib.nullcontext(FailingFirst()))
    same_answer(optimize(path, TARGET, VARY, replications=2, executor="local"), here)


def test_a_trace_edited_during_the_search_is_refused_not_mixed_in(tmp_path):
    """Each run checks its trace against the bytes the search started with, as a sweep's does."""
    from costsim.scenario import ScenarioError

    path = _mmc(tmp_path, days=4.0)
    trace = tmp_path / "trace.csv"

    def edit_after_the_first_run(done, total):
        if done == 1:
            trace.write_text(trace.read_text() + "95.0,1,1.0\n")

    with pytest.raises(ScenarioError, match="changed while the sweep ran"):
        optimize(path, TARGET, VARY, replications=2, executor="local", progress=edit_after_the_first_run)


class TwoLanes(Lanes):
    """Two workers in this process that run a task when it is waited for (the first started that
    has not run): a lane freed while a step's replications are out goes to the guess started next."""

    slots = 2

    def __init__(self):
        self.started: list[tuple[int, ...]] = []
        self.events: list[tuple[str, int]] = []  # ("start" | "done", the owned option's GPUs)

    def start(self, fn, task):
        self.started.append(tuple(t.scenario["options"][0]["gpus"] for t in task))
        self.events.append(("start", self.started[-1][0]))
        return _Ran((fn, task))

    def wait(self, handles):
        first = next(iter(handles))
        if isinstance(first.value, tuple):
            fn, task = first.value
            first.value = [fn(task)]
            self.events.append(("done", task[0].scenario["options"][0]["gpus"]))
        return [first]

    def result(self, handle):
        return handle.value[0]

    def abandon(self, handles):
        return []


def test_a_lane_freed_mid_step_takes_the_guess_the_runs_back_point_to(tmp_path, monkeypatch):
    path = _mmc(tmp_path)
    lanes = TwoLanes()
    monkeypatch.setattr("costsim.decisions.optimize.open_executor", lambda *args: contextlib.nullcontext(lanes))
    best = optimize(path, TARGET, VARY, replications=2, executor="local")
    sizes = [g for (g,) in lanes.started]
    bisected = [g for g in best.evaluated[best.evaluated["stage"] == "bisection"]["options.own.gpus"].unique()]
    # Every guess started was taken (none of 10 or 15, the other ways the steps could have gone):
    # the first replication back of each step pointed the right way.
    assert set(sizes) - {8, 16, 24, 32, 40} == set(bisected) == {12, 13, 14} and len(sizes) == best.runs
    # The lane the grid's last run left idle started the first midpoint, placed by the grid's runs back.
    last_grid = max(i for i, e in enumerate(lanes.events) if e == ("done", 40))
    assert lanes.events.index(("start", 12)) < last_grid


def test_a_price_only_search_simulates_once_per_replication(tmp_path, simulated):
    path = _mmc(tmp_path, days=4.0)
    best = optimize(path, [], ["options.cloud.price_per_gpu_hour=2..8"], replications=2, executor="local")
    assert best.runs == 5 * 2 and list(best.evaluated["stage"]).count("grid") == 10  # 5 prices × 2 options
    assert sorted(simulated) == ["cloud", "cloud", "own", "own"]  # one simulation per replication
    costs = best.evaluated[best.evaluated["option"] == "cloud"]["fair_total_usd"]
    assert costs.is_monotonic_increasing and costs.nunique() == 5


@pytest.mark.slow
def test_the_same_answer_and_tornado_from_this_process_a_pool_and_dask(tmp_path):
    distributed = pytest.importorskip("distributed", reason="dask[distributed] not installed (pip install 'costsim[dask]')")
    path = _mmc(tmp_path, days=6.0)
    sc = scenario(tmp_path, [(10.0 * k, 8, 5.0) for k in range(40)],
                  [owned(gpus=8, capex_usd_per_gpu=10_000.0), cloud(price_per_gpu_hour=2.99)], 20.0)
    inputs = ["cloud_price", "electricity_usd_per_kwh", "lead_time_days", "arrival_scale"]
    # One Dask cluster serves both searches, its two workers threads of this process: what is checked
    # here is the search's use of Dask (tasks, lanes, results back in order); tables crossing to
    # Dask worker processes are checked by tests/runs/test_sweep_run.py, and to other processes by
    # the process pool above.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  dashboard_address=None, silence_logs=40) as cluster:
        at = {"local": {}, "processes": {"workers": 2}, "dask": {"address": cluster.scheduler_address}}
        answers = {ex: optimize(path, TARGET, VARY, replications=2, executor=ex, **kw) for ex, kw in at.items()}
        tables = {ex: tornado(sc, replications=2, inputs=inputs, executor=ex, **kw) for ex, kw in at.items()}
    same_answer(answers["processes"], answers["local"])
    same_answer(answers["dask"], answers["local"])
    for ex in ("processes", "dask"):
        pd.testing.assert_frame_equal(tables[ex].table, tables["local"].table, check_exact=True)
        pd.testing.assert_frame_equal(tables[ex].breakeven, tables["local"].breakeven, check_exact=True)
