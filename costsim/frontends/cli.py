"""The ``costsim`` command: validate, run, sweep, schema, catalog.

Bad input (scenario, trace, flags) prints one message per problem naming the file, the field and
the line, exits with status 2 and writes nothing.
"""

from __future__ import annotations

import enum
import json
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.table import Table
from rich.text import Text

from costsim.runs import api
from costsim.runs.budget import DEFAULT_MAX_EVENTS
from costsim.catalog import default_catalog
from costsim.frontends.export import OUTPUT_NAMES, run_info, write_tables
from costsim.runs.outdir import OutputFolder, safe_folder_name
from costsim.scenario import Problem, ScenarioError, json_schema

if TYPE_CHECKING:  # imported when a sweep runs: scipy.stats and the executors cost every other command 0.5 s
    from costsim.runs.sweep import SweepResults

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Build or rent GPUs for RL training? Simulate the same jobs on each option and compare.",
)
out_console = Console(width=None if sys.stdout.isatty() else 180)
err_console = Console(stderr=True)

ScenarioArg = Annotated[Path, typer.Argument(help="Scenario YAML file.", show_default=False)]


def _fail(err: ScenarioError) -> None:
    for line in str(err).splitlines():  # Text, not markup: names and values may hold '[/]'
        err_console.print(Text.assemble(("error", "bold red"), ": ", line), highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _load(path: Path):
    try:
        return api.load_scenario(path)
    except ScenarioError as err:
        _fail(err)


@app.command()
def validate(scenario: ScenarioArg) -> None:
    """Check a scenario and its trace without simulating."""
    sc = _load(scenario)
    out_console.print(Text.assemble(("ok", "green"), f": {scenario}: scenario {sc.name!r}, {len(sc.options)} option(s)"),
                      highlight=False)


def _or_dash(fmt: str):
    """Format a number, or '-' where it is not one (NaN: no such figure for that option)."""
    return lambda v: "-" if v != v else format(v, fmt)


def _money(x: float) -> str:
    return "-" if x != x else f"${x:,.0f}"


def summary_table(summary, title: str) -> Table:
    table = Table(title=Text(title), title_justify="left")  # Text: user names print literally
    columns = [
        ("option", "option", Text),
        ("kind", "pricing", Text),
        ("done/submitted", None, None),
        ("delay mean h", "queue_delay_mean_h", lambda v: f"{v:,.2f}"),
        ("delay p95 h", "queue_delay_p95_h", lambda v: f"{v:,.2f}"),
        ("utilisation", "utilization", lambda v: f"{v:.1%}"),
        ("total cost", "total_cost_usd", _money),
        ("$/GPU-h used", "cost_per_gpu_hour_used_usd", lambda v: f"{v:,.2f}"),
        ("$/job", "cost_per_completed_job_usd", _money),
        ("RL iter/day", "iterations_per_day", lambda v: f"{v:,.0f}"),
        ("$/RL iter", "cost_per_iteration_usd", _or_dash(",.2f")),
    ]
    if not (summary["iterations_per_day"] > 0).any():  # a trace-only scenario has no RL iterations
        columns = columns[:-2]
    if (summary["restarts"] > 0).any():  # failures or preemptions interrupted something
        columns.append(("goodput", "goodput", _or_dash(".1%")))
    for header, *_ in columns:
        table.add_column(header, justify="left" if header in ("option", "kind") else "right")
    for _, row in summary.iterrows():
        cells = []
        for header, key, fmt in columns:
            if key is None:
                cells.append(f"{row.jobs_completed:,}/{row.jobs_submitted:,}")
            else:
                cells.append(fmt(row[key]))
        table.add_row(*cells)
    return table


def _seconds(v: float) -> str:
    """Seconds to 0.1 s; below that two decimals, so a short phase (a weight sync inside a node)
    does not read as zero."""
    if v != v:
        return "-"
    return f"{v:.2f}" if 0 < v < 0.1 else f"{v:,.1f}"


# The phases table's columns: (header, phases column, formatter); the seconds columns' unit is in
# the title. Short headers of at most two lines keep the table within 160 columns with option and
# class names of up to about 20 characters each; longer names wrap, numbers never do.
PHASE_TABLE_COLUMNS = [
    ("rollout", "rollout_s", _seconds),
    ("log-\nprobs", "logprobs_s", _seconds),
    ("scoring", "scoring_s", _seconds),
    ("update", "update_s", _seconds),
    ("sync/\nreshard", "sync_s", _seconds),
    ("async\noverhead", "overhead_s", _seconds),
    ("iteration", "iteration_s", _seconds),
    ("rollout\nshare", "rollout_share", _or_dash(".0%")),
    ("straggler\nshare", "straggler_share", _or_dash(".0%")),
    ("tok/s\nper GPU", "rollout_tokens_per_s_per_gpu", _or_dash(",.0f")),
    ("capped", "capped_share", _or_dash(".1%")),
    ("iter/\nday", "iterations_per_day", _or_dash(",.0f")),
    ("$/iter", "cost_per_iteration_usd", _or_dash(",.2f")),
]


def phase_table(phases) -> Table:
    """Where an RL iteration's time goes, per option and job class: mean seconds per phase and per
    iteration, the rollout's share of the iteration and the straggler's (the longest response
    alone) share of the rollout, rollout tokens/s per rollout GPU, the share of responses cut at
    the length cap, iterations per day and cost per iteration."""
    table = Table(title="RL iterations: mean seconds per phase and per iteration (async: rollout overlaps "
                  "training, so its phases add up to more)", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("option", overflow="fold")
    table.add_column("class", overflow="fold")
    for header, *_ in PHASE_TABLE_COLUMNS:
        table.add_column(header, justify="right", no_wrap=True)
    for _, r in phases.iterrows():
        if r.iterations_planned == 0:
            continue
        table.add_row(Text(r.option), Text(r.job_class), *(fmt(r[col]) for _, col, fmt in PHASE_TABLE_COLUMNS))
    return table


def _simulate_with_progress(sc, seed: int | None, max_events: int | None = DEFAULT_MAX_EVENTS):
    """``api.simulate`` with a progress bar over the options."""
    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(),
               TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task("simulating", total=len(sc.options))

        def step(name: str, done: int, total: int) -> None:
            what = "building tables" if done == total else f"simulating {name}"
            progress.update(task, completed=done, description=what)

        return api.simulate(sc, seed, on_option=step, max_events=max_events)


@app.command()
def run(
    scenario: ScenarioArg,
    out: Annotated[str | None, typer.Option("--out", "-o", help="Folder for the tables, replaced whole at the end "
                                            "(default: out/<scenario name>).")] = None,
    seed: Annotated[int | None, typer.Option(min=0, help="Root seed (overrides the scenario's).")] = None,
    max_events: Annotated[int, typer.Option(
        "--max-events", min=0, help="Refuse a run estimated to need more simulation events than this "
        "(a guard against hours-long runs from a typo); 0: no limit.")] = DEFAULT_MAX_EVENTS,
) -> None:
    """Simulate every option, print the comparison and write the tables (CSV, Parquet)."""
    folder = None
    try:
        sc = _load(scenario)
        # Checked, locked and staged before simulating, so an unusable --out costs no simulation.
        folder = OutputFolder(out if out is not None else Path("out") / safe_folder_name(sc.name), ours=OUTPUT_NAMES)
        with folder:
            res = _simulate_with_progress(sc, seed, max_events or None)
            out_console.print(summary_table(res.summary, f"{sc.name}: {sc.horizon_days:g} days, seed {res.seed}"))
            if len(res.phases):
                out_console.print(phase_table(res.phases))
            written = folder.publish(lambda staging: write_tables(res, staging), run_info(res))
    except ScenarioError as err:  # bad scenario, or an OutputError: --out unusable, locked, disk full
        _fail(err)
    except KeyboardInterrupt:
        _interrupted(folder)
    out_console.print(Text(f"wrote {len(written)} files to {folder.shown}/"), highlight=False)


def _interrupted(folder: OutputFolder | None) -> None:
    """Ctrl-C: say what the output folder holds and exit 130 (128 + SIGINT), without a traceback."""
    if folder is None:
        state = "nothing written"
    elif folder.published:
        state = f"{folder.shown} holds the new results"
    else:
        state = f"{folder.shown} is unchanged"
    err_console.print(Text(f"interrupted: {state}"), highlight=False)
    raise typer.Exit(130)


class Executor(str, enum.Enum):
    """Where a sweep's tasks run (``costsim.runs.executors``)."""

    local = "local"
    processes = "processes"
    dask = "dask"


# The sweep's means table: (header, metric, formatter of a value); each cell is mean ± half-width.
MEANS_TABLE_COLUMNS = [
    ("total cost", "total_cost_usd", _money),
    ("delay mean h", "queue_delay_mean_h", lambda v: f"{v:,.2f}"),
    ("delay p95 h", "queue_delay_p95_h", lambda v: f"{v:,.2f}"),
    ("utilisation", "utilization", lambda v: f"{v:.1%}"),
    ("RL iter/day", "iterations_per_day", lambda v: f"{v:,.0f}"),
]
MEANS_TABLE_ROWS = 60  # more rows than this: the first ones, and where the rest are


def _with_interval(fmt, mean: float, low: float, high: float) -> str:
    """``mean ± half-width`` of a symmetric t-interval; the mean alone where there is no interval
    (one replication) or no such figure (NaN: '-')."""
    if mean != mean:
        return "-"
    if low != low or high != high:
        return fmt(mean)
    return f"{fmt(mean)} ± {fmt((high - low) / 2).lstrip('$')}"


def means_table(results: SweepResults, title: str) -> Table:
    """One row per (variant, option): the swept values and each metric's mean ± the half-width of
    its 95 % confidence interval over the replications."""
    table = Table(title=Text(title), title_justify="left", box=box.SIMPLE_HEAD)
    for header in ("variant", "swept values", "option"):
        table.add_column(header, overflow="fold")
    for header, *_ in MEANS_TABLE_COLUMNS:
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("n", justify="right")
    swept = {row["variant"]: ", ".join(f"{k}={row[k]}" for k in results.variants.columns[1:])
             for row in results.variants.to_dict("records")}
    for r in results.means.head(MEANS_TABLE_ROWS).to_dict("records"):
        cells = [_with_interval(fmt, r[m], r[f"{m}_low"], r[f"{m}_high"]) for _, m, fmt in MEANS_TABLE_COLUMNS]
        labels = (Text(str(r["variant"])), Text(swept.get(r["variant"], "")), Text(str(r["option"])))
        table.add_row(*labels, *cells, str(r["n"]))
    return table


def _sweep_with_progress(spec, out: Path, executor: str, workers: int | None, address: str | None) -> SweepResults:
    """``run_sweep`` with a progress bar (tasks done, elapsed, ETA) on stderr."""
    from costsim.runs.sweep import run_sweep

    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
    every = len(spec.variants) * spec.replications
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task(f"sweep ({executor})", total=None)

        def step(done: int, total: int) -> None:
            if done == 0 and total < every:
                saved = f"resuming: {every - total} of {every} tasks already in {out}/"
                bar.console.print(Text(saved), highlight=False)
            bar.update(task, completed=done, total=total)

        return run_sweep(spec, out, executor, workers, address, progress=step, label="--out")


@app.command(name="sweep")
def sweep_command(
    spec: Annotated[Path, typer.Argument(metavar="SWEEP.yaml", help="Sweep file; with --set, a plain scenario file.",
                                         show_default=False)],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Folder for the dataset (default: out/<file stem>; "
                                             "with --set, out/<file stem>-sweep); a folder holding the same sweep "
                                             "is resumed.")] = None,
    executor: Annotated[Executor, typer.Option(
        help="Where the runs happen: this process, a process pool, or Dask (a LocalCluster, or the scheduler at "
        "--address).")] = Executor.processes,
    workers: Annotated[int | None, typer.Option(min=1, help="Worker processes (default: one per core).")] = None,
    address: Annotated[str | None, typer.Option(help="HOST:PORT of a running Dask scheduler "
                                                "(--executor dask).")] = None,
    sets: Annotated[list[str] | None, typer.Option("--set", help="path=v1,v2,...: a quick grid over a plain "
                                                   "scenario (repeatable; the product of all).")] = None,
    replications: Annotated[int | None, typer.Option(min=1, help="With --set: runs per variant (default: 1).")] = None,
    seed: Annotated[int | None, typer.Option(min=0, help="With --set: root seed (default: the scenario's).")] = None,
) -> None:
    """Run a sweep: every variant × replication, saved task by task as Parquet under --out, then
    per (variant, option) means and paired differences with 95 % confidence intervals."""
    from costsim.runs.sweepfile import load_sweep, sweep_from_sets

    # A quick grid's default gets a suffix: out/<scenario> is where ``costsim run`` writes that scenario.
    target = out if out is not None else Path("out") / safe_folder_name(spec.stem + ("-sweep" if sets else ""))
    try:
        if sets:
            sweep = sweep_from_sets(spec, sets, 1 if replications is None else replications, seed)
        else:
            for flag, value in (("--replications", replications), ("--seed", seed)):
                if value is not None:
                    raise ScenarioError(flag, [Problem((), "applies with --set only; a sweep file sets "
                                                       "replications: and seed: itself")])
            sweep = load_sweep(spec)
        if address is not None and executor is not Executor.dask:
            raise ScenarioError("--address", [Problem((), "names a Dask scheduler: add --executor dask")])
        results = _sweep_with_progress(sweep, target, executor.value, workers, address)
    except ScenarioError as err:  # bad sweep, flags or folder; a lost worker
        _fail(err)
    except KeyboardInterrupt:
        err_console.print(Text(f"interrupted: finished tasks are saved in {target}/runs; run the same command "
                               "again to resume"), highlight=False)
        raise typer.Exit(130) from None
    n = sweep.replications
    out_console.print(means_table(results, f"{sweep.source}: {len(sweep.variants)} variant(s) × {n} replication(s), "
                                           f"seed {sweep.seed}: means ± half-width of the 95 % t-interval"))
    if len(results.means) > MEANS_TABLE_ROWS:
        out_console.print(Text(f"... {len(results.means) - MEANS_TABLE_ROWS} more rows in {target}/means.csv"),
                          highlight=False)
    out_console.print(Text(f"wrote {target}/: runs/ (one Parquet file per task), means, differences, variants "
                           "(CSV and Parquet)"), highlight=False)


@app.command()
def schema() -> None:
    """Print the JSON schema of scenario files (for editors)."""
    sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n")


@app.command()
def catalog() -> None:
    """Print the catalog's default values with their sources and dates."""
    cat = default_catalog()
    table = Table(title=f"costsim catalog {cat.version} (USD)", title_justify="left")
    for col in ("field", "value", "date", "source"):
        table.add_column(col, overflow="fold")
    for e in cat.entries:
        table.add_row(e.path, f"{e.value:g}" if isinstance(e.value, float) else str(e.value), e.date, e.source)
    out_console.print(table)


def main() -> None:
    """Console entry point."""
    try:
        app()
    finally:
        # The command has finished and said so. Python restores Ctrl-C's default action while it
        # tears down (large tables take a while), where a Ctrl-C would kill a successful run with
        # a signal status; ignore it from here on.
        signal.signal(signal.SIGINT, signal.SIG_IGN)


if __name__ == "__main__":
    main()
