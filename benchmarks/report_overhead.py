"""What ``costsim report`` spends beside the simulation it reports, both measured in one run.

    .venv/bin/python benchmarks/report_overhead.py [--repeats 5] [--replications 3] [--tornado]

Each repeat runs ``costsim report scenarios/baseline.yaml`` (its 365 days, ``--replications`` 3, the
CLI's default; ``--no-tornado`` unless ``--tornado``) in a fresh interpreter, as a user meets it:
the imports the command makes are in it. Inside that run every ``api.prepare`` and ``api.simulate``
call is timed (CPU, ``time.process_time``): that is the simulation the report makes (the
replications and the utilisation flip search; with ``--tornado``, its runs too). Everything else
the command does from its start to its end is the report's own work: importing the report and the
decisions, reading the scenario, ``decide`` beside its runs, the tornado beside its runs, building
the page's figures and tables and writing it. The two halves come from the same run, so whatever
else loads the machine weighs on both: each run's ratio, the median of ``--repeats`` (five by
default), and the run whose ratio that is, broken down. The least of three runs for each half,
taken from different runs, varied by a point and a half between calls and picked the luckiest case.
The command tells its stages on stderr as a user's run does (to a file, so as lines).

Prints the report's own work ÷ the simulation it reports against the target (at most 25 %), the
same against the replications alone (the runs the page's figures and tables are drawn from), and
where the report's own work goes. Simulation run in worker processes (a tornado on a process pool)
is counted from the CPU time of this run's finished child processes, all of it as simulation.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "baseline.yaml"
TARGET = 0.25
CHILD = "--child"


def child(result: Path, argv: list[str]) -> None:
    """In a fresh interpreter: ``costsim report ARGV`` with its simulation timed apart, the split
    written as JSON to ``result`` (CPU seconds)."""
    from costsim.cli import commands  # what every command loads (the simulation's modules among them)
    from costsim.runs import api

    start = time.process_time()
    # The report's and the decisions' modules (plotly among them) are the report's to load: loaded
    # here, on the clock, only to wrap their functions before the command looks them up.
    from costsim.present import verdict
    from costsim.report import build

    simulate = api.simulate
    split = {"simulation": 0.0, "replications": 0.0, "runs": 0, "decide": 0.0, "tornado": 0.0, "page": 0.0,
             "write": 0.0}
    depth = [0]  # a simulate that prepares is timed once

    def timed(fn):
        """``fn`` with its CPU time counted as simulation (once, however it nests)."""
        def call(*args, **kwargs):
            outer = depth[0] == 0
            depth[0] += 1
            t = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                depth[0] -= 1
                if outer:
                    split["simulation"] += time.process_time() - t
                    split["runs"] += fn is simulate
        return call

    def stage(fn, key: str):
        """``fn`` with its CPU time, less the simulation inside it, counted under ``key``."""
        def call(*args, **kwargs):
            t, before = time.process_time(), split["simulation"]
            try:
                return fn(*args, **kwargs)
            finally:
                split[key] += time.process_time() - t - (split["simulation"] - before)
        return call

    replications_of = build.replications_of

    def counted_replications(*args, **kwargs):
        before = split["simulation"]
        try:
            return replications_of(*args, **kwargs)
        finally:
            split["replications"] += split["simulation"] - before

    api.simulate, api.prepare = timed(api.simulate), timed(api.prepare)
    build.replications_of = counted_replications
    verdict.decide = stage(verdict.decide, "decide")
    build.tornado_or_note = stage(build.tornado_or_note, "tornado")
    build.build_report = stage(build.build_report, "page")
    build.write_page = stage(build.write_page, "write")
    try:
        commands.app(["report", *argv], standalone_mode=False)
    finally:
        workers = resource.getrusage(resource.RUSAGE_CHILDREN)  # a pool's, once it is closed
        split["simulation"] += workers.ru_utime + workers.ru_stime
        split["total"] = time.process_time() - start + workers.ru_utime + workers.ru_stime
    result.write_text(json.dumps(split))


def one_report(argv: list[str]) -> dict:
    """One ``costsim report`` in a fresh interpreter: its split (``child``)."""
    with tempfile.TemporaryDirectory() as folder:
        result = Path(folder) / "split.json"
        out = Path(folder) / "report.html"
        # Its stages told on stderr as a user's run tells them (not --quiet), to a file rather than a
        # terminal (so as lines, not the live bar a terminal gets).
        subprocess.run([sys.executable, __file__, CHILD, str(result), *argv, "--out", str(out)],
                       check=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return json.loads(result.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--replications", type=int, default=3)
    ap.add_argument("--tornado", action="store_true", help="include the sensitivity tornado (minutes)")
    args = ap.parse_args()
    argv = [str(SCENARIO), "--replications", str(args.replications), "--tornado" if args.tornado else "--no-tornado"]
    load = os.getloadavg()[0]
    splits = []
    for _ in range(args.repeats):
        splits.append(one_report(argv))
    # Each run's own work against that same run's simulation (whatever else loaded the machine then
    # weighed on both), the median over the runs: neither the luckiest nor the unluckiest run.
    ratios = sorted((s["total"] - s["simulation"]) / s["simulation"] for s in splits)
    ratio = statistics.median(ratios)
    median_run = min(splits, key=lambda s: abs((s["total"] - s["simulation"]) / s["simulation"] - ratio))
    own = median_run["total"] - median_run["simulation"]
    rest = own - median_run["decide"] - median_run["tornado"] - median_run["page"] - median_run["write"]
    strict = own / median_run["replications"]
    print(f"costsim report {SCENARIO.relative_to(ROOT)}, {args.replications} replications, "
          f"{'with' if args.tornado else 'no'} tornado; CPU s, the median run of {args.repeats} fresh runs "
          f"(load average {load:.1f} at the start)")
    print(f"  simulation {median_run['simulation']:.2f} s ({int(median_run['runs'])} runs in the process; the "
          f"replications {median_run['replications']:.2f} s), the report's own work {own:.2f} s")
    print(f"  report overhead / simulation: {ratio:.1%} (target <= {TARGET:.0%}: "
          f"{'met' if ratio <= TARGET else 'NOT met'}; each run: {', '.join(f'{r:.1%}' for r in ratios)}); "
          f"/ the replications alone: {strict:.1%}")
    print(f"  own work: the page's figures and tables {median_run['page']:.2f} s, writing it {median_run['write']:.2f} s, "
          f"decide {median_run['decide']:.2f} s, tornado {median_run['tornado']:.2f} s; imports, the scenario and the rest "
          f"{rest:.2f} s")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == CHILD:
        child(Path(sys.argv[2]), sys.argv[3:])
    else:
        main()
