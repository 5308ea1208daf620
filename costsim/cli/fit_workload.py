"""``costsim fit-workload TRACE --out classes.yaml [--report fit.html] [--trace-out T.csv]``: fit
arrival rates with daily and weekly profiles, GPU counts and run-time laws per class of a trace
(``costsim.calibration.fit``) and write them as ``workload.job_classes`` a scenario uses
(``costsim.calibration.fit_classes``; paste the list under a scenario's ``workload:``, as
``scenarios/fitted-lab.yaml`` does). ``--trace-out`` also writes a trace drawn from those classes
by the scenario's own generator, ``--report`` the QQ plots, profiles and KS statistics.

Registered by ``cli.py`` as ``app.command("fit-workload")(fit_workload_command)``. Bad input prints
``file:line: field: what`` and exits 2 with nothing written: every output is written to a
temporary file first, the classes are validated and a drawn trace read back with costsim's trace
reader, and only then are all of them renamed into place.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from costsim.calibration.fit import BY, DISTRIBUTIONS
from costsim.calibration.fit_window import WINDOWS
from costsim.cli.console import err_console, fail
from costsim.errors import CostsimError
from costsim.present import formats
from costsim.scenario import Problem, ScenarioError
from costsim.scenario.jobclass import HOURS_PER_WEEK

MAX_GENERATED_DAYS = 3650.0  # --days: ten years of generated jobs at most


def check_flags(trace: Path, out: Path, report: Path | None, trace_out: Path | None, by: str, distribution: str,
                days: float | None, window: str = "auto") -> None:
    """ScenarioError naming the flag when one is wrong (before anything is read)."""
    if window not in WINDOWS:
        raise ScenarioError("--window", [Problem((), f"{window!r}: one of {', '.join(WINDOWS)}")])
    if by not in BY:
        raise ScenarioError("--by", [Problem((), f"{by!r}: one of {', '.join(BY)}")])
    if distribution not in DISTRIBUTIONS:
        raise ScenarioError("--distribution", [Problem((), f"{distribution!r}: one of {', '.join(DISTRIBUTIONS)}")])
    if days is not None and not 0 < days <= MAX_GENERATED_DAYS:
        raise ScenarioError("--days", [Problem((), f"must be > 0 and <= {MAX_GENERATED_DAYS:g} (got {days:g})")])
    from costsim.runs.outfiles import check_out_file

    outs = [("--out", out)] + [(flag, path) for flag, path in (("--trace-out", trace_out), ("--report", report))
                               if path is not None]
    for flag, path in outs:
        check_out_file(flag, path, trace)
    resolved = [p.resolve() for _, p in outs]
    if len(set(resolved)) != len(resolved):
        raise ScenarioError("--out", [Problem((), "--out, --report and --trace-out must be different files")])


def start_hour(start: str | None) -> float:
    """The hour of the week (0 = Monday 00:00) of ``--start`` on its own clock; 0 without it."""
    from datetime import datetime

    from costsim.calibration.fit import hour_of_week

    if start is None:
        return 0.0
    text = start.strip()
    try:
        when = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise ScenarioError("--start", [Problem((), f"{start!r} is not a date and time (ISO 8601 like "
                                                    "2024-03-01T08:00:00)")]) from None
    return hour_of_week(when)


def yaml_text(config: dict, header: str) -> str:
    """The config as YAML (leaf lists on one line), after a comment ``header``."""
    from costsim.scenario.io import yaml_dump

    return "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines()) + yaml_dump(
        config, width=120, inline_leaves=True)


def ks_text(ks: float, p: float) -> str:
    """``KS 0.123 (p 0.45)``; "KS not measurable" when the statistic or its p-value is not a
    number (e.g. every run time equal: no spread to compare a law with)."""
    if not (math.isfinite(ks) and math.isfinite(p)):
        return "KS not measurable"
    return f"KS {ks:.3f} (p {formats.p_value(p)})"


def summary_lines(fits, out: Path, report: Path | None, trace_out: Path | None, generated: int, days: float,
                  window=None, check=None) -> list[str]:
    """The window fitted (a ``FitWindow``: which and why), one line per class (rate, GPUs,
    duration law, KS), the drawn trace against the record (a ``FitCheck``) and what was written."""
    from costsim.present.fit import check_line, window_reason

    lines = [window_reason(window)] if window is not None else []
    for f in fits:
        d = f.duration
        gpus = ", ".join(f"{g}:{p:.0%}" for g, p in f.gpus_pmf.items())
        law = (f"lognormal mean {formats.significant(d.mean_h)} h cv {d.cv:.2f}" if d.law == "lognormal"
               else f"{d.law} mean {formats.significant(d.mean_h)} h median {formats.significant(d.median_h)} h")
        lines.append(f"{f.name}: {formats.count(f.jobs)} jobs, {formats.significant(f.per_day)}/day, GPUs {gpus}; {law}; duration "
                     f"{ks_text(d.ks, d.ks_p)}; arrival {ks_text(f.arrival_ks, f.arrival_ks_p)}")
    if check is not None:
        lines.append(check_line(check))
    wrote = f"wrote {out} ({len(fits)} job class(es) for a scenario's workload)"
    if trace_out is not None:
        wrote += f", {trace_out} ({generated:,} jobs drawn over {days:,.1f} days)"
    lines.append(wrote + (f", report {report}" if report is not None else ""))
    return lines


def fit_warnings(table, fits) -> list[str]:
    """What the fit of ``table`` (a TraceTable) rests on too little for: the trace's own weak
    spots (``costsim.calibration.fit.weak_spots``), else each class of fewer than ``FEW_JOBS`` jobs."""
    from costsim.calibration.fit import FEW_JOBS, weak_spots

    spots = weak_spots(table.submit_h)
    if len(table) < FEW_JOBS:  # every class is small too: said once for the trace
        return spots
    return spots + [f"class {f.name}: only {f.jobs} jobs (fewer than {FEW_JOBS}): its profiles and KS checks mean "
                    "little" for f in fits if f.jobs < FEW_JOBS]


def header_of(fits, source: str, jobs: int, start_h: float, by: str, distribution: str, window=None) -> str:
    """The comment above the classes: where they come from, the window fitted (a ``FitWindow``),
    how to use them, each fit's KS."""
    from costsim.present.fit import window_reason

    lines = [f"Fitted by `costsim fit-workload` from {source}: {jobs:,} jobs, {len(fits)} class(es), by {by}, "
             f"{distribution} run times.",
             "Use: paste job_classes under a scenario's workload: (see scenarios/fitted-lab.yaml).",
             f"Profiles are by the source's clock; the scenario's hour 0 is hour {formats.plain(start_h)} of the week "
             "(0: Monday 00:00)" + ("" if start_h else ", as no --start was given") + "."]
    if window is not None:
        reason = window_reason(window)
        lines.append(reason[:1].upper() + reason[1:] + ".")
    for f in fits:
        lines.append(f"{f.name}: {f.jobs} jobs; duration {ks_text(f.duration.ks, f.duration.ks_p)}, "
                     f"arrival {ks_text(f.arrival_ks, f.arrival_ks_p)}")
        lines.extend(f"  note: {n}" for n in f.notes)
    return "\n".join(lines)


def fit_workload_command(
    trace: Annotated[Path, typer.Argument(help="A costsim trace CSV (e.g. from `costsim import-trace`).",
                                          show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="The fitted workload.job_classes (YAML) to write.",
                                      show_default=False)],
    report: Annotated[Path | None, typer.Option(help="Also write an HTML page: QQ plots, profiles, "
                                                "parameters and KS statistics.")] = None,
    by: Annotated[str, typer.Option(help="job_class_gpus (a class per job_class and GPU count; counts under 30 "
                                    "jobs pooled), job_class or none (all jobs as one). A class with several GPU "
                                    "counts keeps each count's mean run time.")] = "job_class_gpus",
    distribution: Annotated[str, typer.Option(help="Duration law: lognormal (the sample's mean and cv) or empirical "
                                              "(its quantiles; in-sample KS).")] = "lognormal",
    trace_out: Annotated[Path | None, typer.Option("--trace-out", help="Also write a trace drawn from the fitted "
                                                   "classes (by the scenario's generator).")] = None,
    days: Annotated[float | None, typer.Option(help="Days of the drawn trace (default: the source's window).")] = None,
    seed: Annotated[int, typer.Option(help="Root seed of the drawn trace.")] = 0,
    start: Annotated[str | None, typer.Option(help="Date and time of the trace's hour 0 on the source's clock "
                                              "(`costsim import-trace` prints it), e.g. 2024-03-01T08:00:00: the "
                                              "daily and weekly profiles are then by clock hour and weekday.")] = None,
    window: Annotated[str, typer.Option(help="Stretch of the trace to fit: auto (its active window, the shortest "
                                        "holding 90 % of the jobs, when that is under half the record; else the "
                                        "whole record), active or record.")] = "auto",
) -> None:
    """Fit a workload model per class of a trace: arrivals (rate, daily and weekly profile), GPUs per
    job, run times; with goodness of fit. Writes workload.job_classes for a scenario."""
    from costsim.calibration.fit import fit_trace, groups_of, no_rate
    from costsim.calibration.fit_classes import job_classes_of, trace_of
    from costsim.calibration.fit_window import check_fit, choose_window, window_trace
    from costsim.cli.console import out_console
    from costsim.present.fit import check_warnings, no_rate_words
    from costsim.runs.outfiles import publish_files
    from costsim.scenario.trace import read_trace
    from costsim.traces.csvcells import write_csv

    generated, horizon_days = None, 0.0
    try:
        check_flags(trace, out, report, trace_out, by, distribution, days, window)
        start_h = start_hour(start)
        table = read_trace(trace)
        why = no_rate(table.submit_h)  # one job, or a batch at one instant: no rate to fit
        if why is not None:
            raise ScenarioError(str(trace), [Problem(("submit_h",), no_rate_words(why))])
        span = choose_window(table.submit_h, window)
        fitted = window_trace(table, span) if span.active else table
        fit_start_h = (start_h + span.start_h) % HOURS_PER_WEEK  # the window's first hour is the model's hour 0
        fits = fit_trace(fitted, by=by, distribution=distribution, start_h=fit_start_h)
        warnings = fit_warnings(fitted, fits)
        try:
            classes = job_classes_of(fits, fit_start_h)
        except ValueError as exc:  # a fit no job class can hold: say which and why
            raise ScenarioError(str(trace), [Problem((), str(exc))]) from None
        horizon_days = days if days is not None else fits[0].window_h / 24
        generated = trace_of(classes, horizon_days, seed)  # also validates every class
        check = check_fit(fitted, fits[0].window_h, generated, horizon_days)
        warnings += check_warnings(check, fits)
        header = header_of(fits, trace.name, len(fitted), fit_start_h, by, distribution, span)
        header += "".join(f"\nwarning: {w}" for w in warnings)
        writers: dict[Path, Callable[[Path], object]] = {
            out: lambda temp: temp.write_text(yaml_text({"job_classes": classes}, header), encoding="utf-8")}
        if trace_out is not None:
            if len(generated) == 0:
                raise ScenarioError("--days", [Problem((), f"{horizon_days:g} days at the fitted rates gave no job; "
                                                      "choose more days")])

            def write_trace_csv(temp: Path) -> None:
                write_csv(generated, temp, float_format="%.10g")  # formula-like text cells guarded
                read_trace(temp)  # a ScenarioError here is a bug in the generator, not in the user's file

            writers[trace_out] = write_trace_csv
        if report is not None:
            from costsim.report.fit import fit_page

            html = fit_page(fits, [fitted.duration_h[mask] for _, mask in groups_of(fitted, by)], trace.name,
                            span, check, warnings)
            writers[report] = lambda temp: temp.write_text(html, encoding="utf-8")
        flags = {path: flag for path, flag in ((out, "--out"), (trace_out, "--trace-out"), (report, "--report"))
                 if path is not None}
        publish_files(writers, [trace], flags)
    except CostsimError as err:
        fail(err)
    except KeyboardInterrupt:
        err_console.print(Text("interrupted: nothing written"), highlight=False)
        raise typer.Exit(130) from None
    for w in warnings:  # stderr: what the figures rest on too little for
        err_console.print(Text.assemble(("warning", "bold yellow"), f": {trace}: {w}"), highlight=False, soft_wrap=True)
    for line in summary_lines(fits, out, report, trace_out, len(generated), horizon_days, span, check):
        out_console.print(Text(line), highlight=False, soft_wrap=True)
