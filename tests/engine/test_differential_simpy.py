"""Differential test: owned FIFO with 1-GPU jobs is SimPy's textbook Resource queue, job for job."""

import numpy as np
import pytest
from helpers import bare_simpy_mmc, jobs_of, owned, scenario

import costsim
from costsim.workload.synth import JobGroup, make_trace


@pytest.mark.slow
@pytest.mark.parametrize("servers, law", [(1, "exponential"), (4, "lognormal"), (7, "deterministic")])
def test_same_start_times_as_simpy_resource(tmp_path, servers, law):
    trace = make_trace([JobGroup("q", per_day=24 * 0.8 * servers, gpus=1, mean_h=1.0, cv=1.3, law=law)], 200, seed=servers)
    sc = scenario(tmp_path, trace[["submit_h", "gpus", "duration_h"]].itertuples(index=False),
                  [owned(gpus=servers, gpus_per_node=1, scheduler="fifo")], horizon_days=400)
    got = jobs_of(costsim.simulate(sc), "own").start_h.to_numpy()
    want = bare_simpy_mmc(trace.submit_h.to_numpy(), trace.duration_h.to_numpy(), servers)
    assert len(got) > 1000
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
