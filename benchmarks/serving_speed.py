"""Serving's cost to a run, side by side in one process: a lab with and without its serving section,
and EASY backfill against FIFO with serving.

    .venv/bin/python benchmarks/serving_speed.py [--repeats 3]

1. ``benchmarks/serving-lab.yaml`` (one year: 7B ablations, 32B runs and a 70B flagship on owned
   256 and 384 H100s delivered after 16 weeks with EASY backfill, on-demand, a renewed 256-GPU
   reservation and two hybrids, beside 32 serving GPUs) through ``costsim.simulate``, as it is and
   with ``serving: null``: CPU seconds (``time.process_time``, so other work on the machine counts
   less), alternated, best of ``--repeats``.
2. The engine alone (``run_option``) on the same lab with serving, every pool scheduled by
   ``backfill`` and then by ``fifo`` (same jobs, same work plans), alternated, best of ``--repeats``.

Targets: a run with serving at most 1.3× the same run without it; backfill with serving at most 3×
FIFO with serving.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import costsim
from costsim.engine import run as engine
from costsim.models.serving import RangeMax
from costsim.plan.checks import serving_demand
from costsim.plan.fleet import HybridPlan, Plan, pools
from costsim.plan.options import CloudPlan, OwnedPlan
from costsim.plan.resolve import resolve
from costsim.workload import jobs as workload
from costsim.workload.plan import plan_work
from costsim.workload.rng import stream

SCENARIO = Path(__file__).resolve().parent / "serving-lab.yaml"
SERVING_TARGET, BACKFILL_TARGET = 1.3, 3.0


def cpu(fn: Callable[[], object]) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def scheduled(plan: Plan, scheduler: str) -> Plan:
    """The option with every pool in it scheduled by ``scheduler``."""
    if isinstance(plan, HybridPlan):
        return dataclasses.replace(plan, base=scheduled(plan.base, scheduler))
    if isinstance(plan, OwnedPlan) or (isinstance(plan, CloudPlan) and plan.is_pool):
        return dataclasses.replace(plan, scheduler=scheduler)
    return plan


def engine_runs(sc, plans: list[Plan]) -> Callable[[], None]:
    """Every option's SimPy run with serving, on work plans made once."""
    jobs = workload.generate(sc)
    works = [[plan_work(sc, jobs, part) for part in pools(p)] for p in plans]
    table = RangeMax(serving_demand(sc))

    def run() -> None:
        for p, w in zip(plans, works, strict=True):
            rngs = {name: stream(sc.seed, name, p.name) for name in ("failures", "preemptions", "provisioning")}
            engine.run_option(p, w[0], sc.horizon_h, w[1] if len(w) > 1 else None, table, rngs)
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    sc = costsim.load_scenario(SCENARIO)
    bare = sc.model_copy(update={"serving": None})
    costsim.simulate(bare)  # imports and first-use work out of the timings
    t = {"serving": float("inf"), "none": float("inf")}
    for _ in range(args.repeats):
        t["serving"] = min(t["serving"], cpu(lambda: costsim.simulate(sc)))
        t["none"] = min(t["none"], cpu(lambda: costsim.simulate(bare)))
    ratio = t["serving"] / t["none"]
    print(f"serving lab ({sc.horizon_days:g} days, {len(sc.options)} options), costsim.simulate, CPU s, "
          f"best of {args.repeats}")
    print(f"  with serving {t['serving']:.2f} s, without {t['none']:.2f} s: ratio {ratio:.2f} "
          f"(target <= {SERVING_TARGET}x: {'met' if ratio <= SERVING_TARGET else 'NOT met'})")

    plans = resolve(sc)
    runs = {name: engine_runs(sc, [scheduled(p, name) for p in plans]) for name in ("backfill", "fifo")}
    e = {name: float("inf") for name in runs}
    for _ in range(args.repeats):
        for name, run in runs.items():
            e[name] = min(e[name], cpu(run))
    ratio = e["backfill"] / e["fifo"]
    print(f"engine alone with serving, every option: backfill {e['backfill']:.2f} s, fifo {e['fifo']:.2f} s: "
          f"ratio {ratio:.2f} (target <= {BACKFILL_TARGET}x: {'met' if ratio <= BACKFILL_TARGET else 'NOT met'})")


if __name__ == "__main__":
    main()
