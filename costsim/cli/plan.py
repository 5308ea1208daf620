"""``costsim plan``: the cheapest capacity plan that meets every target
(``costsim.decisions.capacity_plan``, worded by ``costsim.present.capacity_plan``), with its
progress on stderr, the plan in words, its runner-ups, how it moves with the workload's growth and
the frontier it found; ``--out`` writes ``evaluated.csv``, ``frontier.csv``, ``trials.csv`` and
(with growth) ``growth.csv`` all at once.

Registered by ``cli.commands`` as ``app.command("plan")(plan_command)``; shares ``costsim
optimize``'s flags, checks and frontier table (``cli.optimize``).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from costsim.cli.optimize import (
    Address,
    Executor,
    ForceWorkers,
    MaxRuns,
    Quiet,
    Replications,
    Scenario,
    Seed,
    Targets,
    Vary,
    Workers,
    frontier_table,
    inputs,
    search_flags,
)
from costsim.errors import CostsimError

OUTPUT_NAMES = frozenset({"evaluated.csv", "frontier.csv", "trials.csv", "growth.csv"})


def plan_command(
    scenario: Scenario,
    target: Targets = None,
    vary: Vary = None,
    replications: Replications = 3,
    trials: Annotated[int, typer.Option(min=1, help="Configurations the sampler proposes (the refinement adds "
                                        "its own).")] = 24,
    batch: Annotated[int, typer.Option(min=1, help="Configurations proposed and run at a time (fixes the answer "
                                       "whatever the workers).")] = 4,
    seed: Seed = None,
    executor: Executor = "processes",
    workers: Workers = None,
    address: Address = None,
    force_workers: ForceWorkers = False,
    max_runs: MaxRuns = 400,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Folder for evaluated.csv, frontier.csv, "
                                             "trials.csv and growth.csv, replaced whole at the end (default: nothing "
                                             "written).")] = None,
    quiet: Quiet = False,
) -> None:
    """Find the cheapest capacity plan that meets every --target.

    Optuna's seeded TPE sampler proposes configurations of the --vary fields in batches, each run
    with replications on common random numbers; a pattern search refines the best. Prints the plan
    in words with its 95 % interval, the runner-up plans and the cost-vs-delay frontier."""
    from costsim.cli.console import fail, interrupted
    from costsim.runs.outdir import OutputFolder

    folder = None
    try:
        with contextlib.ExitStack() as stack:
            workers = search_flags(executor, vary, address, workers, force_workers)
            if out is not None:
                folder = stack.enter_context(OutputFolder(out, ours=OUTPUT_NAMES, inputs=inputs(scenario, vary or [])))
            _plan(scenario, target or None, vary or [], folder, quiet, replications=replications, trials=trials,
                  batch=batch, seed=seed, executor=executor, workers=workers, max_runs=max_runs, address=address)
    except CostsimError as err:
        fail(err)
    except KeyboardInterrupt:
        interrupted(folder, out)


def _plan(scenario: Path, target: list[str] | None, vary: list[str], folder, quiet: bool, **options) -> None:
    """Search with its progress on stderr, print the plan, publish into ``folder``."""
    from costsim.cli.commands import err_console, out_console
    from costsim.cli.stages import Stages, Step
    from costsim.present.capacity_plan import capacity_plan

    stages = Stages(err_console, quiet)
    with contextlib.ExitStack() as stack:
        shown: list[Step] = []

        def step(done: int, total: int) -> None:
            if not shown:
                shown.append(stack.enter_context(stages.stage(
                    f"simulating candidate plans ({options['executor']})", total)))
            shown[0](done, total)

        plan = capacity_plan(scenario, target, vary, progress=step, **options)
    out_console.print(Text(plan.sentence), highlight=False, soft_wrap=True)
    for i, up in enumerate(plan.runner_up_steps, start=2):
        out_console.print(Text(f"{i}. {up}"), highlight=False, soft_wrap=True)
    for line in plan.growth_lines:
        out_console.print(Text(line), highlight=False, soft_wrap=True)
    for note in plan.notes:
        out_console.print(Text(f"note: {note}"), highlight=False, soft_wrap=True)
    out_console.print(frontier_table(plan.optimum, f"Pareto frontier (fair total vs p95 queue delay), "
                                                   f"{plan.optimum.runs} simulations, {options['replications']} "
                                                   "replication(s) each"))
    if folder is not None:
        written = folder.publish(lambda staging: _write(plan, staging),
                                 {"scenario": str(scenario), "sentence": plan.sentence})
        out_console.print(Text(f"wrote {len(written)} files to {folder.shown}/"), highlight=False, soft_wrap=True)


def _write(plan, staging: Path) -> None:
    from costsim.traces.csvcells import write_csv

    write_csv(plan.optimum.evaluated, staging / "evaluated.csv")
    write_csv(plan.optimum.frontier, staging / "frontier.csv")
    write_csv(plan.trials, staging / "trials.csv")
    if not plan.growth.empty:
        write_csv(plan.growth, staging / "growth.csv")


__all__ = ["plan_command"]
