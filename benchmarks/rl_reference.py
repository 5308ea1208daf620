"""The reference RL scenario (benchmarks/reference-rl.yaml): wall time per stage and SimPy events
per simulated job, side by side in one process.

    .venv/bin/python benchmarks/rl_reference.py [--repeats 3]

Iterations are timed with numpy over every iteration of a class at once and summed into run
times before the SimPy run, so the engine sees a handful of events per job, never one per
iteration: the events-per-job column shows it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from timing import best

import costsim
from costsim.engine import run as engine
from costsim.plan.resolve import economics_values, resolve
from costsim.results import tables as results
from costsim.workload import jobs as workload
from costsim.workload.plan import plan_work

SCENARIO = Path(__file__).resolve().parent / "reference-rl.yaml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    sc = costsim.load_scenario(SCENARIO)
    plans = resolve(sc)
    t_gen, jobs = best(lambda: workload.generate(sc), args.repeats)
    t_plan, work = best(lambda: [plan_work(sc, jobs, p) for p in plans], args.repeats)
    t_sim, records = best(lambda: [engine.run_option(p, w, sc.horizon_h) for p, w in zip(plans, work, strict=True)],
                          args.repeats)
    t_tab, res = best(lambda: results.build(sc, sc.seed, plans, economics_values(sc), records, work), args.repeats)
    t_all, _ = best(lambda: costsim.simulate(sc), args.repeats)
    n, iters = len(jobs), int(jobs.iterations.sum())
    print(f"reference RL scenario: {sc.horizon_days:g} days, {n:,} RL jobs, {iters:,} iterations, "
          f"{len(plans)} options, best of {args.repeats}")
    print(f"{'stage':36}{'seconds':>9}")
    for name, t in [("generate workload (lengths drawn)", t_gen), ("work plans (iterations timed)", t_plan),
                    ("SimPy runs", t_sim), ("tables and costs", t_tab), ("costsim.simulate, end to end", t_all)]:
        print(f"{name:36}{t:9.3f}")
    for rec in records:
        print(f"{rec.option:12} {rec.events:>9,} SimPy events = {rec.events / n:.2f} per job "
              f"({iters / n:,.0f} iterations per job)")
    for _, r in res.summary.iterrows():
        print(f"{r.option:12} {r.jobs_completed:,} jobs done, utilisation {r.utilization:.1%}, mean delay "
              f"{r.queue_delay_mean_h:.2f} h, ${r.total_cost_usd:,.0f}, ${r.cost_per_iteration_usd:.2f} per iteration")


if __name__ == "__main__":
    main()
