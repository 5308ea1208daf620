"""A million-job trace replay against a bare SimPy M/M/c loop over the same jobs: time and peak memory.

    .venv/bin/python benchmarks/million_trace.py [--jobs 1000000] [--servers 160] [--repeats 1]

Writes an M/M/c trace (Poisson arrivals, exponential 1 h jobs of 1 GPU, c = ``--servers`` GPUs at
ρ = 0.75: λ = 0.75·c jobs per hour) as a CSV, then measures each side in its own fresh process, so
that its peak resident memory is its own:

- the bare loop: the CSV's two columns read with pyarrow, then ``tests/helpers.bare_simpy_mmc`` (one
  SimPy process per job, a Resource of c servers), importing only numpy, simpy and pyarrow;
- ``costsim.simulate`` of a scenario replaying that CSV on an owned FIFO pool of c GPUs: reading
  and checking the scenario and the trace, the run, and every results table.

Seconds exclude interpreter start and imports (shown apart); peak memory (Linux VmHWM) includes
them, as a machine must hold them. Prints both and the ratios costsim / bare (DESIGN.md section 11
targets: at most 1.5× the time and 2.5× the peak memory), and checks that both give every job the
same start time.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEAN_H = 1.0  # mean job length, hours
RHO = 0.75  # offered load per server
TIME_TARGET, MEMORY_TARGET = 1.5, 2.5


def _peak_mib() -> float:
    """This process's peak resident memory so far, MiB: Linux's VmHWM, the high-water mark of this
    program's own memory. (``ru_maxrss`` would do elsewhere, but on Linux it also keeps the parent's
    resident size at the fork that started this process.)"""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux, bytes on macOS


def _bare_simpy_mmc():
    """``bare_simpy_mmc`` of tests/helpers.py, compiled from its source alone: importing helpers
    would bring costsim and pandas (~70 MiB) into the process whose memory is the baseline."""
    import numpy as np
    import simpy

    path = ROOT / "tests" / "helpers.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    fn = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "bare_simpy_mmc")
    namespace = {"np": np, "simpy": simpy}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(path), "exec"), namespace)  # noqa: S102
    return namespace["bare_simpy_mmc"]


def child_bare(folder: Path, servers: int) -> dict:
    """The baseline: read submit and duration columns with pyarrow, run the textbook SimPy loop."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv

    loop = _bare_simpy_mmc()
    imports = _peak_mib()
    t = time.perf_counter()
    cols = ["submit_h", "duration_h"]
    table = pacsv.read_csv(folder / "trace.csv", convert_options=pacsv.ConvertOptions(
        include_columns=cols, column_types={c: pa.float64() for c in cols}))
    submit, duration = (table[c].to_numpy() for c in cols)
    del table
    start = loop(submit, duration, servers)
    seconds = time.perf_counter() - t
    peak = _peak_mib()
    np.save(folder / "start_bare.npy", start)
    return {"seconds": seconds, "peak_mib": peak, "imports_mib": imports, "jobs": len(start)}


def child_costsim(folder: Path) -> dict:
    """``costsim.simulate`` of the scenario file, all tables built."""
    import numpy as np

    import costsim

    imports = _peak_mib()
    t = time.perf_counter()
    res = costsim.simulate(folder / "scenario.yaml")
    seconds = time.perf_counter() - t
    peak = _peak_mib()
    np.save(folder / "start_costsim.npy", res.jobs["start_h"].to_numpy())
    return {"seconds": seconds, "peak_mib": peak, "imports_mib": imports, "jobs": len(res.jobs),
            "wait_h": float(res.summary.queue_delay_mean_h[0])}


def write_inputs(folder: Path, jobs: int, servers: int) -> int:
    """The trace CSV and its scenario (horizon: the arrivals' span and two days to drain); returns
    the number of jobs written (Poisson: about ``jobs``)."""
    from costsim.workload.synth import JobGroup, make_trace

    per_h = RHO * servers / MEAN_H
    days = jobs / per_h / 24.0
    trace = make_trace([JobGroup("mmc", per_day=per_h * 24.0, gpus=1, mean_h=MEAN_H, law="exponential")], days, seed=1)
    trace.to_csv(folder / "trace.csv", index=False)
    (folder / "scenario.yaml").write_text(f"""\
name: million-trace
seed: 0
horizon_days: {math.ceil(days) + 2}
workload:
  trace: trace.csv
options:
  - name: own
    kind: owned
    gpu_type: H100
    gpus: {servers}
    gpus_per_node: 8
    lead_time_days: 0
    scheduler: fifo
    failures: null
""", encoding="utf-8")
    return len(trace)


def child(which: str, folder: Path, servers: int, jobs: int = 0) -> dict:
    """One step in a fresh interpreter (a measurement's peak memory is its own)."""
    out = subprocess.run([sys.executable, __file__, "--child", which, "--folder", str(folder), "--servers",
                          str(servers), "--jobs", str(jobs)], check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=1_000_000, help="about this many jobs (default 1,000,000)")
    ap.add_argument("--servers", type=int, default=160, help="GPUs c of the M/M/c pool (default 160)")
    ap.add_argument("--repeats", type=int, default=1, help="runs of each; the best time and the highest peak")
    ap.add_argument("--child", choices=["inputs", "bare", "costsim"], help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        steps = {"inputs": lambda: {"jobs": write_inputs(args.folder, args.jobs, args.servers)},
                 "bare": lambda: child_bare(args.folder, args.servers), "costsim": lambda: child_costsim(args.folder)}
        print(json.dumps(steps[args.child]()))
        return

    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        n = child("inputs", folder, args.servers, args.jobs)["jobs"]  # this process stays small
        size_mb = (folder / "trace.csv").stat().st_size / 1e6
        runs: dict[str, list[dict]] = {"bare": [], "costsim": []}
        for _ in range(args.repeats):  # alternated, so a busy spell of the machine hits both
            for which in runs:
                runs[which].append(child(which, folder, args.servers))
        same = np.allclose(np.load(folder / "start_costsim.npy"), np.load(folder / "start_bare.npy"), rtol=0, atol=1e-9)
    best = {k: {"seconds": min(r["seconds"] for r in v), "peak_mib": max(r["peak_mib"] for r in v),
                "imports_mib": max(r["imports_mib"] for r in v)} for k, v in runs.items()}
    b, c = best["bare"], best["costsim"]
    t_ratio, m_ratio = c["seconds"] / b["seconds"], c["peak_mib"] / b["peak_mib"]
    print(f"million-job trace replay: M/M/{args.servers} at rho={RHO}, {n:,} jobs ({size_mb:.1f} MB CSV), "
          f"{args.repeats} run(s) each in a fresh process")
    print(f"{'':34}{'seconds':>9}{'peak MiB':>10}{'imports':>9}{'bytes/job':>11}")
    for name, r in [("bare SimPy loop (pyarrow read)", b), ("costsim.simulate (+ all tables)", c)]:
        per_job = (r["peak_mib"] - r["imports_mib"]) * 2**20 / n
        print(f"{name:34}{r['seconds']:9.2f}{r['peak_mib']:10.1f}{r['imports_mib']:9.1f}{per_job:11.0f}")
    print(f"{'ratio costsim / bare':34}{t_ratio:9.2f}{m_ratio:10.2f}")
    print(f"targets: time <= {TIME_TARGET}x ({'met' if t_ratio <= TIME_TARGET else 'NOT met'}), "
          f"peak memory <= {MEMORY_TARGET}x ({'met' if m_ratio <= MEMORY_TARGET else 'NOT met'})")
    print(f"start times {'identical to' if same else 'DIFFERENT from'} SimPy's; "
          f"mean wait {runs['costsim'][0]['wait_h']:.4f} h")
    if not same:
        raise SystemExit("costsim and the bare SimPy loop disagree")


if __name__ == "__main__":
    main()
