"""The workload: scenario + seed -> jobs, generated before and independently of any option.

Every option consumes the same jobs (common random numbers: differences between options are
not sampling noise). A job's *work plan* (its run time on an option) is computed per option by
``run_hours``; trace jobs run their ``duration_h`` on any option, plus checkpoint writes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costsim.rng import stream
from costsim.scenario import Scenario, read_trace
from costsim.units import SECONDS_PER_HOUR


@dataclass(frozen=True, slots=True)
class Job:
    """One job. Times in hours from the start of the scenario."""

    job_id: str
    job_class: str
    submit_h: float
    gpus: int
    priority: int
    duration_h: float  # hours of work, checkpoint writes excluded


@dataclass(frozen=True)
class JobTable:
    """The jobs as arrays (the engine's input), sorted by submit time, ties in file order."""

    job_id: np.ndarray
    job_class: np.ndarray
    submit_h: np.ndarray
    gpus: np.ndarray
    priority: np.ndarray
    duration_h: np.ndarray

    def __len__(self) -> int:
        return len(self.submit_h)

    def jobs(self) -> list[Job]:
        """The jobs as frozen records."""
        return [
            Job(str(a), str(b), float(c), int(d), int(e), float(f))
            for a, b, c, d, e, f in zip(
                self.job_id, self.job_class, self.submit_h, self.gpus, self.priority, self.duration_h, strict=True
            )
        ]


def generate(scenario: Scenario, seed: int | None = None) -> JobTable:
    """The scenario's jobs that are submitted within the horizon.

    ``seed`` (default: the scenario's) drives the random streams of generated jobs; a trace is
    replayed as written. Jobs submitted at or after the horizon are not part of the run.
    """
    seed = scenario.seed if seed is None else seed
    trace = read_trace(scenario.base_dir / scenario.workload.trace)  # type: ignore[operator]
    table = JobTable(trace.job_id, trace.job_class, trace.submit_h, trace.gpus, trace.priority, trace.duration_h)
    if scenario.workload.arrival_scale != 1.0:
        table = scale_arrivals(table, scenario.workload.arrival_scale, stream(seed, "arrivals"))
    keep = table.submit_h < scenario.horizon_h
    order = np.argsort(table.submit_h[keep], kind="stable")
    return JobTable(*(getattr(table, f)[keep][order] for f in _FIELDS))


_FIELDS = ("job_id", "job_class", "submit_h", "gpus", "priority", "duration_h")
SCALE_JITTER_H = 12.0


def scale_arrivals(jobs: JobTable, scale: float, rng: np.random.Generator) -> JobTable:
    """Scale a trace's arrival rate by ``scale``: thin it (each job kept with probability
    ``scale`` < 1) or copy it (each job ⌊scale⌋ or ⌊scale⌋+1 times, the extra copies moved by
    U(−12 h, +12 h), never before 0), keeping the mix of job shapes."""
    n = len(jobs)
    whole, frac = divmod(scale, 1.0)
    copies = np.full(n, int(whole)) + (rng.uniform(size=n) < frac)
    idx = np.repeat(np.arange(n), copies)
    # k-th copy of each job: the first stays where the trace put it.
    k = np.arange(len(idx)) - np.repeat(np.cumsum(copies) - copies, copies)
    shift = np.where(k > 0, rng.uniform(-SCALE_JITTER_H, SCALE_JITTER_H, len(idx)), 0.0)
    ids = jobs.job_id[idx].astype(str)
    ids = np.where(k > 0, np.char.add(np.char.add(ids, "~"), k.astype(str)), ids).astype(object)
    return JobTable(
        job_id=ids,
        job_class=jobs.job_class[idx],
        submit_h=np.maximum(jobs.submit_h[idx] + shift, 0.0),
        gpus=jobs.gpus[idx],
        priority=jobs.priority[idx],
        duration_h=jobs.duration_h[idx],
    )


def checkpoint_writes(duration_h: np.ndarray, every_h: float) -> np.ndarray:
    """Checkpoints a job writes: one after each full ``every_h`` of work, none at its end."""
    return np.maximum(np.ceil(np.asarray(duration_h) / every_h - 1e-9) - 1, 0)


def run_hours(jobs: JobTable, scenario: Scenario) -> np.ndarray:
    """Run time of each job on any option: work plus checkpoint writes (hours)."""
    ckpt = scenario.workload.checkpoint
    if ckpt is None:
        return jobs.duration_h.astype(float)
    writes = checkpoint_writes(jobs.duration_h, ckpt.every_hours)
    return jobs.duration_h + writes * ckpt.write_minutes * 60.0 / SECONDS_PER_HOUR
