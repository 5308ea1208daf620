"""Build and simulate small scenarios in Python (no YAML needed)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import simpy
import yaml
from paths import SHIPPED

import costsim
from costsim.models import rl
from costsim.runs import api
from costsim.scenario import scenario_from_data

TINY_RL = """\
name: tiny
horizon_days: 3
seed: 1
workload:
  classes:
    - name: grpo
      arrivals_per_day: 6
      gpus: 8
      iterations: {mean: 40, cv: 0.5}
      model_params_b: 7
options:
  - {name: own, kind: owned, gpu_type: H100, gpus: 16, lead_time_days: 0}
  - {name: cloud, kind: cloud, gpu_type: H100}
"""
"""A three-day RL scenario of a few jobs on an owned cluster and on-demand: the smallest that sweeps."""
TWO_SIZES_SWEEP = "base: s.yaml\nseed: 3\nreplications: 2\ngrid:\n  options.own.gpus: [16, 24]\n"
"""A sweep of ``TINY_RL`` saved as s.yaml: two owned sizes, two replications."""


def tiny_sweep_files(folder: Path, sweep: str = TWO_SIZES_SWEEP) -> Path:
    """``folder`` holding ``TINY_RL`` as s.yaml and ``sweep`` (a sweep of it) as sw.yaml."""
    (folder / "s.yaml").write_text(TINY_RL)
    (folder / "sw.yaml").write_text(sweep)
    return folder


def one_node_scenario_file(folder: Path, days: float, jobs: int, economics: dict[str, Any] | None = None,
                           own: dict[str, Any] | None = None, rented: dict[str, Any] | None = None) -> Path:
    """``folder``/tiny.yaml (written as JSON): one owned node of 8 H100s (no failures) against
    on-demand H100s, over ``days``, on a trace of ``jobs`` 8-GPU jobs of 5 h, one every 10 h (so
    nothing ever queues). ``own`` and ``rented`` add fields to the two options."""
    rows = [(10.0 * k, 8, 5.0) for k in range(jobs)]
    pd.DataFrame(rows, columns=["submit_h", "gpus", "duration_h"]).to_csv(folder / "trace.csv", index=False)
    data = {"name": "tiny", "horizon_days": days, **({"economics": economics} if economics is not None else {}),
            "workload": {"trace": "trace.csv"},
            "options": [{"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 8, "lead_time_days": 0,
                         "failures": None, **(own or {})},
                        {"name": "cloud", "kind": "cloud", "gpu_type": "H100", "provisioning_delay_h": 0,
                         "startup_h": 0, **(rented or {})}]}
    (folder / "tiny.yaml").write_text(json.dumps(data))
    return folder / "tiny.yaml"


def bits(frame: pd.DataFrame) -> dict[str, object]:
    """Each column as comparable raw content: float columns as their 64-bit patterns (bit for bit,
    NaN payloads and -0.0 included), the rest as values, plus the dtypes. Equal means bit for bit."""
    out: dict[str, object] = {"dtypes": [str(t) for t in frame.dtypes], "columns": list(frame.columns)}
    for c in frame.columns:
        col = frame[c]
        out[c] = col.to_numpy().view(np.uint64).tolist() if col.dtype == np.float64 else col.tolist()
    return out


def invoke_cli(*args, columns: str | None = None):
    """``costsim ARGS`` in this process (``COLUMNS`` set when given); fails on any traceback."""
    from typer.testing import CliRunner

    from costsim.cli.commands import app

    result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": columns} if columns else None)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result


def scenario(folder: Path, rows, options: list[dict[str, Any]], horizon_days: float = 10.0,
             columns=("submit_h", "gpus", "duration_h"), **top: Any) -> costsim.Scenario:
    """A checked scenario over ``rows`` (written as a trace CSV in ``folder``)."""
    trace = folder / "trace.csv"
    pd.DataFrame(list(rows), columns=list(columns)).to_csv(trace, index=False)
    workload = {"trace": "trace.csv", **top.pop("workload", {})}
    data = {"name": "t", "horizon_days": horizon_days, "workload": workload, "options": options, **top}
    sc = scenario_from_data(data, "test", folder)
    return api.check(sc, "test")


MIXED_POOL = """\
  - name: own
    kind: owned
    node_groups:
      - {gpu_type: H100, nodes: 2, gpus_per_node: 8}
      - {gpu_type: A100, nodes: 1, gpus_per_node: 8}
    lead_time_days: 0
"""
"""An owned option 'own' (YAML, a list item under ``options:``) of two 8-GPU H100 nodes and one 8-GPU
A100 node, ready at once: the pool of node groups the CLI and dashboard tests run."""


def owned(name="own", gpus=16, **kw) -> dict[str, Any]:
    """An owned option ready at once and, unless a test asks, without failures (deterministic)."""
    return {"name": name, "kind": "owned", "gpu_type": "H100", "gpus": gpus, "lead_time_days": 0, "failures": None, **kw}


def cloud(name="cloud", **kw) -> dict[str, Any]:
    """An on-demand option with no provisioning delay or startup (spot: never preempted unless asked)."""
    extra = {"preemptions_per_instance_day": 0} if kw.get("pricing") == "spot" else {}
    return {"name": name, "kind": "cloud", "gpu_type": "H100", "provisioning_delay_h": 0, "startup_h": 0, **extra, **kw}


def option_runs(monkeypatch) -> list[str]:
    """The options simulated from now on in this process, one entry per option run
    (``engine.run_option``, patched through ``monkeypatch``)."""
    from costsim.engine import run as engine

    seen: list[str] = []
    real = engine.run_option

    def counted(plan, *args, **kw):
        seen.append(plan.name)
        return real(plan, *args, **kw)

    monkeypatch.setattr(engine, "run_option", counted)
    return seen


def jobs_of(res: costsim.Results, option: str) -> pd.DataFrame:
    return res.jobs[res.jobs["option"] == option].reset_index(drop=True)


TABLES = ("jobs", "summary", "timeseries", "costs", "phases", "cashflow", "breakeven", "advice", "to_target",
          "reward_by_day")
"""Every table of a ``Results``."""


def same_tables(a: costsim.Results, b: costsim.Results) -> None:
    """Every table of ``a`` equals ``b``'s."""
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), obj=name)


def lab_trace_copy(folder: Path) -> costsim.Scenario:
    """The shipped lab-trace scenario, copied into ``folder`` with its traces (so a test may edit them)."""
    src = SHIPPED / "lab-trace.yaml"
    shutil.copytree(src.parent / "traces", folder / "traces")
    shutil.copy(src, folder / src.name)
    return costsim.load_scenario(folder / src.name)


def halve_trace(scenario: costsim.Scenario) -> None:
    """Cut the scenario's trace file to its first half, its mtime set back a second (an edit a
    check by modification time alone would miss)."""
    trace = scenario.base_dir / scenario.workload.trace
    lines = trace.read_text().splitlines(keepends=True)
    trace.write_text("".join(lines[: len(lines) // 2]))
    stat = trace.stat()
    os.utime(trace, ns=(stat.st_atime_ns, stat.st_mtime_ns - 10**9))


def bare_simpy_mmc(submit_h: np.ndarray, service_h: np.ndarray, servers: int) -> np.ndarray:
    """The textbook SimPy model: one process per job, a Resource of ``servers``; start times."""
    env = simpy.Environment()
    res = simpy.Resource(env, servers)
    start = np.full(len(submit_h), np.nan)
    submit = submit_h.tolist()
    service = service_h.tolist()

    def job(i):
        with res.request() as req:
            yield req
            start[i] = env.now
            yield env.timeout(service[i])

    def source():
        now = 0.0
        for i, t in enumerate(submit):
            yield env.timeout(t - now)
            now = t
            env.process(job(i))

    env.process(source())
    env.run()
    return start


def erlang_c(c: int, a: float) -> float:
    """P(wait > 0) in M/M/c with offered load a (Erlang C), via the Erlang B recursion."""
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return c * b / (c - a * (1 - b))


# --- The phases scenario: its table is checked in tests/results/test_phases_table.py (the closed
# forms are worked out there) and printed by `costsim run` in tests/cli/test_cli_phases.py.

PHASES_LENGTHS = {"mean": 800, "cv": 1.0, "max": 4096}
PHASES_SCENARIO = {
    "name": "phases",
    "seed": 3,
    "horizon_days": 4,
    "workload": {"classes": [
        {"name": "sync-colo", "arrivals_per_day": 3, "gpus": 8, "iterations": {"mean": 30, "cv": 0.5},
         "model_params_b": 7, "placement": "colocated", "mode": "sync",
         "rollout": {"prompts": 16, "samples_per_prompt": 4, "response_tokens": PHASES_LENGTHS}},
        {"name": "async", "arrivals_per_day": 3, "gpus": 16, "iterations": {"mean": 30, "cv": 0.5},
         "model_params_b": 7, "placement": "disaggregated", "rollout_gpu_fraction": 0.75, "mode": "async",
         "max_staleness": 2, "rollout": {"prompts": 16, "samples_per_prompt": 4, "response_tokens": PHASES_LENGTHS}},
    ]},
    "options": [{"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 64, "lead_time_days": 0,
                 "failures": None}],
}
"""A synchronous colocated class and an asynchronous disaggregated class on one owned H100 option
without failures."""


def phases_closed_form_scenario(decode_per_gpu: float, sequence_per_s: float) -> costsim.Scenario:
    """``PHASES_SCENARIO`` with one colocated sync class of a 7B model on 8 H100s (tensor_parallel 1),
    16 × 4 = 64 responses of exactly 1,000 tokens after 512-token prompts, 1 byte of KV cache per
    token, and both decode speeds given."""
    gpus, response, prompt = 8, 1000, 512
    klass = {"name": "flat", "arrivals_per_day": 2, "gpus": gpus, "iterations": 5, "model_params_b": 7,
             "placement": "colocated", "mode": "sync",
             "rollout": {"prompts": 16, "samples_per_prompt": 4, "prompt_tokens": prompt, "response_tokens": response,
                         "tensor_parallel": 1, "kv_bytes_per_token": 1,
                         "decode_tokens_per_s_per_gpu": decode_per_gpu, "sequence_tokens_per_s": sequence_per_s}}
    data = {**PHASES_SCENARIO, "workload": {"classes": [klass]}}
    return costsim.runs.api.scenario_from_data(data, "test")


# --- Figures (tests/plots/)

def shipped_file_cut(folder: Path, name: str, days: int, warmup_days: int | None = None) -> Path:
    """The shipped scenario file ``name`` written into ``folder`` over at most ``days`` (its
    warm-up set to ``warmup_days`` if given), beside a link to the shipped traces it may name."""
    text = (SHIPPED / f"{name}.yaml").read_text()
    text = re.sub(r"^horizon_days: *(\d+)", lambda m: f"horizon_days: {min(int(m.group(1)), days)}", text, flags=re.M)
    if warmup_days is not None:
        text = re.sub(r"^warmup_days: *\d+", f"warmup_days: {warmup_days}", text, flags=re.M)
    if re.search(r"^ *tranches:", text, flags=re.M):
        # A tranche ordered past the cut's end is an error: written back without it (comments go).
        from tests.golden.regenerate import cut

        data = yaml.safe_load(text)
        text = yaml.safe_dump(cut(data, data["horizon_days"]), sort_keys=False)
    if not (folder / "traces").exists():
        (folder / "traces").symlink_to(SHIPPED / "traces")
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return path


def short_shipped(tmp_path_factory, name: str, days: int) -> costsim.Scenario:
    """A shipped scenario cut to ``days`` (warm-up 1 day)."""
    return costsim.load_scenario(shipped_file_cut(tmp_path_factory.mktemp(name), name, days, warmup_days=1))


def every_figure(res, runs=None):
    """Every figure of a run by name (and the replications band over ``runs``)."""
    from costsim.plots import figures as plots

    figures = {name: f(res) for name, f in plots.ALL_FIGURES.items()}
    figures["gantt"] = plots.gantt(res)
    figures["band"] = plots.cumulative_cost_band(runs or [res])
    return figures


def rl_shape(**kw) -> rl.Shape:
    """An RL class in the model's symbols for hand checks: a 7B policy colocated synchronous on 16
    GPUs, 1,024 samples of 500-token prompts, a verifier at no cost, 4 optimizer steps, MFU 0.35;
    any field given in its place."""
    base = dict(params_b=7.0, gpus=16, rollout_gpus=16, train_gpus=16, disaggregated=False, asynchronous=False,
                staleness=1, samples=1024, prompt_tokens=500.0, reference_model=False, reward_model_params_b=None,
                verifier_seconds_per_sample=0.0, epochs=1, minibatches=4, mfu=0.35)
    return rl.Shape(**{**base, **kw})


def drawn_lengths(seed: int, n: int, mean: float, cv: float, cap: float, iterations: int = 4):
    """(Σ L, max L, Σ L²) of ``iterations`` iterations of ``n`` capped lognormal response lengths
    (``sampling.length_draws`` on ``seed``): what ``rl.phase_times`` takes after the shape."""
    from costsim.models.sampling import length_draws

    d = length_draws(np.random.default_rng(seed), n, mean, cv, cap, iterations)
    return d.length_sum, d.length_max, d.length_sq_sum


LAM, MU = 8.0, 1.0  # M/M/c: jobs per hour, 1 / mean run time in hours (offered load a = 8 GPUs)


def mmc_scenario(folder: Path, days: float) -> str:
    """One owned option of 1-GPU nodes (c servers) serving Poisson arrivals of 1-GPU jobs with
    exponential run times: M/M/c with FIFO. The first 5 % of the horizon is warm-up."""
    from costsim.scenario import dump_scenario
    from costsim.workload.synth import JobGroup, make_trace

    trace = make_trace([JobGroup("mm", per_day=LAM * 24, gpus=1, mean_h=1 / MU, law="exponential")], days, seed=1)
    sc = scenario(folder, trace[["submit_h", "gpus", "duration_h"]].itertuples(index=False),
                  [owned(gpus=8, gpus_per_node=1, scheduler="fifo")], horizon_days=days * 1.05,
                  warmup_days=days * 0.05)
    path = folder / "mmc.yaml"
    path.write_text(dump_scenario(sc))
    return str(path)


BACKFILL_EPS = 1e-9  # hours: a reservation met to float rounding


def checked_reservations(clusters, rec) -> int:
    """Assert the EASY backfill invariant on each cluster's audit (a pass never pushes its head's
    reservation later; without a failure in between, the head starts by it); returns how many
    finite reservations were held to it."""
    allocs = np.array(rec.allocs, dtype=float).reshape(-1, 6)
    checked = 0
    for c in clusters:
        failures = [t for k, t in enumerate(c.capacity_t[1:], 1) if c.capacity_gpus[k] < c.capacity_gpus[k - 1]]
        for now, head, before, after in c.backfill.audit:
            assert after <= before + BACKFILL_EPS, (now, head, before, after)
            if math.isinf(before) or any(now <= f <= before for f in failures):
                continue
            starts = allocs[(allocs[:, 0] == head) & (allocs[:, 1] >= now - BACKFILL_EPS), 1]
            assert len(starts) and starts.min() <= before + BACKFILL_EPS, (now, head, before, starts)
            checked += 1
    return checked
