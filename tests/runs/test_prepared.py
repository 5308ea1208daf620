"""A scenario is prepared (resolved, its trace read, every check run: ``costsim.prepare``) once per
entry point and passed down: ``simulate`` runs a ``Prepared`` as it was prepared, with the same
tables as from the scenario itself, and the report's replications, a sweep's replications of a
variant, the dashboard's workers and the verdict's flip search prepare each distinct scenario once
however many runs they make of it (counted by wrapping ``costsim.plan.prepare.prepare``)."""

from __future__ import annotations

import pickle
import shutil

import pandas as pd
import pytest
from helpers import halve_trace, lab_trace_copy, same_tables, tiny_sweep_files
from paths import ROOT

import costsim
from costsim.errors import ArgumentError
from costsim.plan.prepare import Prepared, attached, detached
from costsim.report.build import replications_of
from costsim.runs import api, sweep
from costsim.runs.sweepfile import load_sweep
from costsim.runs.taskrun import TaskRunner
from costsim.scenario import Scenario, ScenarioError


@pytest.fixture
def prepares(monkeypatch) -> list[str]:
    """The names of the scenarios ``api`` prepares from now on, one entry per preparation (loading
    or building a checked scenario prepares it too: a test clears the list after it)."""
    seen: list[str] = []
    real = api.prepare_plan

    def counted(scenario, **kw):
        seen.append(scenario.name)
        return real(scenario, **kw)

    monkeypatch.setattr(api, "prepare_plan", counted)
    return seen


def short(name: str, days: int = 20) -> Scenario:
    base = costsim.load_scenario(ROOT / "scenarios" / f"{name}.yaml")
    return costsim.scenario_from_data({**base.model_dump(mode="json"), "horizon_days": days, "warmup_days": 1},
                                      name, base.base_dir)


# -- simulate on a Prepared ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["baseline", "train-and-serve", "lab-trace", "hybrid-burst"])
def test_a_prepared_scenario_runs_to_the_scenarios_own_tables(name):
    sc = short(name)
    ready = costsim.prepare(sc)
    assert isinstance(ready, Prepared) and ready.scenario == sc
    for seed in (None, 7):
        same_tables(costsim.simulate(ready, seed=seed), costsim.simulate(sc, seed=seed))


def test_what_a_prepared_scenario_shares_between_runs_is_read_only():
    ready = costsim.prepare(short("train-and-serve"))
    assert ready.serving_demand is not None and not ready.serving_demand.flags.writeable


def test_prepare_takes_a_path_and_refuses_what_simulate_refuses(tmp_path):
    path = ROOT / "scenarios" / "baseline.yaml"
    assert costsim.prepare(path).scenario == costsim.load_scenario(path)
    with pytest.raises(ArgumentError, match=r"prepare\(\): scenario: got a dict"):
        costsim.prepare({"name": "x"})
    with pytest.raises(ArgumentError, match=r"prepare\(\): scenario: must be a costsim.Scenario"):
        costsim.prepare(3)
    with pytest.raises(ScenarioError, match="not found"):
        costsim.prepare(tmp_path / "missing.yaml")
    # A Scenario built without validation is validated again, as simulate does.
    with pytest.raises(ScenarioError, match="options"):
        costsim.prepare(Scenario.model_construct(name="x", horizon_days=3))


# -- each entry point prepares a scenario once ---------------------------------------------------------

def test_the_reports_replications_prepare_their_scenario_once(prepares):
    sc = short("baseline")
    prepares.clear()  # loading it checked it
    runs = replications_of(sc, 4, 11)
    assert prepares == ["baseline"]
    same_tables(runs[3], costsim.simulate(sc, seed=runs[3].seed))


def test_a_sweep_prepares_each_variant_once_however_many_replications(tmp_path, prepares):
    files = tiny_sweep_files(tmp_path, "base: s.yaml\nseed: 3\nreplications: 4\ngrid:\n  options.own.gpus: [16, 24]\n")
    spec = load_sweep(files / "sw.yaml")
    prepares.clear()  # loading the sweep checked each variant
    res = costsim.sweep(spec, executor="local")
    assert prepares == ["tiny", "tiny"]  # two variants, four replications each
    assert len(res.runs) == 2 * 4 * 2
    for v in spec.variants:  # the same tables as simulating each task's scenario alone
        for r, seed in enumerate(res.runs[res.runs.variant == v.id].seed.unique()):
            alone = costsim.simulate(v.scenario, seed=int(seed)).summary
            got = res.runs[(res.runs.variant == v.id) & (res.runs.replication == r)].drop(
                columns=["variant", "replication", "seed"]).reset_index(drop=True)
            pd.testing.assert_frame_equal(got, alone)


def test_a_task_runner_prepares_an_edited_trace_again(tmp_path, prepares):
    sc = short("lab-trace", days=10)
    folder = tmp_path / "s"
    shutil.copytree(ROOT / "scenarios" / "traces", folder / "traces")
    sc = costsim.scenario_from_data(sc.model_dump(mode="json"), "t", folder)
    task = sweep.Task("v000", 0, 5, sc.model_dump(mode="json"), str(folder), "t")
    runner = TaskRunner()  # what it keeps is its own: another runner prepares afresh
    prepares.clear()
    runner.run(task)
    runner.run(task)
    assert len(prepares) == 1 and runner.prepares == 1
    trace = folder / sc.workload.trace
    trace.write_text(trace.read_text())  # the same bytes, written again: another file identity
    runner.run(task)
    assert len(prepares) == 2
    TaskRunner().run(task)
    assert len(prepares) == 3


def test_a_runner_sent_to_a_worker_keeps_nothing_prepared(tmp_path):
    sc = short("baseline", days=5)
    task = sweep.Task("v000", 0, 5, sc.model_dump(mode="json"), str(sc.base_dir), "t")
    runner = TaskRunner(kept=3)
    runner.run(task)
    copy = pickle.loads(pickle.dumps(runner))
    assert (copy.kept, copy.prepares) == (3, 0) and len(pickle.dumps(runner)) < 200
    pd.testing.assert_frame_equal(copy.run(task).summary, runner.run(task).summary)


def test_the_verdicts_runs_prepare_each_distinct_scenario_once(prepares):
    sc = short("lab-trace", days=60)  # a verdict whose utilisation flip is searched
    prepares.clear()
    runs = replications_of(sc, 3, sc.seed)
    flipped: list[str] = []

    def simulate(scenario, seed):
        flipped.append(scenario.model_dump_json())
        return api.simulate(scenario, seed=seed)

    costsim.decide(runs, simulate=simulate)
    assert flipped, "the flip search ran no simulation"
    assert len(set(flipped)) == len(flipped)  # each factor tried is a scenario of its own ...
    assert len(prepares) == 1 + len(flipped)  # ... prepared once, as the replications' one scenario


@pytest.mark.parametrize("name", ["baseline", "lab-trace"])
def test_the_dashboard_prepares_once_and_sends_its_workers_the_prepared_scenario(monkeypatch, prepares, name):
    from costsim.dashboard import bounded

    sent = []

    def batch(ready, seeds, *rest):
        sent.append(ready)
        return [bounded.simulate_in_worker(pickle.loads(pickle.dumps((ready, s))), Kept()) for s in seeds]

    class Kept:  # a worker's kept objects (costsim.runs.isolated_child.Child), in this process
        def kept(self, name, make):
            return make()

    monkeypatch.setattr(bounded, "_simulate_batch", batch)
    sc = short(name)
    prepares.clear()
    blobs = bounded.simulate_many(sc, [1, 2, 3, 4], bounded.Limits(workers=2))
    assert prepares == [name] and len(sent) == 2 and all(isinstance(r, Prepared) for r in sent)
    assert all(r.trace is None for r in sent)  # a trace is read by each worker, never pickled to it
    same_tables(pickle.loads(blobs[2]), costsim.simulate(sc, seed=3))


def test_a_prepared_scenario_sent_without_its_trace_reads_the_file_it_was_prepared_from(tmp_path):
    sc = lab_trace_copy(tmp_path)
    ready = costsim.prepare(sc)
    sent = detached(ready)
    assert sent.trace is None and attached(sent).trace is not None and attached(ready) is ready
    same_tables(costsim.simulate(sent, seed=2), costsim.simulate(ready, seed=2))
    halve_trace(sc)
    with pytest.raises(ScenarioError, match="changed after the scenario was checked"):
        costsim.simulate(sent)
