"""``costsim import-trace FORMAT FILE --out trace.csv``: a real cluster's job record (SLURM sacct,
Kubernetes pods, Helios, Philly, Alibaba PAI) into costsim's trace CSV (``costsim.traces``).

Registered by ``cli.py`` as ``app.command("import-trace")(import_trace_command)``. Bad input (a
malformed row, a bad flag) prints ``file:line: field: what`` and exits 2 with nothing written; the
CSV is written to a temporary file beside ``--out``, checked with costsim's own trace reader and
renamed over ``--out`` only then.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from costsim.errors import CostsimError
from costsim.present.trace_shape import jobs_text, shape_lines
from costsim.scenario import Problem, ScenarioError
from costsim.traces import FORMATS, GPU_TYPED
from costsim.traces.common import FRACTIONAL, BadCell, ImportOptions, ImportResult, parse_time, write_csv, zone

SHOWN_SKIPPED = 5  # skipped rows listed as warnings; the count of all is printed
# Times before 1990 are not a clock: anonymised traces count seconds from their own start (the k8s
# pod list; one with ISO dates keeps its clock) or shift them by a secret constant (Alibaba PAI,
# whose every file is relative: its 1970 weekdays mean nothing), and a profile fitted by their
# "clock" would be by a made-up one.
CLOCK_SINCE_S = datetime(1990, 1, 1, tzinfo=UTC).timestamp()
RELATIVE_FORMATS = frozenset({"alibaba-pai"})
RELATIVE_TIMES = "times are relative (no clock): fit-workload without --start"
from costsim.cli.console import err_console, fail  # noqa: E402 — light: no plots, no reports


def options_from_flags(fmt: str, since: str | None, until: str | None, gpu_type: str | None, skip_bad: bool,
                       fractional: str, timezone: str) -> ImportOptions:
    """The ImportOptions of the command's flags; ScenarioError naming the flag when one is wrong."""
    if fmt not in FORMATS:
        raise ScenarioError("FORMAT", [Problem((), f"{fmt!r}: one of {', '.join(FORMATS)}")])
    if fractional not in FRACTIONAL:
        raise ScenarioError("--fractional", [Problem((), f"{fractional!r}: one of {', '.join(FRACTIONAL)}")])
    if gpu_type is not None and fmt not in GPU_TYPED:
        raise ScenarioError("--gpu-type", [Problem((), f"the {fmt} format records no GPU type; drop --gpu-type")])
    if gpu_type is not None and not gpu_type.strip():
        raise ScenarioError("--gpu-type", [Problem((), "is empty")])
    try:
        tz = zone(timezone)
    except BadCell as exc:
        raise ScenarioError("--timezone", [Problem((), str(exc))]) from None
    bounds = {}
    for flag, text in (("--since", since), ("--until", until)):
        try:
            bounds[flag] = parse_time(text, tz) if text is not None else None
        except BadCell as exc:
            raise ScenarioError(flag, [Problem((), str(exc))]) from None
        if text is not None and bounds[flag] is None:
            raise ScenarioError(flag, [Problem((), f"{text!r} is not a date")])
    if bounds["--since"] is not None and bounds["--until"] is not None and bounds["--since"] >= bounds["--until"]:
        raise ScenarioError("--until", [Problem((), "must be after --since")])
    return ImportOptions(since_s=bounds["--since"], until_s=bounds["--until"],
                         gpu_type=gpu_type.strip() if gpu_type else None, skip_bad=skip_bad,
                         fractional=fractional, tz=tz)


def input_paths(fmt: str, source: Path) -> list[Path]:
    """The files an import reads: ``source`` and, for Alibaba PAI, the task table beside it."""
    if fmt == "alibaba-pai":
        from costsim.traces.alibaba_pai import task_table_path

        return [source, task_table_path(source)]
    return [source]


def write_trace(result: ImportResult, out: Path, source: Path | list[Path]) -> None:
    """Write the table to ``out`` atomically, after reading the written file back with costsim's
    trace reader (so what is published is a trace a scenario can replay). ``source``: the file (or
    files) imported, which ``out`` must not be."""
    from costsim.runs.outfiles import check_out_file, publish_files
    from costsim.scenario.trace import read_trace

    inputs = source if isinstance(source, list) else [source]
    check_out_file("--out", out, inputs)

    def write(temp: Path) -> None:
        write_csv(result.frame, temp)
        read_trace(temp)  # a ScenarioError here is a bug in an importer, not in the user's file

    publish_files({out: write}, inputs)


def mixed_types(result: ImportResult) -> str | None:
    """Why a table of several GPU types must not be written as one (the types and their jobs,
    and what to pass instead), or None when the kept jobs name at most one GPU model. A job
    whose model is not recorded names none; a job naming two (a pod that may run on either)
    counts for both."""
    facts = result.facts
    if facts is None or len(facts.gpu_types) < 2:
        return None
    counts = ", ".join(f"{name}: {jobs_text(n)}" for name, n in facts.gpu_types.items())
    untyped = f"; no type recorded for {jobs_text(facts.untyped_jobs)}" if facts.untyped_jobs else ""
    first = next(iter(facts.gpu_types))
    return (f"the record holds {len(facts.gpu_types)} GPU types ({counts}{untyped}), which one table would "
            f"replay as one pool of alike GPUs; pass --gpu-type {first} (or another) to import one type, once per "
            "type to split them into one trace each, or --mixed-gpu-types to mix them on purpose")


def summary_lines(result: ImportResult, out: Path, tz: tzinfo = UTC, fmt: str = "",
                  fractional: str = "round-up") -> list[str]:
    """What was imported, in a few lines: jobs, span, GPU-hours, the clock time of hour 0 (in
    ``tz``; or that the times are relative, for format ``fmt`` or a first submit before 1990),
    the record's shape (``costsim.traces.shape.shape_lines``: the active window, the longest
    jobs, jobs cut at its end, what ``fractional`` handling added), GPU types mixed, what was
    left out and why."""
    f = result.frame
    span_d = float((f["submit_h"] + f["duration_h"]).max()) / 24
    gpu_h = float((f["gpus"] * f["duration_h"]).sum())
    delay = f["observed_delay_h"].dropna()
    lines = [f"wrote {out}: {len(f):,} jobs over {span_d:,.1f} days, {gpu_h:,.0f} GPU-hours, "
             f"at most {int(f['gpus'].max()):,} GPUs per job"]
    if result.first_submit_s is not None and (fmt in RELATIVE_FORMATS or result.first_submit_s < CLOCK_SINCE_S):
        lines.append(RELATIVE_TIMES)
    elif result.first_submit_s is not None:
        hour0 = datetime.fromtimestamp(result.first_submit_s, tz).isoformat()
        lines.append(f"hour 0 is {hour0} (fit-workload --start {hour0} fits daily and weekly profiles by the clock)")
    if result.shape is not None:
        lines.extend(shape_lines(result.shape, fractional))
    if result.facts is not None and len(result.facts.gpu_types) > 1:
        lines.append("GPU types mixed in one table (--mixed-gpu-types): " + ", ".join(
            f"{name}: {jobs_text(n)}" for name, n in result.facts.gpu_types.items()))
    if len(delay):
        lines.append(f"observed queueing delay in the source: mean {delay.mean():.2f} h, "
                     f"p95 {delay.quantile(0.95):.2f} h")
    if result.dropped:
        lines.append("not replayed: " + ", ".join(f"{n:,} {why}" for why, n in sorted(result.dropped.items())))
    if result.skipped:
        lines.append(f"skipped {result.skipped:,} malformed row(s) (--skip-bad)")
    return lines


def import_trace_command(
    format: Annotated[str, typer.Argument(help=f"One of {', '.join(FORMATS)}.", show_default=False)],
    file: Annotated[Path, typer.Argument(help="The source file (sacct output, pod list CSV, ...).",
                                         show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="The trace CSV to write (replaced whole).",
                                      show_default=False)],
    since: Annotated[str | None, typer.Option(help="Keep jobs submitted at or after this date "
                                              "(ISO 8601 or epoch seconds).")] = None,
    until: Annotated[str | None, typer.Option(help="Keep jobs submitted before this date.")] = None,
    gpu_type: Annotated[str | None, typer.Option("--gpu-type", help="Keep only jobs on this GPU type "
                                                 "(slurm gres/gpu:TYPE, k8s gpu_spec, PAI gpu_type). A record "
                                                 "of several types is refused without it.")] = None,
    mixed_gpu_types: Annotated[bool, typer.Option("--mixed-gpu-types", help="Keep jobs of every GPU type in one "
                                                  "table (replayed as alike GPUs) instead of refusing the mix.")]
    = False,
    skip_bad: Annotated[bool, typer.Option("--skip-bad", help="Skip malformed rows (counted and listed) "
                                           "instead of failing.")] = False,
    fractional: Annotated[str, typer.Option(help="Jobs using part of a GPU: round-up (a whole GPU, same time) "
                                            "or pool (a whole GPU for that share of the time: same GPU-hours).")]
    = "round-up",
    timezone: Annotated[str, typer.Option(help="Zone of timestamps written without one, and of --since/--until "
                                          "(IANA name, UTC or +08:00).")] = "UTC",
) -> None:
    """Import a cluster's job record as a costsim trace CSV (first submit = hour 0).

    Keeps the source id, user/queue/account as job_class, the outcome as status and the source's
    queueing delay as observed_delay_h; jobs that never ran or used no GPU are counted, not kept."""
    from costsim.cli.console import out_console
    from costsim.runs.outfiles import check_out_file, input_file_problem
    from costsim.traces import import_trace

    try:
        options = options_from_flags(format, since, until, gpu_type, skip_bad, fractional, timezone)
        problem = input_file_problem(file)
        if problem is not None:  # a folder or a FIFO is not "not found"; a FIFO would block the read
            raise ScenarioError(str(file), [Problem((), problem)])
        check_out_file("--out", out, input_paths(format, file))  # before the import, which may take a while
        result = import_trace(format, file, options)
        mixed = None if (mixed_gpu_types or options.gpu_type is not None) else mixed_types(result)
        if mixed is not None:
            raise ScenarioError("--gpu-type", [Problem((), mixed)])
        write_trace(result, out, input_paths(format, file))
    except CostsimError as err:
        fail(err)
    except KeyboardInterrupt:
        err_console.print(Text("interrupted: nothing written"), highlight=False)
        raise typer.Exit(130) from None
    for p in result.problems[:SHOWN_SKIPPED]:
        err_console.print(Text.assemble(("skipped", "yellow"), ": ", p.render(str(file))), highlight=False,
                          soft_wrap=True)
    for line in summary_lines(result, out, options.tz, format, options.fractional):
        out_console.print(Text(line), highlight=False, soft_wrap=True)
