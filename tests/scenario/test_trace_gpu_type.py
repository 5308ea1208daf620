"""A trace job asking for a GPU type (the optional ``gpu_type`` column; empty: any): it runs only on
node groups of that type, a type the catalog lacks is an error at its file, column and line, and so
is a type an option cannot give it (the rule for classes); a trace without the column runs exactly
as before."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers import owned

import costsim
from costsim.runs.api import scenario_from_data
from costsim.scenario import ScenarioError, read_trace
from costsim.scenario import trace as T

POOL = {"name": "own", "kind": "owned", "lead_time_days": 0, "failures": None,
        "node_groups": [{"gpu_type": "H100", "nodes": 1, "gpus_per_node": 8},
                        {"gpu_type": "A100", "nodes": 1, "gpus_per_node": 8}]}
TABLES = ("jobs", "summary", "timeseries", "costs", "phases", "cashflow", "breakeven")


def run(folder, trace: str, options=(POOL,), **workload):
    (folder / "t.csv").write_text(trace)
    data = {"name": "t", "horizon_days": 2, "workload": {"trace": "t.csv", **workload}, "options": list(options)}
    return costsim.simulate(scenario_from_data(data, "t", folder))


def test_each_job_runs_on_the_type_it_asks_for(tmp_path):
    # One 8-GPU H100 node (group 0, tried first) and one 8-GPU A100 node; 8-GPU jobs. a1 takes the
    # A100s for 5 h; a2 waits for them (5 h to 6 h) though the H100s stand idle; h1 takes the H100s
    # at once (1 h to 3 h); x asks for any and takes the first free, the H100s at 3 h, to 4 h.
    jobs = run(tmp_path, "submit_h,gpus,duration_h,job_id,gpu_type\n"
                         "0,8,5,a1,A100\n0.5,8,1,a2,A100\n1,8,2,h1, H100 \n2,8,1,x,\n").jobs
    assert jobs.job_id.tolist() == ["a1", "a2", "h1", "x"]
    assert jobs.ran_on.tolist() == ["own:A100x8", "own:A100x8", "own:H100x8", "own:H100x8"]
    assert jobs.start_h.tolist() == [0.0, 5.0, 1.0, 3.0] and jobs.end_h.tolist() == [5.0, 6.0, 3.0, 4.0]


def test_the_same_jobs_without_types_take_the_first_free_group(tmp_path):
    # The control of the test above: untyped, a1 takes the first group (the H100s, 0 h to 5 h), a2
    # the A100s at once (0.5 h to 1.5 h) and h1 waits for them (1.5 h), the H100s being busy.
    jobs = run(tmp_path, "submit_h,gpus,duration_h,job_id\n0,8,5,a1\n0.5,8,1,a2\n1,8,2,h1\n").jobs
    assert jobs.ran_on.tolist() == ["own:H100x8", "own:A100x8", "own:A100x8"]
    assert jobs.start_h.tolist() == [0.0, 0.5, 1.5]


@pytest.mark.parametrize("cell", ["h100", "B300", "H100 x"])
def test_a_type_the_catalog_lacks_is_an_error_at_its_line(tmp_path, cell):
    path = tmp_path / "t.csv"
    path.write_text(f"submit_h,gpus,duration_h,gpu_type\n0,8,1,H100\n1,8,1,{cell}\n2,8,1,\n")
    with pytest.raises(ScenarioError) as err:
        read_trace(path)
    assert str(err.value) == (f"{path}:3: gpu_type: {cell!r} is not a catalog GPU type (H100, H200, B200, A100, L40S, "
                              "H20, H800, GB200, MI300X); leave it empty for any")


def test_a_type_no_node_group_has_is_one_error_at_its_first_line(tmp_path):
    with pytest.raises(ScenarioError) as err:
        run(tmp_path, "submit_h,gpus,duration_h,job_id,gpu_type\n0,8,1,a,H100\n1,8,1,b,B200\n2,8,1,c,B200\n")
    assert str(err.value) == (
        f"{tmp_path / 't.csv'}:3: gpu_type: job 'b' asks for B200 GPUs but option 'own' has node groups of H100, "
        "A100 only: trace jobs run only on the GPU type they ask for (leave the cell empty for any) (1 more such jobs)")


def test_a_type_other_than_a_single_type_options_is_an_error(tmp_path):
    # The rule for classes: every option must be able to give the job its type, so an A100 job
    # beside a rented H100 option is refused, though the pool has A100s.
    rent = {"name": "rent", "kind": "cloud", "gpu_type": "H100"}
    with pytest.raises(ScenarioError) as err:
        run(tmp_path, "submit_h,gpus,duration_h,gpu_type\n0,8,1,\n1,8,1,A100\n", options=(POOL, rent))
    assert str(err.value) == (
        f"{tmp_path / 't.csv'}:3: gpu_type: job 'trace-1' asks for A100 GPUs but option 'rent' has H100 GPUs: "
        "trace jobs run only on the GPU type they ask for (leave the cell empty for any)")


def test_a_job_no_group_of_its_type_holds_is_refused_at_the_node_groups(tmp_path):
    # 16 GPUs fit the 16-GPU A100 group but not the 8-GPU H100 group it asks for.
    pool = {**POOL, "node_groups": [{"gpu_type": "H100", "nodes": 1, "gpus_per_node": 8},
                                    {"gpu_type": "A100", "nodes": 2, "gpus_per_node": 8}]}
    run(tmp_path, "submit_h,gpus,duration_h,gpu_type\n0,16,1,\n", options=(pool,))  # any type: fits the A100s
    with pytest.raises(ScenarioError, match=(
            r"options\.0\.node_groups: job 'trace-0' needs 16 GPUs but none of option 'own''s node groups of H100 "
            r"holds it: 'own:H100x8' \(8 GPUs\): it could never run")):
        run(tmp_path, "submit_h,gpus,duration_h,gpu_type\n0,16,1,H100\n", options=(pool,))


def test_a_trace_without_the_column_runs_as_before(tmp_path):
    # Failures, backfill, RL and trace jobs on a pool of one H100 group (as the plain-owned-option
    # test of node groups): the trace without the column, with it empty and with it H100 on every
    # row give the same tables, and its table reads every job as any type without memory per job.
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"submit_h": np.sort(rng.uniform(0, 200, 60)), "gpus": rng.choice([1, 2, 4, 8, 16], 60),
                          "duration_h": rng.exponential(6.0, 60) + 0.1})
    fail = {"node_failures_per_1000_node_days": 100, "repair_hours": 6}
    plain = owned(gpus=32, gpus_per_node=8, scheduler="backfill", failures=fail)
    grouped = {k: v for k, v in plain.items() if k not in ("gpu_type", "gpus", "gpus_per_node")}
    grouped["node_groups"] = [{"gpu_type": "H100", "nodes": 4, "gpus_per_node": 8}]
    rl = {"name": "grpo", "arrivals_per_day": 6, "gpus": 8, "iterations": {"mean": 30, "cv": 0.5}, "model_params_b": 7}
    for option in (plain, grouped):
        runs = []
        for column in (None, "", "H100"):
            text = (frame if column is None else frame.assign(gpu_type=column)).to_csv(index=False)
            data = {"name": "t", "horizon_days": 12, "workload": {"trace": "t.csv", "classes": [rl]}, "options": [option]}
            (tmp_path / "t.csv").write_text(text)
            runs.append(costsim.simulate(scenario_from_data(data, "t", tmp_path)))
        for other in runs[1:]:
            for name in TABLES:
                pd.testing.assert_frame_equal(getattr(runs[0], name), getattr(other, name), obj=name)
        assert runs[0].summary.restarts.iloc[0] > 0  # failures did happen
    (tmp_path / "t.csv").write_text(frame.to_csv(index=False))
    table = read_trace(tmp_path / "t.csv")
    assert table.gpu_type_names() == [None] * 60 and table.gpu_type.strides == (0,)  # one int8 seen 60 times
    assert table.gpu_type.dtype == np.int8 and (table.gpu_type == T.ANY_GPU).all()


def test_a_row_shorter_than_the_header_asks_for_any_type_not_another_rows(tmp_path):
    """Its missing cell is read as empty (never as the code of a cell another row wrote)."""
    path = tmp_path / "t.csv"
    path.write_text("submit_h,gpus,duration_h,gpu_type\n0,8,1,A100\n1,8,1,H100\n2,8,1\n")
    assert read_trace(path).gpu_type_names() == ["A100", "H100", None]
