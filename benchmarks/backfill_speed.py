"""EASY backfill against FIFO per job, and FIFO against a bare SimPy loop, side by side in one process.

    .venv/bin/python benchmarks/backfill_speed.py [--repeats 3]
    COSTSIM_BENCH_QUICK=1 .venv/bin/python benchmarks/backfill_speed.py   # 100,000 jobs only (~1 min)

1. An owned cluster of 4,096 GPUs (512 nodes of 8) replays generated traces of 100,000 and
   1,000,000 jobs at 75 % and 90 % offered load; each trace runs under ``fifo`` and ``backfill``
   (``costsim.engine.run_option``, the engine alone), alternated so a busy spell of the machine hits
   both. The job mix (Poisson arrivals, lognormal run times, cv 1.5) is a lab's: half the jobs take
   one GPU for an hour, one in two hundred 256 GPUs for 12 hours (``MIX``); 11 % of the jobs span
   several nodes (16 to 256 GPUs) and 12 % take a whole node, so backfill has gang jobs to reserve
   for. The 256-GPU jobs carry 40 % of the GPU-hours, so a trace's realised load (printed) differs
   from the load it was drawn at by a few points on 100,000 jobs.
2. The 1-GPU M/M/4 benchmark of ``trace_replay.py`` (ρ = 0.75): the engine under ``fifo`` against
   the textbook SimPy loop (``tests/helpers.bare_simpy_mmc``), with the same start times.

Prints per-job microseconds and the ratios, against the targets of issue 16: backfill at most 3×
FIFO per job, FIFO at most 1.2× the bare SimPy loop. Times are the best of ``--repeats`` (1M-job
traces: one run of each, FIFO then backfill, so the ratio there carries the machine's noise: run it
on an idle machine).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers import bare_simpy_mmc, owned, scenario  # noqa: E402
from timing import best  # noqa: E402

from costsim.engine import run as engine
from costsim.plan.resolve import resolve  # noqa: E402
from costsim.workload import jobs as workload  # noqa: E402
from costsim.workload.plan import plan_work  # noqa: E402
from costsim.workload.synth import JobGroup, make_trace  # noqa: E402

GPUS, GPN = 4096, 8
MIX = [(1, 0.5, 1.0), (2, 0.15, 2.0), (4, 0.12, 2.0), (8, 0.12, 4.0), (16, 0.06, 4.0), (32, 0.03, 6.0),
       (64, 0.015, 8.0), (256, 0.005, 12.0)]  # (GPUs, share of jobs, mean run time in hours)
BACKFILL_TARGET, FIFO_TARGET = 3.0, 1.2


def cluster_work(folder: Path, jobs: int, load: float):
    """The scenario's horizon, the backfill plan and its work for about ``jobs`` jobs at ``load``."""
    per_job_gpu_h = sum(g * share * mean for g, share, mean in MIX)
    per_h = load * GPUS / per_job_gpu_h
    days = jobs / per_h / 24.0
    groups = [JobGroup(f"g{g}", per_day=per_h * 24.0 * share, gpus=g, mean_h=mean, cv=1.5) for g, share, mean in MIX]
    trace = make_trace(groups, days, seed=1)
    sc = scenario(folder, trace[["submit_h", "gpus", "duration_h"]].itertuples(index=False),
                  [owned(gpus=GPUS, gpus_per_node=GPN, scheduler="backfill")], horizon_days=days + 10)
    plan = resolve(sc)[0]
    return sc.horizon_h, plan, plan_work(sc, workload.generate(sc), plan)


def backfill_vs_fifo(jobs: int, load: float, repeats: int) -> tuple[int, dict[str, float], dict[str, float]]:
    """Seconds per run of each scheduler on one trace (alternated, best of ``repeats``) and mean waits."""
    with tempfile.TemporaryDirectory() as tmp:
        horizon_h, plan, work = cluster_work(Path(tmp), jobs, load)
    plans = {"fifo": dataclasses.replace(plan, scheduler="fifo"), "backfill": plan}
    times: dict[str, float] = {k: float("inf") for k in plans}
    waits = {}
    for _ in range(repeats):
        for name, p in plans.items():
            t, rec = best(lambda p=p: engine.run_option(p, work, horizon_h), 1)
            times[name] = min(times[name], t)
            waits[name] = float(np.nanmean(rec.start_h - work.jobs.submit_h))
    # offered over the arrivals' span (the horizon adds 10 days for the queue to drain)
    realised = float(np.sum(work.jobs.gpus * work.run_h)) / (GPUS * float(np.max(work.jobs.submit_h)))
    return len(work.jobs), times, {**waits, "load": realised}


def fifo_vs_bare(jobs: int, repeats: int) -> tuple[int, float, float]:
    """Seconds of the bare SimPy M/M/4 loop and of the engine under fifo on the same 1-GPU jobs."""
    lam, servers = 3.0, 4  # per hour: ρ = 0.75
    days = jobs / lam / 24
    trace = make_trace([JobGroup("mmc", per_day=lam * 24, gpus=1, mean_h=1.0, law="exponential")], days, seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        sc = scenario(Path(tmp), trace[["submit_h", "gpus", "duration_h"]].itertuples(index=False),
                      [owned(gpus=servers, gpus_per_node=servers, scheduler="fifo")], horizon_days=days * 2)
        plan = resolve(sc)[0]
        work = plan_work(sc, workload.generate(sc), plan)
    t_bare = t_fifo = float("inf")
    for _ in range(repeats):
        t, bare = best(lambda: bare_simpy_mmc(work.jobs.submit_h, work.run_h, servers), 1)
        t_bare = min(t_bare, t)
        t, rec = best(lambda: engine.run_option(plan, work, sc.horizon_h), 1)
        t_fifo = min(t_fifo, t)
    assert np.allclose(rec.start_h, bare, rtol=0, atol=1e-9), "the engine and SimPy disagree"
    return len(work.jobs), t_bare, t_fifo


def verdict(ratio: float, target: float) -> str:
    return "met" if ratio <= target else "NOT met"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="runs of each side on 100,000-job traces (best kept)")
    args = ap.parse_args()
    quick = os.environ.get("COSTSIM_BENCH_QUICK", "") not in ("", "0")
    sizes = [100_000] if quick else [100_000, 1_000_000]

    print(f"EASY backfill vs FIFO on {GPUS:,} GPUs ({GPUS // GPN} nodes of {GPN}), engine alone"
          f"{' (quick: COSTSIM_BENCH_QUICK)' if quick else ''}")
    print(f"{'jobs':>10}{'load':>6}{'real':>6}{'fifo us/job':>13}{'backfill us/job':>17}{'ratio':>7}"
          f"{'fifo wait h':>13}{'backfill wait h':>17}")
    worst = 0.0
    for jobs in sizes:
        for load in (0.75, 0.90):
            n, t, w = backfill_vs_fifo(jobs, load, args.repeats if jobs <= 100_000 else 1)
            ratio = t["backfill"] / t["fifo"]
            worst = max(worst, ratio)
            print(f"{n:10,}{load:6.0%}{w['load']:6.1%}{t['fifo'] / n * 1e6:13.1f}{t['backfill'] / n * 1e6:17.1f}{ratio:7.2f}"
                  f"{w['fifo']:13.3f}{w['backfill']:17.3f}", flush=True)
    print(f"target: backfill <= {BACKFILL_TARGET}x fifo per job ({verdict(worst, BACKFILL_TARGET)}, worst {worst:.2f}x)")

    n, t_bare, t_fifo = fifo_vs_bare(60_000, args.repeats)
    ratio = t_fifo / t_bare
    print(f"FIFO vs bare SimPy, M/M/4 at rho=0.75, {n:,} 1-GPU jobs: bare {t_bare / n * 1e6:.1f} us/job, "
          f"engine fifo {t_fifo / n * 1e6:.1f} us/job, ratio {ratio:.2f} "
          f"(target <= {FIFO_TARGET}x: {verdict(ratio, FIFO_TARGET)}); start times identical")


if __name__ == "__main__":
    main()
