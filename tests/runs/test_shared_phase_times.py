"""Options whose GPUs and fabric are the same time a class's iterations once per run: the
phase times are shared between their work plans, and the tables equal those of a run that times
every option on its own."""

from __future__ import annotations

from helpers import same_tables
from paths import ROOT

import costsim
from costsim.models import rl
from costsim.runs import api
from costsim.workload import plan as work_plans
from tests.golden.regenerate import cut


def lab() -> costsim.Scenario:
    """The baseline over 30 days with two InfiniBand clusters of different sizes (one hardware),
    one on RoCE (another fabric) and on-demand H100s."""
    data = costsim.load_scenario(ROOT / "scenarios" / "baseline.yaml").model_dump(mode="json", exclude_unset=True)
    data.update(cut(data, 30), warmup_days=7)
    own = [o for o in data["options"] if o["kind"] == "owned"]
    roce = {**own[0], "name": "own-256-roce", "network": "roce"}
    data["options"] = [own[0], own[1], roce, next(o for o in data["options"] if o["kind"] == "cloud")]
    return costsim.scenario_from_data(data, "lab", ROOT / "scenarios")


def test_each_class_is_timed_once_per_distinct_hardware_and_the_tables_are_unchanged(monkeypatch):
    sc = lab()
    calls: list[rl.Hardware] = []
    real = rl.phase_times

    def counted(shape, hw, *lengths):
        calls.append(hw)
        return real(shape, hw, *lengths)

    monkeypatch.setattr(work_plans.rl, "phase_times", counted)
    shared = api.simulate(sc, seed=3)
    timed = len(calls)
    # own-256, own-384 and the cloud's 8-GPU InfiniBand instances are one hardware; RoCE's
    # fabric is slower: 2 distinct, each class timed once on each.
    distinct = {repr(hw) for hw in calls}
    assert len(distinct) == 2
    assert len({hw.inter_busbw_gb_s for hw in calls}) == 2
    classes = timed // len(distinct)  # the classes with jobs in these 30 days
    assert classes >= 2 and timed == classes * len(distinct)

    def unshared(scenario, jobs, part, *, shared=None):
        return work_plans.plan_work(scenario, jobs, part)

    calls.clear()
    monkeypatch.setattr(api, "plan_work", unshared)
    alone = api.simulate(sc, seed=3)
    assert len(calls) == classes * len(sc.options)  # every option times every class alone
    same_tables(shared, alone)
