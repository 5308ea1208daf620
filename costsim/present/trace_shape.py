"""An imported job record's shape in words (``costsim import-trace`` prints them): the active window,
the longest jobs' share of the GPU-hours, jobs cut at the record's end, fractional GPUs."""

from __future__ import annotations

from costsim.present import formats
from costsim.traces.shape import ACTIVE_SHARE, LONGEST_SHARE, RecordShape
from costsim.units import HOURS_PER_DAY


def jobs_text(n: int) -> str:
    """``n`` jobs in words: "1 job", "6,203 jobs"."""
    return formats.count(n, "job" if n == 1 else "jobs")


def _days(h: float) -> str:
    return formats.number(h / HOURS_PER_DAY, 1, "days")


def shape_lines(shape: RecordShape, fractional: str = "round-up") -> list[str]:
    """The shape in words, a line each: the active window, the longest jobs' GPU-hours, jobs cut
    at the record's end, and (when some job asked for part of a GPU) what ``fractional`` handling
    did to the GPU-hours."""
    lines = [f"arrivals: {formats.percent(ACTIVE_SHARE)} of jobs ({formats.count(shape.active_jobs)}) arrive within "
             f"{_days(shape.active_h)} (hours {formats.number(shape.active_start_h, 1)} to "
             f"{formats.number(shape.active_end_h, 1)}), {formats.percent(shape.active_span_share)} of the record's "
             f"{_days(shape.span_h)}",
             f"longest jobs: the longest {formats.percent(LONGEST_SHARE, 0)} ({jobs_text(shape.longest_jobs)}, "
             f"each {formats.hours(shape.longest_min_h)} or more) hold {formats.percent(shape.longest_gpu_hours_share)} "
             "of the GPU-hours"]
    if shape.cut_at_end or shape.running_dropped:
        lines.append(f"still running at the record's end: {jobs_text(shape.cut_at_end)} replayed for "
                     f"their time so far (durations are lower bounds), {jobs_text(shape.running_dropped)} "
                     "with no end (not replayed)")
    else:
        lines.append("still running at the record's end: none")
    if shape.rounded_jobs:
        verb = ("rounded up to whole GPUs for the same time" if fractional == "round-up"
                else "pooled: whole GPUs for that share of the time")
        lines.append(f"fractional GPUs: {jobs_text(shape.rounded_jobs)} use part of a GPU, {verb}: "
                     f"{formats.number(shape.used_gpu_hours, 0, 'GPU-hours')} used, "
                     f"{formats.number(shape.gpu_hours, 0, 'GPU-hours')} replayed "
                     f"({'+' if shape.added_gpu_hours >= 0 else ''}{formats.percent(shape.added_share, 1)})")
    return lines
