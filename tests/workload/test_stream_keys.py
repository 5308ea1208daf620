"""Random streams are keyed by NAME: inserting, removing or reordering options or classes never
shifts another one's draws; the same seed gives the same tables in any process; job ids are
unique by construction (trace ids that could clash with generated ones are refused)."""

from __future__ import annotations

import hashlib
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import jobs_of
from hypothesis import given, settings
from hypothesis import strategies as st

import costsim
from costsim.workload import jobs as workload
from costsim.workload.rng import name_key, stream

CLASSES = [
    {"name": "grpo-7b", "arrivals_per_day": 2, "gpus": 16, "iterations": {"mean": 40, "cv": 0.5},
     "model_params_b": 7, "checkpoint": {"every_iterations": 10, "write_minutes": 5, "restart_minutes": 10}},
    {"name": "ppo-32b", "arrivals_per_day": 0.5, "gpus": 64, "iterations": {"mean": 20, "cv": 0.3},
     "model_params_b": 32, "checkpoint": {"every_iterations": 5, "write_minutes": 5, "restart_minutes": 10}},
]
# Every per-option stream is exercised: node failures (owned and cloud), spot preemptions, random
# provisioning delays and stock-outs; a hybrid refers to other options by name.
FAIL = {"node_failures_per_1000_node_days": 200, "repair_hours": 12}
OPTIONS = [
    {"name": "own-128", "kind": "owned", "gpu_type": "H100", "gpus": 128, "lead_time_days": 0, "failures": FAIL},
    {"name": "spot", "kind": "cloud", "gpu_type": "H100", "pricing": "spot", "preemptions_per_instance_day": 2.0,
     "reacquire_delay_h": 0.5, "provisioning_delay_h": 0.5, "provisioning_delay_cv": 1.0, "failures": FAIL},
    {"name": "od-flaky", "kind": "cloud", "gpu_type": "H100", "provisioning_delay_h": 0.5,
     "provisioning_delay_cv": 1.0, "stockout": {"probability": 0.3, "min_gpus": 64, "retry_h": 1}},
    {"name": "hybrid", "kind": "hybrid", "base": "own-128", "burst": "spot", "max_wait_h": 2},
]
NEWCOMERS = [
    {"name": "zz-new-owned", "kind": "owned", "gpu_type": "H100", "gpus": 256, "lead_time_days": 0, "failures": FAIL},
    {"name": "aa-new-spot", "kind": "cloud", "gpu_type": "H100", "pricing": "spot",
     "preemptions_per_instance_day": 1.0, "provisioning_delay_h": 1.0, "provisioning_delay_cv": 0.5},
]


def build(tmp: Path, options=OPTIONS, classes=CLASSES, days=40, **workload_extra) -> costsim.Scenario:
    data = {"name": "keys", "seed": 3, "horizon_days": days, "options": list(options),
            "workload": {"classes": list(classes), **workload_extra}}
    return costsim.scenario_from_data(data, "test", tmp)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return costsim.simulate(build(tmp_path_factory.mktemp("ref")))


def test_name_key_is_blake2b_of_the_utf8_name():
    # The definition, written out: first 8 bytes of BLAKE2b-512, little-endian; never hash().
    for name in ("own-256", "grpo-7b", "ünï-ß", ""):
        digest = hashlib.blake2b(name.encode("utf-8"), digest_size=64).digest()
        assert name_key(name) == sum(b << (8 * i) for i, b in enumerate(digest[:8]))
    assert name_key("own-256") != name_key("own-384")


def test_stream_depends_on_the_name_not_on_anything_else():
    a = stream(7, "failures", "own-256").random(4)
    assert np.array_equal(a, stream(7, "failures", "own-256").random(4))
    assert not np.array_equal(a, stream(7, "failures", "own-384").random(4))
    assert not np.array_equal(a, stream(7, "preemptions", "own-256").random(4))
    assert not np.array_equal(a, stream(8, "failures", "own-256").random(4))
    # The trace's scaling stream is its own kind: no class name can share it.
    t = stream(7, "trace_scaling").random(4)
    assert not np.array_equal(t, stream(7, "arrivals", "trace_scaling").random(4))


def test_inserting_an_option_first_leaves_the_others_unchanged(tmp_path, reference):
    # The issue's example: a new option in front must not move own-128's delays.
    res = costsim.simulate(build(tmp_path, [NEWCOMERS[0], *OPTIONS]))
    for opt in OPTIONS:
        pd.testing.assert_frame_equal(jobs_of(res, opt["name"]), jobs_of(reference, opt["name"]))


@settings(max_examples=6)
@given(order=st.permutations(range(len(OPTIONS))), insert=st.one_of(st.none(), st.integers(0, len(OPTIONS))),
       newcomer=st.sampled_from(NEWCOMERS))
def test_property_options_inserted_or_reordered_leave_every_other_option_unchanged(
        tmp_path_factory, reference, order, insert, newcomer):
    options = [OPTIONS[i] for i in order]
    if insert is not None:
        options.insert(insert, newcomer)
    res = costsim.simulate(build(tmp_path_factory.mktemp("perm"), options))
    for opt in OPTIONS:
        pd.testing.assert_frame_equal(jobs_of(res, opt["name"]), jobs_of(reference, opt["name"]))


def by_id(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("job_id").reset_index(drop=True)


def test_reordering_classes_leaves_every_option_unchanged(tmp_path, reference):
    res = costsim.simulate(build(tmp_path, classes=CLASSES[::-1]))
    for opt in OPTIONS:
        pd.testing.assert_frame_equal(by_id(jobs_of(res, opt["name"])), by_id(jobs_of(reference, opt["name"])))


EXTRA_CLASS = {"name": "extra-1b", "arrivals_per_day": 1, "gpus": 8, "iterations": 10, "model_params_b": 1}


@settings(max_examples=8)
@given(order=st.permutations(range(len(CLASSES))), insert=st.integers(0, len(CLASSES)))
def test_property_classes_inserted_or_reordered_keep_every_other_class_s_draws(tmp_path_factory, order, insert):
    # A new class adds jobs, so it rightly changes queues; what must not change is the other
    # classes' draws: arrival times, iteration counts and every iteration's response lengths.
    folder = tmp_path_factory.mktemp("cls")
    ref = workload.generate(build(folder))
    classes = [CLASSES[i] for i in order]
    classes.insert(insert, EXTRA_CLASS)
    new = workload.generate(build(folder, classes=classes))
    for cls in CLASSES:
        a, b = np.flatnonzero(ref.job_class == cls["name"]), np.flatnonzero(new.job_class == cls["name"])
        assert list(ref.job_id[a]) == list(new.job_id[b])
        assert np.array_equal(ref.submit_h[a], new.submit_h[b]) and np.array_equal(ref.iterations[a], new.iterations[b])
        for i, j in zip(a, b, strict=True):
            ra = slice(ref.iter_start[i], ref.iter_start[i] + ref.iterations[i])
            rb = slice(new.iter_start[j], new.iter_start[j] + new.iterations[j])
            assert np.array_equal(ref.length_sum[ra], new.length_sum[rb])
            assert np.array_equal(ref.length_max[ra], new.length_max[rb])


def _tables_in_a_worker(folder: str, seed: int) -> dict[str, pd.DataFrame]:
    res = costsim.simulate(build(Path(folder)), seed=seed)
    return {"jobs": res.jobs, "summary": res.summary, "timeseries": res.timeseries}


@pytest.mark.slow
def test_identical_tables_in_process_and_in_a_process_pool(tmp_path):
    # Spawned workers start fresh interpreters, each with its own salt for hash(): a stream keyed
    # through hash() would differ between them; name_key's BLAKE2b does not.
    local = [_tables_in_a_worker(str(tmp_path), seed) for seed in (1, 2)]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        remote = list(pool.map(_tables_in_a_worker, [str(tmp_path)] * 2, [1, 2]))
    for here, there in zip(local, remote, strict=True):
        for name in here:
            pd.testing.assert_frame_equal(here[name], there[name])


# -- job ids ------------------------------------------------------------------------------------

def trace_scenario(tmp: Path, ids: list[str], scale: float = 1.0, classes=CLASSES) -> costsim.Scenario:
    rows = pd.DataFrame({"submit_h": np.arange(len(ids), dtype=float), "gpus": 8, "duration_h": 2.0, "job_id": ids})
    rows.to_csv(tmp / "trace.csv", index=False)
    return build(tmp, OPTIONS[:1], classes, trace="trace.csv", arrival_scale=scale)


def test_a_trace_id_in_a_generated_form_is_refused_on_its_line(tmp_path):
    with pytest.raises(costsim.ScenarioError) as err:
        trace_scenario(tmp_path, ["run-a", "grpo-7b-00000", "run-b"])
    msg = str(err.value)
    assert "trace.csv:3: job_id:" in msg and "'grpo-7b-00000'" in msg and "class 'grpo-7b'" in msg


def test_a_trace_id_in_the_copy_form_is_refused_only_when_copies_are_made(tmp_path):
    trace_scenario(tmp_path, ["a", "a~1"], scale=1.0)  # no copies: no clash possible
    with pytest.raises(costsim.ScenarioError, match=r"trace.csv:3: job_id: 'a~1' ends like the ids of the copies"):
        trace_scenario(tmp_path, ["a", "a~1"], scale=2.0)


def test_ids_that_only_resemble_generated_ones_are_accepted(tmp_path):
    # 4 digits, another class's name, a longer name: none can equal a generated id.
    trace_scenario(tmp_path, ["grpo-7b-0001", "grpo-00000", "grpo-7b-x-00000", "ppo-32b-1"])


def test_job_ids_are_unique_with_a_scaled_trace_and_classes(tmp_path):
    sc = trace_scenario(tmp_path, [f"job{i}" for i in range(30)] + ["job1-00000"], scale=2.5)
    jobs = costsim.simulate(sc).jobs
    assert len(jobs) > 31 * 2 and not jobs.duplicated(["option", "job_id"]).any()
