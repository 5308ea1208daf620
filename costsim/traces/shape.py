"""The shape of an imported record: where its arrivals sit, who holds its GPU-hours, what was cut
at its end and what whole-GPU rounding added (``costsim import-trace`` prints it).

A record's headline ("6,203 jobs over 149.3 days") can hide that nearly every job arrives in a
few weeks of it, or that a handful of long jobs hold most of its GPU-hours; a workload fitted or a
cluster sized from the headline alone is then wrong where the jobs are. :func:`record_shape` is a
pure function of the imported table; :func:`shape_lines` says it in words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from costsim.traces.common import STILL_RUNNING

ACTIVE_SHARE = 0.9  # the active window holds this share of the arrivals
LONGEST_SHARE = 0.01  # the longest jobs whose GPU-hours are reported: this share of the jobs
RUNNING = "running"  # the status of a job replayed although it had not ended (cut at the record's end)


def active_window(submit_h: np.ndarray, share: float = ACTIVE_SHARE) -> tuple[float, float, int]:
    """(start, end, jobs) of the shortest window of submit times (hours) holding at least
    ``share`` of the arrivals: k = ⌈share · n⌉ arrivals, the tightest [t_(i), t_(i+k−1)] over the
    sorted times (the earliest of equally short ones); ``jobs`` counts every submit inside it
    (ties at its ends included, so it may exceed k). (nan, nan, 0) for no job."""
    t = np.sort(np.asarray(submit_h, dtype=float))
    n = len(t)
    if n == 0:
        return float("nan"), float("nan"), 0
    k = min(max(math.ceil(share * n), 1), n)
    widths = t[k - 1:] - t[: n - k + 1]
    i = int(np.argmin(widths))
    start, end = float(t[i]), float(t[i + k - 1])
    return start, end, int(np.count_nonzero((t >= start) & (t <= end)))


@dataclass(frozen=True)
class RecordShape:
    """Where an imported record's jobs and GPU-hours sit. Hours from the record's hour 0 (its
    first submit); GPU-hours are GPUs × hours as replayed (whole GPUs)."""

    jobs: int
    span_h: float  # hour 0 to the last job's end: the record's span
    gpu_hours: float  # replayed GPU-hours (after whole-GPU handling)
    active_start_h: float  # the shortest window of submits holding ACTIVE_SHARE of the jobs
    active_end_h: float
    active_jobs: int  # jobs submitted within [active_start_h, active_end_h]
    longest_jobs: int  # the longest ⌈LONGEST_SHARE · jobs⌉ jobs (by replayed duration)
    longest_gpu_hours_share: float  # their share of gpu_hours (0…1)
    longest_min_h: float  # the shortest duration among them (h)
    cut_at_end: int  # jobs replayed with status "running": cut at the record's end, durations lower bounds
    running_dropped: int  # jobs still running with no end recorded: not replayed (duration unknown)
    used_gpu_hours: float  # GPU-hours the source says the jobs used (fractional GPUs × share × time)
    rounded_jobs: int  # jobs asking for part of a GPU

    @property
    def active_h(self) -> float:
        """Length of the active window (hours)."""
        return self.active_end_h - self.active_start_h

    @property
    def active_span_share(self) -> float:
        """The active window's share of the record's span (0…1)."""
        return self.active_h / self.span_h if self.span_h > 0 else float("nan")

    @property
    def added_gpu_hours(self) -> float:
        """GPU-hours whole-GPU handling added to what the jobs used (replayed − used)."""
        return self.gpu_hours - self.used_gpu_hours

    @property
    def added_share(self) -> float:
        """``added_gpu_hours`` as a share of the used GPU-hours (0.158: +15.8 %)."""
        return self.added_gpu_hours / self.used_gpu_hours if self.used_gpu_hours > 0 else float("nan")


def record_shape(frame: pd.DataFrame, dropped: dict[str, int], used_gpu_hours: float,
                 rounded_jobs: int) -> RecordShape:
    """The shape of an imported table (``submit_h, gpus, duration_h, status``, one row a job),
    with the drop counts of its import (reason -> jobs) and the GPU-hours its jobs used before
    whole-GPU handling. The longest jobs are ranked by duration, ties in table order."""
    submit = frame["submit_h"].to_numpy(dtype=float)
    duration = frame["duration_h"].to_numpy(dtype=float)
    held = frame["gpus"].to_numpy(dtype=float) * duration
    n = len(frame)
    total = float(held.sum())
    start, end, active = active_window(submit)
    k = min(max(math.ceil(LONGEST_SHARE * n), 1), n) if n else 0
    longest = np.argsort(-duration, kind="stable")[:k]
    status = frame["status"].astype(str).str.lower() if "status" in frame else pd.Series([], dtype=str)
    return RecordShape(
        jobs=n, span_h=float((submit + duration).max()) if n else 0.0, gpu_hours=total,
        active_start_h=start, active_end_h=end, active_jobs=active, longest_jobs=k,
        longest_gpu_hours_share=float(held[longest].sum()) / total if total > 0 else float("nan"),
        longest_min_h=float(duration[longest].min()) if k else float("nan"),
        cut_at_end=int((status == RUNNING).sum()),
        running_dropped=int(sum(dropped.get(r, 0) for r in STILL_RUNNING)),
        used_gpu_hours=float(used_gpu_hours), rounded_jobs=int(rounded_jobs))
