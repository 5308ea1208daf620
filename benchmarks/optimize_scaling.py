"""Parallel efficiency of ``optimize``, the tornado and ``plan``, and what sharing a simulation between price
variants saves, side by side in one process.

    .venv/bin/python benchmarks/optimize_scaling.py [--days 365] [--replications 3] [--workers 2] [--dask]

1. **optimize** on the baseline (scenarios/baseline.yaml over ``--days``, on-demand at a
   hyperscaler's ``--cloud-price``, $6.88 per GPU-hour, so that owning wins and the search has a
   boundary to find): the cheapest size of own-384 from 256 to 768 GPUs, by whole nodes, meeting
   the scenario's targets, ``--replications`` each — a grid of 5 sizes and 4 bisection steps, the
   9 configurations × 3 replications that took 117 s one after another. Wall time of the whole call in this process
   (``local``) and on a pool of ``--workers`` processes (its start-up included); with ``--dask``
   also on a Dask LocalCluster of as many. The answers are identical (checked).
2. **The tornado** of the baseline (every input of the catalog at both ends, ``--replications``
   each, as ``costsim report`` runs it; the same horizon): local against the pool, tables
   identical (checked). Of its runs, those of the price inputs share the base's simulation of each
   replication; the count is printed.
3. **plan** on the same baseline: own-384's size (256 to 768 GPUs) and own-256's scheduler (fifo or
   backfill) together, ``PLAN_TRIALS`` trials in batches of ``PLAN_BATCH``, then the refinement,
   ``--replications`` each: local against the pool, plans identical (checked).
4. **Price variants**: a sweep of the baseline over 3 cloud prices × 3 electricity prices (9
   variants, one replication), in this process, each task simulated alone against the
   variants of a replication sharing one simulation (``costsim.runs.taskrun.shared_runs``): the
   seconds saved, tables identical (checked).

Efficiency = T_local / (workers × T_pool): 1.0 is perfect scaling; the target is 0.8 on 2 workers.
With ``--repeats N`` each call is timed N times, local and pool alternated, and the best kept. For
the pool's search it also prints how busy the workers were (each task's time in its worker, summed,
÷ workers × the pool's time: the rest is the pool's start-up and a worker waiting between steps)
and how many runs the workers made beside those the search recorded (guesses it went past): both
hold under other load, which stretches the tasks and the pool's time alike, and their product is
the efficiency on an idle machine if a task takes as long in a worker as in this process.
No assertion on time: the README quotes the figures. Run it on an otherwise idle machine: with
other busy processes each worker gets a share of a core and the ratios say more about them than
about the executors (the load average is printed at the start and the end).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import pandas as pd

import costsim
import costsim.decisions.search as search
from costsim.decisions.capacity_plan import capacity_plan
from costsim.decisions.optimize import optimize
from costsim.decisions.sensitivity import tornado
from costsim.runs.executors import open_executor
from costsim.runs.sweepfile import sweep_from_sets
from costsim.runs.taskrun import TaskRunner, shared_runs, task_outputs, tasks

BASELINE = Path(__file__).resolve().parent.parent / "scenarios" / "baseline.yaml"
VARY = ["options.own-384.gpus=256..768"]
PRICES = ["options.cloud-od.price_per_gpu_hour=2.5,3.0,4.0", "economics.electricity_usd_per_kwh=0.06,0.1,0.15"]
TARGET = 0.8
PLAN_VARY = [*VARY, "options.own-256.scheduler=fifo,backfill"]
PLAN_TRIALS, PLAN_BATCH = 8, 4


def timed(fn):
    """(wall seconds, result) of one call."""
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def side_by_side(local, pool, repeats: int):
    """(best local seconds, its result, best pool seconds, its result), the calls alternated."""
    best = [float("inf"), None, float("inf"), None]
    for _ in range(repeats):
        for k, fn in ((0, local), (2, pool)):
            t, out = timed(fn)
            if t < best[k]:
                best[k], best[k + 1] = t, out
    return tuple(best)


def same_answer(a, b) -> None:
    assert (a.values, a.option, a.meets, a.runs) == (b.values, b.option, b.meets, b.runs)
    pd.testing.assert_frame_equal(a.evaluated, b.evaluated, check_exact=True)


LOG = os.environ.setdefault("COSTSIM_BENCH_TASK_LOG", os.path.join(tempfile.gettempdir(), f"tasks-{os.getpid()}.log"))


class Timed(TaskRunner):
    """A runner that appends each group's worker, start, end (wall seconds) and size to ``LOG``."""

    def __call__(self, group):
        start = time.time()
        out = super().__call__(group)
        with open(LOG, "a") as f:
            f.write(f"{os.getpid()} {start} {time.time()} {len(group)}\n")
        return out


def busy(run, workers: int) -> tuple[float, float, int]:
    """(wall seconds, share of workers × wall the workers spent in tasks, tasks run) of ``run()``
    with every group timed by ``Timed`` (the pool's start-up counts as idle)."""
    open(LOG, "w").close()
    real, search.TaskRunner = search.TaskRunner, Timed
    try:
        t, _ = timed(run)
    finally:
        search.TaskRunner = real
    spans = [line.split() for line in open(LOG)]
    return t, sum(float(b) - float(a) for _, a, b, _ in spans) / (workers * t), sum(int(n) for *_, n in spans)


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def baseline_over(days: float, cloud_price: float, folder: Path) -> Path:
    """The baseline scenario over ``days``, on-demand at ``cloud_price``, written into ``folder``
    (it reads no file of its own)."""
    sc = costsim.load_scenario(BASELINE)
    data = {**sc.model_dump(mode="json"), "horizon_days": days}
    next(o for o in data["options"] if o["name"] == "cloud-od")["price_per_gpu_hour"] = cloud_price
    path = folder / "baseline.yaml"
    path.write_text(costsim.dump_scenario(costsim.scenario_from_data(data, "baseline", sc.base_dir)))
    return path


def row(name: str, seconds: float, efficiency: float | None = None) -> None:
    shown = "" if efficiency is None else f"{efficiency:.2f}"
    verdict = "" if efficiency is None else ("  (target ≥ 0.8: met)" if efficiency >= TARGET else "  (target ≥ 0.8: missed)")
    print(f"  {name:44}{seconds:9.1f} s{shown:>12}{verdict}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=float, default=365.0, help="horizon of the baseline (its own: 365)")
    ap.add_argument("--cloud-price", type=float, default=6.88, help="on-demand USD per GPU-hour")
    ap.add_argument("--replications", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=1, help="timings of each call, local and pool alternated")
    ap.add_argument("--dask", action="store_true", help="also on a Dask LocalCluster")
    args = ap.parse_args()
    w, r = args.workers, args.replications
    print(f"optimize scaling: baseline over {args.days:g} days, {w} workers, {os.cpu_count()} cores; "
          f"load average {load()} at the start")
    with tempfile.TemporaryDirectory() as tmp:
        path = baseline_over(args.days, args.cloud_price, Path(tmp))

        print(f"1. optimize --vary {VARY[0]}, {r} replications (the scenario's targets)")
        t_local, local, t_pool, pool = side_by_side(
            lambda: optimize(path, None, VARY, replications=r, executor="local"),
            lambda: optimize(path, None, VARY, replications=r, executor="processes", workers=w), args.repeats)
        stages = local.evaluated.drop_duplicates(list(local.values))["stage"]
        print(f"  {len(stages)} configurations ({(stages == 'grid').sum()} grid, {(stages == 'bisection').sum()} "
              f"bisection) × {r} = {local.runs} runs; answer {local.values} ({local.option})")
        row("local (one process)", t_local)
        same_answer(pool, local)
        row(f"process pool, {w} workers", t_pool, t_local / (w * t_pool))
        t_timed, share, ran = busy(lambda: optimize(path, None, VARY, replications=r, executor="processes", workers=w), w)
        print(f"  the pool again, its tasks timed ({t_timed:.1f} s): workers busy {share:.0%} of the time, "
              f"{ran} runs for the {local.runs} recorded: {share * local.runs / ran:.2f}, the efficiency an idle "
              "machine gives if a task takes as long in a worker as here")
        if args.dask:
            t_dask, dask = timed(lambda: optimize(path, None, VARY, replications=r, executor="dask", workers=w))
            same_answer(dask, local)
            row(f"Dask LocalCluster, {w} workers", t_dask, t_local / (w * t_dask))

        print(f"2. tornado, every input, {r} replications")
        t_local, here, t_pool, there = side_by_side(
            lambda: tornado(path, replications=r, executor="local"),
            lambda: tornado(path, replications=r, executor="processes", workers=w), args.repeats)
        pd.testing.assert_frame_equal(there.table, here.table, check_exact=True)
        ran = int((~here.table["note"].str.startswith("skipped")).sum()) * 2 + 1
        print(f"  {ran} variants × {r}; the price inputs' ends re-cost the base's simulation of each replication")
        row("local (one process)", t_local)
        row(f"process pool, {w} workers", t_pool, t_local / (w * t_pool))

        print(f"3. plan --vary {' --vary '.join(PLAN_VARY)}, {PLAN_TRIALS} trials in batches of {PLAN_BATCH}, "
              f"{r} replications")
        t_local, here, t_pool, there = side_by_side(
            lambda: capacity_plan(path, None, PLAN_VARY, replications=r, trials=PLAN_TRIALS, batch=PLAN_BATCH,
                                  executor="local"),
            lambda: capacity_plan(path, None, PLAN_VARY, replications=r, trials=PLAN_TRIALS, batch=PLAN_BATCH,
                                  executor="processes", workers=w), args.repeats)
        same_answer(there.optimum, here.optimum)
        pd.testing.assert_frame_equal(there.trials, here.trials, check_exact=True)
        print(f"  {len(here.trials)} configurations, {here.optimum.runs} runs; answer {here.optimum.values} "
              f"({here.optimum.option})")
        row("local (one process)", t_local)
        row(f"process pool, {w} workers", t_pool, t_local / (w * t_pool))

        print(f"4. price variants: {' × '.join(p.split('=')[0] for p in PRICES)}, 9 variants")
        spec = sweep_from_sets(path, PRICES, replications=1)
        todo = tasks(spec)
        groups = shared_runs(todo)
        with open_executor("local", 1) as run:
            t_alone, alone = timed(lambda: dict(task_outputs(run, todo, groups=[[i] for i in range(len(todo))])))
            t_shared, shared = timed(lambda: dict(task_outputs(run, todo, groups=groups)))
        for i in range(len(todo)):
            pd.testing.assert_frame_equal(shared[i].summary, alone[i].summary, check_exact=True)
        print(f"  {len(todo)} runs, {len(groups)} simulations when shared")
        row("each variant simulated", t_alone)
        row("price variants sharing a simulation", t_shared)
        print(f"  saving: {1 - t_shared / t_alone:.0%} ({t_alone / t_shared:.1f}× faster)")
    print(f"load average {load()} at the end; tables and answers identical from every executor")


if __name__ == "__main__":  # the process pool and Dask start fresh interpreters that import this file
    main()
