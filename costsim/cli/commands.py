"""The ``costsim`` command: validate, run, sweep, schema, catalog.

Bad input (scenario, trace, flags) prints one message per problem naming the file, the field and
the line, exits with status 2 and writes nothing.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from costsim.catalog.load import default_catalog
from costsim.cli.console import (
    data_table_width,
    err_console,
    fail,
    interrupted,
    load_scenario_or_exit,
    out_console,
    print_data_table,
    print_wide,
)
from costsim.cli.fit_workload import fit_workload_command
from costsim.cli.import_trace import import_trace_command
from costsim.cli.optimize import optimize_command
from costsim.cli.plan import plan_command
from costsim.cli.report import report_command
from costsim.cli.stages import progress_columns
from costsim.cli.tables import (
    MEANS_TABLE_ROWS,
    NARROW_PHASE_COLUMNS,
    fitted_means_table,
    narrow_table,
    phase_table,
    summary_table,
    table_notes,
)
from costsim.errors import CostsimError, ExecutorError
from costsim.present.formats import plain
from costsim.present.headline import with_verdict
from costsim.runs import api
from costsim.runs.budget import DEFAULT_MAX_EVENTS
from costsim.runs.executors import Executor
from costsim.runs.export import OUTPUT_NAMES, run_info, write_tables
from costsim.runs.outdir import OutputFolder, safe_folder_name
from costsim.runs.outfiles import scenario_inputs
from costsim.scenario import Problem, ScenarioError, json_schema

if TYPE_CHECKING:  # imported when a sweep runs: the executors and the sweep machinery are not every command's to load
    from costsim.runs.sweep import SweepResults

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Build or rent GPUs for RL training? Simulate the same jobs on each option and compare.",
)

ScenarioArg = Annotated[Path, typer.Argument(help="Scenario YAML file.", show_default=False)]




@app.command()
def validate(scenario: ScenarioArg) -> None:
    """Check a scenario and its trace without simulating: every problem found, in one pass."""
    from costsim.runs.diagnose import diagnose

    found = diagnose(scenario)
    if found.scenario is None:  # schema, catalog, trace and fit problems together, each once
        for line in found.lines:
            err_console.print(Text.assemble(("error", "bold red"), ": ", line), highlight=False, soft_wrap=True)
        raise typer.Exit(2)
    sc = found.scenario
    out_console.print(Text.assemble(("ok", "green"), f": {scenario}: scenario {sc.name!r}, {len(sc.options)} option(s)"),
                      highlight=False)


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
    target: Annotated[list[str] | None, typer.Option(
        "--target", help="A target the recommended option must meet, e.g. p95_delay_h<=4, completion>=0.99, "
        "rl_iterations_per_day>=500 (repeatable; replaces the scenario's decision.targets, whose default is "
        "p95_delay_h<=24 and completion>=0.99).")] = None,
    wide: Annotated[bool, typer.Option("--wide", help="Print every column, as wide as that takes (about 200 "
                                       "columns).")] = False,
) -> None:
    """Simulate every option, print the verdict and the comparison, and write the tables (CSV, Parquet)."""
    from costsim.decisions.targets import parse_target  # the decisions: only where a verdict is given
    from costsim.present.verdict import decide

    folder = None
    try:
        # Before anything runs or is written; none given: the scenario's decision.targets.
        targets = [parse_target(t) for t in target] if target else None
        sc = load_scenario_or_exit(scenario)
        # Checked, locked and staged before simulating, so an unusable --out costs no simulation.
        folder = OutputFolder(out if out is not None else Path("out") / safe_folder_name(sc.name), ours=OUTPUT_NAMES,
                              inputs=scenario_inputs(sc, scenario))
        with folder:
            res = _simulate_with_progress(sc, seed, max_events or None)
            verdict = decide(res, targets)
            print_run(res, verdict, wide)
            from costsim.report.build import write_report  # plotly: only once there is a report to write

            written = _write_with_progress(folder, res, lambda staging: write_report(res, staging, targets,
                                                                                     verdict=verdict))
    except CostsimError as err:  # bad scenario, or an OutputError: --out unusable, locked, disk full
        fail(err)
    except KeyboardInterrupt:  # a Ctrl-C before the folder is opened (during the imports) names --out too
        interrupted(folder, out)
    for note in folder.notes:
        err_console.print(Text(f"note: {note}"), highlight=False)
    out_console.print(Text(f"wrote {len(written)} files to {folder.shown}/"), highlight=False, soft_wrap=True)


def _write_with_progress(folder: OutputFolder, res, report) -> list[Path]:
    """Publish the run's tables and ``report(staging)`` into ``folder`` with a progress bar on
    stderr, one step per table and one for the report (a million-job run takes tens of seconds
    here, which would otherwise look like a hang after the tables were printed)."""
    from costsim.runs.export import TABLES

    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(),
               TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task("writing tables", total=len(TABLES) + 1)

        def step(name: str, done: int, total: int) -> None:
            progress.update(task, completed=done, description=f"writing tables: {name}")

        def write(staging: Path) -> None:
            write_tables(res, staging, on_table=step)
            progress.update(task, completed=len(TABLES), description="writing the report")
            report(staging)
            progress.update(task, completed=len(TABLES) + 1)

        return folder.publish(write, run_info(res))


def print_run(res, verdict, wide: bool = False) -> None:
    """The verdict first, then the comparison (80 columns, or every column with ``wide``) with the
    options that cannot keep up flagged and explained, then the RL iterations' phases."""
    out_console.print(Text.assemble(("Verdict: ", "bold"), verdict.sentence), highlight=False)
    if verdict.utilization_flip_reason and verdict.utilization_flip_reason != "not searched":
        out_console.print(Text(f"No utilisation flips it: {verdict.utilization_flip_reason}.", style="dim"),
                          highlight=False)
    out_console.print()
    sc = res.scenario
    title = f"{sc.name}: {plain(sc.horizon_days)} days, seed {res.seed}"
    rows = with_verdict(res.summary, verdict)
    if wide:
        print_wide(summary_table(rows, title))
    else:
        out_console.print(narrow_table(rows, title))
        out_console.print()
    for note in table_notes(verdict):
        out_console.print(note, highlight=False)
    if len(res.phases):
        out_console.print()
        if wide:
            print_wide(phase_table(res.phases))
        else:
            out_console.print(phase_table(res.phases, NARROW_PHASE_COLUMNS))


def _build_with_progress(build):
    """``build(progress)`` (``load_sweep`` or ``sweep_from_sets``) with a bar over the variants
    built and checked on stderr: a sweep of 100,000 variants takes minutes."""
    with Progress(*progress_columns(), console=err_console, transient=True) as bar:
        task = bar.add_task("building variants", total=None)
        return build(lambda done, total: bar.update(task, completed=done, total=total))


def _sweep_with_progress(spec, out: Path, executor: str, workers: int | None, address: str | None,
                         started: list) -> SweepResults:
    """``run_sweep`` with a progress bar (tasks done, elapsed, ETA) on stderr; ``started`` gets an
    item when the tasks start (after the folder's checks), so that a Ctrl-C can say what is saved.
    A scheduler lost mid-sweep is an error saying how many finished tasks are saved (those resumed
    and those that finished before it went)."""
    from costsim.runs.executors import SchedulerLost
    from costsim.runs.sweep import run_sweep

    every = len(spec.variants) * spec.replications
    saved = {"before": 0, "now": 0}
    with Progress(*progress_columns(), console=err_console, transient=True) as bar:
        task = bar.add_task(f"sweep ({executor})", total=None)

        def step(done: int, total: int) -> None:
            saved["before"], saved["now"] = every - total, done  # progress is told after each task is written
            if done == 0:
                started.append(total)
                if total < every:
                    resumed = f"resuming: {every - total} of {every} tasks already in {out}/"
                    bar.console.print(Text(resumed), highlight=False)
            bar.update(task, completed=done, total=total)

        def notify(text: str) -> None:
            bar.console.print(Text.assemble(("warning", "yellow"), f": {text}"), highlight=False, soft_wrap=True)

        try:
            return run_sweep(spec, out, executor, workers, address, progress=step, label="--out", notify=notify)
        except SchedulerLost as lost:
            n = saved["before"] + saved["now"]
            raise ExecutorError("dask", f"lost {lost.where} ({lost.reason}): {n} finished task{'s' * (n != 1)} "
                                f"{'are' if n != 1 else 'is'} saved in {out}/runs; run again to resume") from None


def _sweep_interrupted(target: Path, started: list) -> str:
    """What a Ctrl-C during ``costsim sweep`` leaves, truthfully: nothing, or the tasks saved."""
    if not started:
        return f"interrupted before any task ran: nothing written to {target}/"
    from costsim.runs.dataset import RUNS

    saved = sum(1 for _ in (target / RUNS).glob("variant=*/replication=*.parquet"))
    if saved == 0:
        return f"interrupted before any task finished: no task is saved in {target}/{RUNS}"
    return (f"interrupted: {saved} finished task(s) are saved in {target}/{RUNS}; run the same command again "
            "to resume")


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
    workers: Annotated[int | None, typer.Option(min=1, help="Worker processes (default: one per core; more than the "
                                                "cores is capped at them, with a warning).")] = None,
    force_workers: Annotated[bool, typer.Option("--force-workers", help="Start --workers processes even when "
                                                "they are more than the cores.")] = False,
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
    started: list = []  # not empty once tasks run: until then a Ctrl-C leaves nothing behind
    try:
        if sets:
            sweep = _build_with_progress(lambda progress: sweep_from_sets(
                spec, sets, 1 if replications is None else replications, seed, progress=progress))
        else:
            for flag, value in (("--replications", replications), ("--seed", seed)):
                if value is not None:
                    raise ScenarioError(flag, [Problem((), "applies with --set only; a sweep file sets "
                                                       "replications: and seed: itself")])
            sweep = _build_with_progress(lambda progress: load_sweep(spec, progress=progress))
        if address is not None and executor is not Executor.dask:
            raise ScenarioError("--address", [Problem((), "names a Dask scheduler: add --executor dask")])
        if workers is not None and executor is not Executor.local:  # "local" runs in this process anyway
            from costsim.runs.executors import available_cores, worker_cap

            workers, warning = worker_cap(workers, available_cores(), force_workers)
            if warning is not None:
                err_console.print(Text.assemble(("warning", "bold yellow"), f": {warning}"), highlight=False)
        results = _sweep_with_progress(sweep, target, executor.value, workers, address, started)
    except CostsimError as err:  # bad sweep, flags or folder; a lost worker
        fail(err)
    except KeyboardInterrupt:
        err_console.print(Text(_sweep_interrupted(target, started)), highlight=False)
        raise typer.Exit(130) from None
    n = sweep.replications
    width = data_table_width()
    table, left_out = fitted_means_table(results, f"{sweep.source}: {len(sweep.variants)} variant(s) × {n} "
                                         f"replication(s), seed {sweep.seed}: means ± half-width of the 95 % "
                                         "t-interval", width)
    print_data_table(table)
    if left_out:
        out_console.print(Text(f"Not shown in {width} columns: {', '.join(left_out)} (every column is in "
                               f"{target}/means.csv; COLUMNS sets the width)."), highlight=False)
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
        table.add_row(e.path, plain(e.value) if isinstance(e.value, float) else str(e.value), e.date, e.source)
    out_console.print(table)


# Commands written in their own modules (they import this one's helpers when they run).
app.command("optimize")(optimize_command)
app.command("plan")(plan_command)
app.command("report")(report_command)
app.command("import-trace")(import_trace_command)
app.command("fit-workload")(fit_workload_command)


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
