"""The ``costsim`` command: validate, run, schema, catalog.

Bad input (scenario, trace, flags) prints one message per problem naming the file, the field and
the line, exits with status 2 and writes nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from costsim import api
from costsim.catalog import default_catalog
from costsim.export import write_results
from costsim.scenario import ScenarioError, json_schema

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
    for line in str(err).splitlines():
        err_console.print(f"[bold red]error[/]: {line}", highlight=False, soft_wrap=True)
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
    out_console.print(f"[green]ok[/]: {scenario}: scenario {sc.name!r}, {len(sc.options)} option(s)", highlight=False)


def _or_dash(fmt: str):
    """Format a number, or '-' where it is not one (NaN: no such figure for that option)."""
    return lambda v: "-" if v != v else format(v, fmt)


def _money(x: float) -> str:
    return "-" if x != x else f"${x:,.0f}"


def summary_table(summary, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    columns = [
        ("option", "option", str),
        ("kind", "pricing", str),
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


def phase_table(phases) -> Table:
    """Where an RL iteration's time goes, per option and job class."""
    table = Table(title="RL iterations: mean seconds per iteration and throughput", title_justify="left")
    heads = ["option", "class", "rollout s", "scoring s", "update s", "sync s", "iteration s",
             "rollout share", "iter/day", "$/iter"]
    for h in heads:
        table.add_column(h, justify="left" if h in ("option", "class") else "right")
    for _, r in phases.iterrows():
        if r.iterations_planned == 0:
            continue
        table.add_row(r.option, r.job_class, *(f"{r[c]:,.1f}" for c in ("rollout_s", "scoring_s", "update_s", "sync_s",
                      "iteration_s")), f"{r.rollout_share:.0%}", f"{r.iterations_per_day:,.0f}",
                      _or_dash(",.2f")(r.cost_per_iteration_usd))
    return table


def _simulate_with_progress(sc, seed: int | None):
    """``api.simulate`` with a progress bar over the options."""
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task("simulating", total=len(sc.options))

        def step(name: str, done: int, total: int) -> None:
            what = "building tables" if done == total else f"simulating {name}"
            progress.update(task, completed=done, description=what)

        return api.simulate(sc, seed, on_option=step)


@app.command()
def run(
    scenario: ScenarioArg,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Folder for the tables [default: out/<scenario name>].")] = None,
    seed: Annotated[int | None, typer.Option(min=0, help="Root seed (overrides the scenario's).")] = None,
) -> None:
    """Simulate every option, print the comparison and write the tables (CSV, Parquet)."""
    sc = _load(scenario)
    out_dir = out if out is not None else Path("out") / sc.name
    if out_dir.exists() and not out_dir.is_dir():
        err_console.print(f"[bold red]error[/]: --out {out_dir}: exists and is not a folder", highlight=False)
        raise typer.Exit(2)
    res = _simulate_with_progress(sc, seed)
    out_console.print(summary_table(res.summary, f"{sc.name}: {sc.horizon_days:g} days, seed {res.seed}"))
    if len(res.phases):
        out_console.print(phase_table(res.phases))
    written = write_results(res, out_dir)
    out_console.print(f"wrote {len(written)} files to {out_dir}/", highlight=False)


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
    app()


if __name__ == "__main__":
    main()
