"""`costsim report`: the command, apart from the report's modules so that loading the CLI stays
light (plotly and the decisions are imported when a report is written, not at every command: a
slow import is also a window in which Ctrl-C would interrupt Python before the CLI can handle it)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from costsim.errors import CostsimError
from costsim.runs.executors import Executor
from costsim.runs.outdir import OutputError
from costsim.scenario import Problem, ScenarioError

if TYPE_CHECKING:
    from costsim.results.contract import Results


def report_command(
    source: Annotated[Path, typer.Argument(metavar="SCENARIO|SWEEP_DIR", show_default=False,
                                           help="A scenario file, or the --out folder of costsim sweep.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write (replaced atomically).")]
    = Path("report.html"),
    replications: Annotated[int | None, typer.Option(min=1, max=1000, help="Runs of the scenario, seeds from "
                                                     "--seed (default 3).")] = None,
    seed: Annotated[int | None, typer.Option(min=0, help="Root seed (default: the scenario's).")] = None,
    target: Annotated[list[str] | None, typer.Option("--target", help="METRIC<=N or METRIC>=N, e.g. "
                                                     "p95_delay_h<=4 (repeatable).")] = None,
    tornado: Annotated[bool | None, typer.Option("--tornado/--no-tornado", help="Include the sensitivity "
                                                 "tornado (a scenario only; default on).")] = None,
    variant: Annotated[str | None, typer.Option(help="Of a sweep: the variant to lead with, e.g. v000.")] = None,
    executor: Annotated[Executor, typer.Option(help="Where the tornado's runs go: this process, a process pool "
                                               "(one worker per core) or a Dask LocalCluster.")] = Executor.processes,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr (by default each stage: "
                                        "a bar on a terminal, a line when it starts and ends elsewhere).")] = False,
) -> None:
    """Write one self-contained HTML report that opens offline, led by the verdict.

    The verdict and its confidence, the options side by side, break-even, the Pareto frontier, the
    tornado and the figures; the scenario as YAML at the end. Each stage (the replications, the
    utilisation flip search, the tornado, the page's figures and tables, the writing) is shown on
    stderr as it goes."""
    from rich.text import Text

    from costsim.cli.console import err_console, fail, load_scenario_or_exit, out_console
    from costsim.cli.stages import Stages, counting
    from costsim.decisions.targets import targets as as_targets
    from costsim.present.verdict import decide
    from costsim.report.build import build_report, check_out, replications_of, tornado_or_note, write_page
    from costsim.report.sweep import is_sweep_folder, sweep_inputs
    from costsim.runs import api
    from costsim.runs.executors import executor_settings
    from costsim.runs.outfiles import FolderLock, check_out_file, scenario_inputs

    stages = Stages(err_console, quiet)
    verdict = None
    data: Path | list[Results]  # a sweep folder, or the scenario's replications (``runs``)
    try:
        # A FIFO, a device or a symlink is refused, never replaced; the scenario itself even before it is read.
        check_out_file("--out", out, [source / "sweep.json" if source.is_dir() else source])
        check_out(out)
        wanted = as_targets(list(target), "--target") if target else None  # none: the scenario's
        if source.is_dir():
            for flag, given in (("--replications", replications), ("--seed", seed), ("--tornado", tornado)):
                if given:
                    raise ScenarioError(flag, [Problem((), "applies to a scenario, not a sweep folder (its "
                                                           "replications and seed are the sweep's)")])
            if not is_sweep_folder(source):
                raise OutputError("SWEEP_DIR", str(source), "is a folder but not a costsim sweep's (no sweep.json)")
            check_out_file("--out", out, sweep_inputs(source))
            _not_in_runs(out, source)
            data = source
        else:
            if variant is not None:
                raise ScenarioError("--variant", [Problem((), "applies to a sweep folder only")])
            sc = load_scenario_or_exit(source)
            check_out_file("--out", out, scenario_inputs(sc, source))  # before the runs: they take a while
            if tornado is not False:  # Dask missing, say: refused now, not after the replications
                executor_settings(executor.value, None, None, "report")
            root = sc.seed if seed is None else seed
            n = 3 if replications is None else replications
            with stages.stage(f"simulating {n} replication{'s' if n > 1 else ''}", n, "runs") as step:
                runs = replications_of(sc, n, root, step)
            data = runs
            # Decided here, not by the page: the flip search re-simulates and is told as it goes.
            with stages.stage("searching the utilisation flip") as step:
                verdict = decide(data, wanted, simulate=counting(lambda s, r: api.simulate(s, seed=r), step))
        shown = None
        if not source.is_dir() and tornado is not False:
            # The tornado on the verdict's replications (its seeds, averaged): one base difference on the
            # page. Those runs and the verdict are handed over: its base is not simulated nor decided again.
            # counted in runs: the ends of a price input re-cost one simulation rather than simulate
            with stages.stage("sensitivity tornado (inputs at both ends)", unit="runs") as step:
                shown = tornado_or_note(sc, root, wanted, step, replications=n, runs=runs, verdict=verdict,
                                        executor=executor.value)
        # The lock of the folder written into: a run swapping that folder into place meanwhile would
        # otherwise take the report away with the folder's previous contents.
        with FolderLock(out.parent.resolve(), "--out", str(out), required=False):
            check_out_file("--out", out, sweep_inputs(source) if source.is_dir() else scenario_inputs(sc, source))
            # The page from the runs and the verdict above: nothing simulated or decided again (a
            # sweep folder's verdicts are decided here, from its stored runs).
            with stages.stage("building the page (figures and tables)", unit="sections") as step, frozen_heap():
                page = build_report(data, wanted, shown, variant=variant, verdict=verdict, progress=step)
            with stages.stage("writing the report", counted=False):
                path = write_page(page, out)
    except CostsimError as err:
        fail(err)
    except KeyboardInterrupt:
        err_console.print(Text(f"interrupted: {out} is unchanged"), highlight=False)
        raise typer.Exit(130) from None
    out_console.print(Text(f"wrote {path}"), highlight=False, soft_wrap=True)  # a path is copied whole, never wrapped


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """The objects alive now (the runs, the imports) out of the garbage collector's walks until the
    block ends. Drawing the page makes many small plotly objects, and each full collection would
    walk every object alive, none of them garbage then: 0.07-0.10 s of the baseline report's own
    work (docs/performance.md). For the command's own thread: nothing is frozen when the program
    running the command (a notebook, a test runner) has frozen objects itself, whose freeze is its
    own to undo."""
    if gc.get_freeze_count():
        yield
        return
    try:
        gc.freeze()
        yield
    finally:
        gc.unfreeze()


def _not_in_runs(out: Path, folder: Path) -> None:
    """A report is never written among a sweep's task files (it would be read as one of them)."""
    from costsim.runs.dataset import RUNS

    runs = (folder / RUNS).resolve()
    if runs == out.resolve() or runs in out.resolve().parents:
        raise OutputError("--out", str(out), f"is inside {folder / RUNS}, which holds the sweep's task files only; "
                          "write the report elsewhere (e.g. beside it)")
