"""``costsim optimize``: the cheapest configuration that meets every target
(``costsim.decisions.optimize``, worded by ``costsim.present.optimize``), with its progress on
stderr, the answer in one sentence and the Pareto frontier it found; ``--out`` writes
``evaluated.csv`` and ``frontier.csv`` all at once.

Registered by ``cli.py`` as ``app.command("optimize")(optimize_command)``; the CLI's consoles and
formatting helpers are imported when the command runs (``cli`` imports this module).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from costsim.errors import CostsimError
from costsim.runs.executors import EXECUTORS
from costsim.scenario import Problem, ScenarioError

OUTPUT_NAMES = frozenset({"evaluated.csv", "frontier.csv"})
FRONTIER_ROWS = 30  # frontier rows printed; all of them are in frontier.csv


def frontier_table(optimum, title: str) -> Table:
    """The frontier's points: varied values, option, fair, amortised and cash totals (each named),
    p95 delay, completion, whether it meets the targets."""
    from costsim.present import formats

    paths = list(optimum.values)
    table = Table(title=Text(title), title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    rows = optimum.frontier[optimum.frontier["on_frontier"]]
    # A varied path's header breaks at its dots and an option name is never cut: in a narrow
    # terminal the numbers' columns give way, not the names that say what each row is.
    for p in paths:
        table.add_column(p.replace(".", ".\n"), overflow="fold", min_width=max(len(s) + 1 for s in p.split(".")))
    longest = max((len(str(o)) for o in rows["option"]), default=6)
    table.add_column("option", overflow="fold", min_width=min(longest, 24))
    for header in ("fair\ntotal ($)", "amortised\n($)", "cash\n($)", "p95\ndelay (h)", "done\n(%)", "meets"):
        table.add_column(header, justify="right", no_wrap=True)
    for r in rows.head(FRONTIER_ROWS).to_dict("records"):
        values = [Text(formats.plain(r[p]) if isinstance(r[p], float) else str(r[p])) for p in paths]
        table.add_row(*values, Text(str(r["option"])), formats.money_exact(r["fair_total_usd"]),
                      formats.money_exact(r["total_cost_usd"]), formats.money_exact(r["cash_spent_usd"]),
                      formats.number(r["queue_delay_p95_h"], 2), formats.number(r["completion"] * 100, 1),
                      "yes" if r["meets"] else "no")
    return table


# The flags every search takes (``optimize``, ``plan``), said once.
Scenario = Annotated[Path, typer.Argument(help="Scenario YAML file.", show_default=False)]
Targets = Annotated[list[str] | None, typer.Option(
    "--target", help="METRIC<=N or METRIC>=N, e.g. p95_delay_h<=4, completion>=0.99, "
    "rl_iterations_per_day>=50 (repeatable: all must hold; default: the scenario's decision.targets).")]
Vary = Annotated[list[str] | None, typer.Option(
    "--vary", help="PATH=LOW..HIGH (GPU counts step by whole nodes; real ranges by 1/64 of the span) or "
    "PATH=V1,V2,... (repeatable), e.g. options.own.gpus=256..1024.")]
Replications = Annotated[int, typer.Option(min=1, help="Runs per configuration (common random numbers).")]
Seed = Annotated[int | None, typer.Option(min=0, help="Root seed (default: the scenario's).")]
Executor = Annotated[str, typer.Option(help="local, processes (a process pool) or dask (a Dask LocalCluster, or "
                                       "the scheduler at --address).")]
Workers = Annotated[int | None, typer.Option(min=1, help="Worker processes (default: one per core; more than the "
                                             "cores is capped at them, with a warning).")]
Address = Annotated[str | None, typer.Option(help="HOST:PORT of a running Dask scheduler whose workers run the "
                                             "search (--executor dask).")]
ForceWorkers = Annotated[bool, typer.Option("--force-workers", help="Start --workers processes even when "
                                            "they are more than the cores.")]
MaxRuns = Annotated[int, typer.Option("--max-runs", min=1, help="Simulations at most (configurations × "
                                      "replications).")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr (by default: a bar on a "
                                     "terminal, a line when the search starts and ends elsewhere).")]


def optimize_command(
    scenario: Scenario,
    target: Targets = None,
    vary: Vary = None,
    replications: Replications = 3,
    seed: Seed = None,
    executor: Executor = "processes",
    workers: Workers = None,
    address: Address = None,
    force_workers: ForceWorkers = False,
    max_runs: MaxRuns = 200,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Folder for evaluated.csv and frontier.csv, "
                                             "replaced whole at the end (default: nothing written).")] = None,
    quiet: Quiet = False,
) -> None:
    """Find the cheapest configuration that meets every --target, with its confidence.

    A grid over the --vary ranges, refined by bisection along a monotone one, with replications;
    prints the answer with its 95 % interval and the cost-vs-delay Pareto frontier it found."""
    from costsim.cli.console import fail, interrupted
    from costsim.runs.outdir import OutputFolder

    folder = None
    try:
        with contextlib.ExitStack() as stack:
            workers = search_flags(executor, vary, address, workers, force_workers)
            assert vary is not None  # search_flags refused none
            if out is not None:  # checked and locked before searching: an unusable --out costs no simulation
                folder = stack.enter_context(OutputFolder(out, ours=OUTPUT_NAMES, inputs=inputs(scenario, vary)))
            _search(scenario, target or None, vary, replications, seed, executor, workers, max_runs, folder, quiet,
                    address)
    except CostsimError as err:  # bad flags or scenario, an unusable --out, a lost worker
        fail(err)
    except KeyboardInterrupt:
        interrupted(folder, out)


def search_flags(executor: str, vary: list[str] | None, address: str | None, workers: int | None,
                 force_workers: bool) -> int | None:
    """The flags every search shares (``optimize``, ``plan``), checked before anything runs: the
    workers to start (capped at the cores unless forced, with a warning on stderr)."""
    from costsim.cli.console import err_console

    if executor not in EXECUTORS:
        raise ScenarioError("--executor", [Problem((), f"{executor!r}: one of {', '.join(EXECUTORS)}")])
    if not vary:
        raise ScenarioError("--vary", [Problem((), "give at least one, e.g. --vary options.own.gpus=256..1024")])
    if address is not None and executor != "dask":
        raise ScenarioError("--address", [Problem((), "names a Dask scheduler: add --executor dask")])
    if workers is not None and executor != "local":  # "local" runs in this process anyway
        from costsim.runs.executors import available_cores, worker_cap

        workers, warning = worker_cap(workers, available_cores(), force_workers)
        if warning is not None:
            err_console.print(Text.assemble(("warning", "bold yellow"), f": {warning}"), highlight=False)
    return workers


def inputs(scenario: Path, vary: list[str]) -> list[Path]:
    """The files the search reads, which ``--out`` (replaced whole) must not hold: the scenario, its
    trace and points files, and any --vary list value naming a file beside it (a varied trace)."""
    from costsim.runs import api
    from costsim.runs.outfiles import scenario_inputs

    sc = api.load_scenario(scenario)  # a bad scenario is refused here, before anything is written
    found = scenario_inputs(sc, scenario)
    for item in vary:
        _, _, values = item.partition("=")
        for value in values.split(","):
            path = Path(sc.base_dir) / value.strip()
            if value.strip() and path.is_file():
                found.append(path)
    return found


def _search(scenario: Path, target: list[str] | None, vary: list[str], replications: int, seed: int | None, executor: str,
            workers: int | None, max_runs: int, folder, quiet: bool = False, address: str | None = None) -> None:
    """Search with its progress on stderr, print the answer and the frontier, publish into ``folder``."""
    from costsim.cli.commands import err_console, out_console
    from costsim.cli.stages import Stages, Step
    from costsim.present.optimize import optimize

    stages = Stages(err_console, quiet)
    with contextlib.ExitStack() as stack:
        shown: list[Step] = []  # the stage's step, once the checks have passed and the runs begin

        def step(done: int, total: int) -> None:
            if not shown:
                shown.append(stack.enter_context(stages.stage(
                    f"simulating candidate configurations ({executor})", total)))
            shown[0](done, total)

        optimum = optimize(scenario, target, vary, replications, seed, executor, workers, max_runs, progress=step,
                           address=address)
    out_console.print(Text(optimum.sentence), highlight=False, soft_wrap=True)
    for note in optimum.notes:
        out_console.print(Text(f"note: {note}"), highlight=False, soft_wrap=True)
    out_console.print(frontier_table(optimum, f"Pareto frontier (fair total vs p95 queue delay), {optimum.runs} "
                                              f"simulations, {replications} replication(s) each"))
    if folder is not None:
        written = folder.publish(lambda staging: _write(optimum, staging),
                                 {"scenario": str(scenario), "sentence": optimum.sentence})
        out_console.print(Text(f"wrote {len(written)} files to {folder.shown}/"), highlight=False, soft_wrap=True)


def _write(optimum, staging: Path) -> None:
    from costsim.traces.csvcells import write_csv  # formula-like text cells guarded

    write_csv(optimum.evaluated, staging / "evaluated.csv")
    write_csv(optimum.frontier, staging / "frontier.csv")


__all__ = ["Address", "Executor", "ForceWorkers", "MaxRuns", "Quiet", "Replications", "Scenario", "Seed", "Targets", "Vary",
           "Workers", "frontier_table", "inputs", "optimize_command", "search_flags"]
