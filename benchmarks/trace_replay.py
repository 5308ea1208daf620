"""Trace replay against a bare SimPy M/M/c loop over the same jobs, side by side in one process.

    .venv/bin/python benchmarks/trace_replay.py [--jobs 60000] [--repeats 5]

Prints wall times (best of the repeats) and the ratios costsim / bare loop for the engine alone
and for the whole ``costsim.simulate`` (engine + hourly tables + costs). Both models must also
agree: FIFO on c GPUs with 1-GPU jobs gives the same start times as SimPy's Resource.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers import bare_simpy_mmc, owned, scenario  # noqa: E402
from timing import best  # noqa: E402

import costsim  # noqa: E402
from costsim.engine import run as engine
from costsim.plan.resolve import resolve  # noqa: E402
from costsim.workload import jobs as workload  # noqa: E402
from costsim.workload.plan import plan_work  # noqa: E402
from costsim.workload.synth import JobGroup, make_trace  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=60_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    lam, servers = 3.0, 4  # per hour; M/M/4 at ρ = 0.75
    days = args.jobs / lam / 24
    trace = make_trace([JobGroup("mmc", per_day=lam * 24, gpus=1, mean_h=1.0, law="exponential")], days, seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        sc = scenario(Path(tmp), trace[["submit_h", "gpus", "duration_h"]].itertuples(index=False),
                      [owned(gpus=servers, gpus_per_node=servers, scheduler="fifo")], horizon_days=days * 2)
        jobs = workload.generate(sc)
        plan = resolve(sc)[0]
        work = plan_work(sc, jobs, plan)
        run_h = work.run_h

        t_bare, bare_start = best(lambda: bare_simpy_mmc(jobs.submit_h, run_h, servers), args.repeats)
        t_engine, rec = best(lambda: engine.run_option(plan, work, sc.horizon_h), args.repeats)
        t_full, res = best(lambda: costsim.simulate(sc), args.repeats)

    assert np.allclose(rec.start_h, bare_start, rtol=0, atol=1e-9), "costsim and SimPy disagree"
    n = len(jobs)
    print(f"trace replay, M/M/{servers} at rho=0.75, {n:,} jobs, best of {args.repeats}")
    print(f"{'':34}{'seconds':>10}{'us/job':>10}{'ratio':>8}")
    for name, t in [("bare SimPy loop (Resource)", t_bare), ("costsim engine", t_engine),
                    ("costsim.simulate (+ tables)", t_full)]:
        print(f"{name:34}{t:10.3f}{t / n * 1e6:10.2f}{t / t_bare:8.2f}")
    print(f"start times identical to SimPy's; mean wait {res.summary.queue_delay_mean_h[0]:.4f} h")


if __name__ == "__main__":
    main()
