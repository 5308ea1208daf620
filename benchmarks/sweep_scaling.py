"""Parallel efficiency of the sweep executors, side by side in one process.

    .venv/bin/python benchmarks/sweep_scaling.py [--days 120] [--replications 5] [--workers 2] [--repeats 1]

The same tasks on each executor, the sweep the issue names: 40 variants of the baseline scenario
(scenarios/baseline.yaml: own-384 at 8 sizes from 256 to 704 GPUs × arrival scale 0.8, 0.9, 1.0,
1.1 and 1.2) × ``--replications`` 5 = 200 tasks, over ``--days`` (120 by default: about half a
second per task, so the benchmark takes about five minutes on 2 cores; 365, the baseline's year,
takes three times as long). Shorter horizons make the tasks shorter but not the executors' start-up
(a second or two: fresh interpreters importing costsim), so the ratios get worse.
Wall time of the whole ``costsim.sweep`` call (no output folder), best of ``--repeats``:

- ``local``: one process, the tasks one after another;
- ``processes``: the process pool with ``--workers`` workers, its start-up included;
- ``dask``: a Dask LocalCluster of ``--workers`` single-threaded processes, started and stopped
  by the sweep (start-up included), and the same cluster already running (``address=``), started
  with the configuration the sweep's own uses (``executors.LOCAL_CLUSTER_CONFIG``).

Prints parallel efficiency = T_local / (workers × T_processes) (1.0 is perfect scaling) and the
Dask times ÷ the process pool's. The three return identical tables (checked). No assertion on time:
the README quotes the ratios. Run it on an otherwise idle machine: with another busy process on two
cores each worker gets two thirds of one, and the ratios say more about that process than about
the executors (the benchmark warns when the load average is above 0.5 at the start).
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path

import pandas as pd

import costsim
from costsim.runs.sweepfile import sweep_from_sets

BASELINE = Path(__file__).resolve().parent.parent / "scenarios" / "baseline.yaml"
GRID = ["options.own-384.gpus=256,320,384,448,512,576,640,704", "workload.arrival_scale=0.8,0.9,1.0,1.1,1.2"]


def timed(run, repeats: int):
    """(best wall time in seconds, the last result) of ``repeats`` calls."""
    best, result = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - t)
    return best, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=float, default=120.0, help="horizon of every variant (the baseline's: 365)")
    ap.add_argument("--replications", type=int, default=5)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask rows")
    args = ap.parse_args()

    spec = sweep_from_sets(BASELINE, [f"horizon_days={args.days:g}", *GRID], replications=args.replications, seed=0)
    n, w = len(spec.variants) * spec.replications, args.workers
    print(f"sweep scaling: baseline at {args.days:g} days, {len(spec.variants)} variants × {spec.replications} "
          f"replications = {n} tasks, {w} workers, {os.cpu_count()} cores, best of {args.repeats}")

    busy = os.getloadavg()[0]
    if busy > 0.5:  # parallel efficiency is meaningless when the cores are shared
        print(f"warning: load average {busy:.2f} before starting: other processes are using the cores, so the "
              "ratios below understate the executors")
    rows = []
    t_local, local = timed(lambda: costsim.sweep(spec, executor="local"), args.repeats)
    rows.append(("local (one process)", t_local, None))
    t_pool, pool = timed(lambda: costsim.sweep(spec, executor="processes", workers=w), args.repeats)
    rows.append(("process pool", t_pool, t_local / (w * t_pool)))
    same = [pool]
    if not args.no_dask:
        t_dask, started = timed(lambda: costsim.sweep(spec, executor="dask", workers=w), args.repeats)
        rows.append(("Dask LocalCluster (started by sweep)", t_dask, t_local / (w * t_dask)))
        import dask
        import distributed

        from costsim.runs.executors import LOCAL_CLUSTER_CONFIG

        with dask.config.set(LOCAL_CLUSTER_CONFIG), distributed.LocalCluster(n_workers=w, threads_per_worker=1, processes=True, dashboard_address=None,
                                      silence_logs=logging.ERROR) as cluster:
            t_warm, warm = timed(lambda: costsim.sweep(spec, executor="dask", address=cluster.scheduler_address),
                                 args.repeats)
        rows.append(("Dask LocalCluster (already running)", t_warm, t_local / (w * t_warm)))
        same += [started, warm]
    for other in same:
        pd.testing.assert_frame_equal(other.runs, local.runs, check_exact=True)

    print(f"{'':40}{'seconds':>9}{'s/task':>8}{'efficiency':>12}{'÷ pool':>8}")
    for name, t, eff in rows:
        print(f"{name:40}{t:9.2f}{t / n:8.3f}{'' if eff is None else f'{eff:.2f}':>12}{t / t_pool:8.2f}")
    print("tables identical from every executor")


if __name__ == "__main__":  # the process pool and Dask start fresh interpreters that import this file
    main()
