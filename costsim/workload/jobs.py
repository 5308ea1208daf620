"""The workload: scenario + seed -> jobs, generated before and independently of any option.

Every option consumes the same jobs (common random numbers: differences between options are
not sampling noise). Trace jobs carry their hours of work; RL jobs carry their iteration count
and, per iteration, the sum, the sum of squares and the maximum of the sampled response lengths
— enough for
``costsim.workload.plan`` to time them on each option's hardware — and how many responses hit the
length cap (lengths are min(L, max), ``costsim.models.sampling``).

Plain job classes (``workload.job_classes``, ``costsim.workload.jobclass``) make trace-like jobs:
a duration, no iterations, class index ``TRACE_CLASS``, so work plans, the engine and the results
treat them exactly as trace rows.

Streams (``costsim.workload.rng``), keyed by class NAME (unique across both kinds) and by arrival
layer (``costsim.workload.arrivals``): ``arrivals`` (the unit-rate points of each layer and the
marks that thin the last one), ``job_shapes`` (per job: iteration counts; a job class's GPU
counts, then its durations), ``response_lengths`` (per iteration); the trace's arrival scaling has
its own ``trace_scaling`` stream. Adding, removing or reordering classes or options never shifts
another class's draws.

Common random numbers across variants, job for job: arrivals are drawn in sequence (the time
change of a unit-rate process), so a longer horizon keeps every earlier job with all its draws;
an arrival scale adds or thins whole layers of jobs, so the jobs of a smaller scale are among
those of a larger one with the same times, shapes and ids (``arrivals`` says how). The trace's
copies and thinning nest the same way (``scale_arrivals``). A class's ``count`` cap keeps its
first jobs in submit order, which a larger scale can change.

Job ids: a trace's own ids, ``<id>~<k>`` for the k-th extra copy ``arrival_scale`` makes, and
``<class>-<n>`` (n zero-padded to at least 5 digits: the job's index among its layer's arrivals,
so ids have gaps when a scale below 1 thins) for generated jobs, ``<class>-<n>~<j>`` in the j-th
layer a scale above 1 adds. ``costsim.runs.api.check`` refuses trace ids of the forms
``<class>-<digits>`` and (for a scale above 1) ``…~<digits>``, so ids are unique by construction.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from costsim.models import trend
from costsim.models.sampling import LengthDraws, length_draws, lognormal
from costsim.scenario import Problem, Scenario, TraceTable, read_trace
from costsim.scenario.classes import RLClass, Spread
from costsim.scenario.trace import any_gpu, gpu_type_code
from costsim.units import HOURS_PER_DAY
from costsim.workload.arrivals import ITERATION_BLOCK, in_blocks, iteration_rows, layer_draws, layered_arrivals, per_job
from costsim.workload.jobclass import job_class_jobs
from costsim.workload.rng import stream

TRACE_CLASS = -1


@dataclass(frozen=True, slots=True)
class Job:
    """One job. Times in hours from the start of the scenario."""

    job_id: str
    job_class: str
    submit_h: float
    gpus: int
    priority: int
    duration_h: float  # trace jobs: hours of work (checkpoint writes excluded); RL jobs: NaN
    iterations: int  # RL jobs: planned iterations; trace jobs: 0
    length_sum: np.ndarray  # RL: Σ response tokens per iteration
    length_max: np.ndarray  # RL: longest response per iteration
    length_capped: np.ndarray  # RL: responses cut at the length cap per iteration
    length_sq_sum: np.ndarray  # RL: Σ squared response lengths per iteration (tokens²)


@dataclass(frozen=True)
class JobTable:
    """The jobs as arrays (the engine's input), sorted by submit time (ties: trace, then RL classes,
    then job classes).

    RL iterations of all jobs are concatenated in ``length_sum``/``length_max``/``length_capped``
    (responses cut at the cap, int32)/``length_sq_sum``; job i's are ``[iter_start[i], iter_start[i]
    + iterations[i])``.
    """

    job_id: np.ndarray
    job_class: np.ndarray
    submit_h: np.ndarray
    gpus: np.ndarray
    priority: np.ndarray
    duration_h: np.ndarray
    class_index: np.ndarray  # index into scenario.workload.classes; -1 (TRACE_CLASS) for trace and job-class jobs
    gpu_type: np.ndarray  # int8: the GPU type the job asks for, an index into trace.GPU_TYPES; ANY_GPU (-1): any
    iterations: np.ndarray
    iter_start: np.ndarray
    length_sum: np.ndarray
    length_max: np.ndarray
    length_capped: np.ndarray
    length_sq_sum: np.ndarray

    def __len__(self) -> int:
        return len(self.submit_h)

    def jobs(self) -> list[Job]:
        """The jobs as frozen records."""
        out = []
        for i in range(len(self)):
            a, n = int(self.iter_start[i]), int(self.iterations[i])
            out.append(Job(str(self.job_id[i]), str(self.job_class[i]), float(self.submit_h[i]), int(self.gpus[i]),
                           int(self.priority[i]), float(self.duration_h[i]), n,
                           self.length_sum[a:a + n], self.length_max[a:a + n], self.length_capped[a:a + n],
                           self.length_sq_sum[a:a + n]))
        return out


_PER_JOB = ("job_id", "job_class", "submit_h", "gpus", "priority", "duration_h", "class_index", "gpu_type", "iterations",
            "iter_start")
# A copied trace job moves by up to half a day either way: a copy on the same hour as its original
# would double the burst it came in, while a day's spread keeps the record's daily rhythm. A modelling
# choice [A], not a measured value; documented with ``workload.arrival_scale`` in docs/scenarios.md.
SCALE_JITTER_H = 12.0
COPY_MARK = "~"  # an extra copy of trace job <id> made by arrival_scale > 1 is <id>~<k>


def _trace_jobs(scenario: Scenario, seed: int, trace: TraceTable | None = None) -> dict[str, np.ndarray]:
    if trace is None:
        path = scenario.workload.trace
        assert path is not None  # trace jobs are made only for a scenario with a trace
        trace = read_trace(scenario.base_dir / path)
    n = len(trace)
    # The same value for every trace job: one int64 seen n times (read-only, no memory per job).
    cols = {
        "job_id": trace.job_id, "job_class": trace.job_class, "submit_h": trace.submit_h, "gpus": trace.gpus,
        "priority": trace.priority, "duration_h": trace.duration_h, "class_index": _same(TRACE_CLASS, n),
        "gpu_type": trace.gpu_type, "iterations": _same(0, n), "iter_start": _same(0, n),
    }
    if scenario.workload.arrival_scale != 1.0:
        cols = scale_arrivals(cols, scenario.workload.arrival_scale, stream(seed, "trace_scaling"))
    return cols


def _same(value: int, n: int) -> np.ndarray:
    """``n`` copies of an int64 ``value`` as a read-only view of one (``numpy.broadcast_to``)."""
    return np.broadcast_to(np.int64(value), (n,))


def scale_arrivals(cols: dict[str, np.ndarray], scale: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Scale a trace's arrival rate by ``scale``: thin it (each job kept with probability
    ``scale`` < 1) or copy it (each job ⌊scale⌋ or ⌊scale⌋+1 times, the extra copies moved by
    U(−12 h, +12 h), never before 0), keeping the mix of job shapes.

    Paired across scales: job i draws one uniform u_i and keeps ⌊scale⌋ + [u_i < scale − ⌊scale⌋]
    copies, a count that never falls as the scale grows; copy k ≥ 1 of job i is moved by value i
    of the k-th block of n shifts (drawn after the n uniforms, block after block). So a copy made
    at one scale is made, at the same time and with the same id, at every larger scale."""
    n = len(cols["submit_h"])
    whole, frac = divmod(scale, 1.0)
    copies = np.full(n, int(whole)) + (rng.uniform(size=n) < frac)
    most = int(copies.max()) if n else 0
    shifts = [np.zeros(n)] + [rng.uniform(-SCALE_JITTER_H, SCALE_JITTER_H, n) for _ in range(1, most)]
    idx = np.repeat(np.arange(n), copies)
    k = np.arange(len(idx)) - np.repeat(np.cumsum(copies) - copies, copies)  # copy number; 0 stays put
    shift = np.concatenate(shifts)[k * n + idx] if len(idx) else np.zeros(0)
    out = {name: col[idx] for name, col in cols.items()}
    ids = out["job_id"].astype(str)
    out["job_id"] = np.where(k > 0, np.char.add(np.char.add(ids, COPY_MARK), k.astype(str)), ids).astype(object)
    out["submit_h"] = np.maximum(out["submit_h"] + shift, 0.0)
    return out


def class_iterations(cls: RLClass, rng: np.random.Generator, n: int) -> np.ndarray:
    """Planned iterations per job: fixed, or lognormal(mean, cv) rounded, at least 1."""
    if isinstance(cls.iterations, Spread):
        return np.maximum(np.rint(lognormal(rng, n, cls.iterations.mean, cls.iterations.cv)), 1).astype(np.int64)
    return np.full(n, int(cls.iterations), dtype=np.int64)


def class_time_change(cls: RLClass, horizon_h: float) -> tuple[float, Callable[[np.ndarray], np.ndarray]]:
    """An RL class's Λ(horizon) and t = Λ⁻¹(S) (hours), Λ(t) the integral of its rate from
    ``start_day``: per_h · (t − start) at a constant rate; with growth g (rate per_h · e^(k·t),
    k = ln(1 + g) / 8760, t from the horizon's start) per_h · (clock(t) − clock(start)), inverted
    exactly by ``trend.clock_inverse``. g = 0 keeps the constant-rate formula, so its arrivals are
    bit for bit those drawn before growth existed."""
    start = cls.start_day * HOURS_PER_DAY
    per_h = cls.arrivals_per_day / HOURS_PER_DAY
    if cls.growth_per_year == 0:
        return per_h * max(horizon_h - start, 0.0), lambda s: start + s / per_h
    k = trend.per_hour(cls.growth_per_year)
    origin = float(trend.clock(start, k))
    total = per_h * max(float(trend.clock(horizon_h, k)) - origin, 0.0)
    # never before the start (rounding)
    return total, lambda s: np.maximum(trend.clock_inverse(origin + s / per_h, k), start)


def expected_class_jobs(cls: RLClass, scale: float, horizon_h: float) -> float:
    """Expected arrivals of an RL class on [start_day, horizon_h) at arrival scale ``scale``, before
    its ``count`` cap: scale · Λ(horizon) (``class_time_change``). A float for any horizon."""
    return scale * class_time_change(cls, horizon_h)[0]


def _class_jobs(scenario: Scenario, seed: int, k: int, cls: RLClass) -> tuple[dict[str, np.ndarray], LengthDraws]:
    """An RL class's jobs (``costsim.workload.arrivals``: layered sequential arrivals at its rate
    from ``start_day``, ``class_time_change``; per-job iteration counts; per-iteration response
    lengths), at most ``count`` of them, in submit order."""
    end = float(scenario.horizon_h)
    total, to_time = class_time_change(cls, end)
    arrivals = layered_arrivals(seed, cls.name, scenario.workload.arrival_scale, total, to_time, end).head(cls.count)
    shapes = layer_draws(arrivals, seed, "job_shapes", cls.name, lambda rng, n: (class_iterations(cls, rng, n),))
    (iterations,) = per_job(arrivals, shapes)
    lengths = cls.rollout.lengths

    def draw_lengths(rng: np.random.Generator, n: int) -> LengthDraws:
        return length_draws(rng, cls.rollout.samples, lengths.mean, lengths.cv, lengths.max, n)

    rows, needed = iteration_rows(arrivals, [its for (its,) in shapes])
    drawn = [in_blocks(stream(seed, "response_lengths", cls.name, j), draw_lengths, n, ITERATION_BLOCK)
             for j, n in enumerate(needed)]
    draws = LengthDraws(*(_rows(np.concatenate(column), rows) for column in zip(*drawn, strict=True)))
    n = len(arrivals)
    cols = {
        "job_id": arrivals.ids(cls.name),
        "job_class": np.full(n, cls.name, dtype=object), "submit_h": arrivals.submit_h,
        "gpus": np.full(n, cls.gpus, dtype=np.int64), "priority": np.full(n, cls.priority, dtype=np.int64),
        "duration_h": np.full(n, np.nan), "class_index": np.full(n, k, dtype=np.int64),
        "gpu_type": _type_of(cls.gpu_type, n), "iterations": iterations, "iter_start": np.cumsum(iterations) - iterations,
    }
    return cols, draws


def _type_of(gpu_type: str | None, n: int) -> np.ndarray:
    """The ``gpu_type`` codes of ``n`` jobs of a class asking for ``gpu_type`` (None: any), as one
    read-only int8 seen ``n`` times."""
    return any_gpu(n) if gpu_type is None else np.broadcast_to(np.int8(gpu_type_code(gpu_type)), (n,))


def _rows(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``values[rows]``, as a slice when the rows are the first ones in order (one layer, all kept)."""
    if np.array_equal(rows, np.arange(len(rows))):
        return values[:len(rows)]
    return values[rows]


def generate(scenario: Scenario, seed: int | None = None, trace: TraceTable | None = None) -> JobTable:
    """The scenario's jobs submitted within the horizon (trace, RL classes and job classes), sorted
    by submit time.

    ``seed`` (default: the scenario's) drives every random stream; a trace is replayed as written
    unless ``arrival_scale`` asks for more or fewer jobs. ``trace``: the scenario's trace if the
    caller has read it already (it is read here otherwise).
    """
    seed = scenario.seed if seed is None else seed
    parts: list[dict[str, np.ndarray]] = []
    sums, maxes, capped, squares = [np.zeros(0)], [np.zeros(0)], [np.zeros(0, dtype=np.int32)], [np.zeros(0)]
    offset = 0
    if scenario.workload.trace is not None:
        parts.append(_trace_jobs(scenario, seed, trace))
    for k, cls in enumerate(scenario.workload.classes):
        cols, draws = _class_jobs(scenario, seed, k, cls)
        cols["iter_start"] = cols["iter_start"] + offset
        offset += len(draws.length_sum)
        parts.append(cols)
        sums.append(draws.length_sum)
        maxes.append(draws.length_max)
        capped.append(draws.capped)
        squares.append(draws.length_sq_sum)
    for job_class in scenario.workload.job_classes:
        cols = job_class_jobs(job_class, seed, scenario.workload.arrival_scale, scenario.horizon_h, TRACE_CLASS)
        parts.append({**cols, "gpu_type": _type_of(job_class.gpu_type, len(cols["submit_h"]))})
    cols = parts[0] if len(parts) == 1 else {name: np.concatenate([p[name] for p in parts]) for name in _PER_JOB}
    submit = cols["submit_h"]
    if (submit < scenario.horizon_h).all() and (submit[1:] >= submit[:-1]).all():
        per_job = {name: cols[name] for name in _PER_JOB}  # a sorted trace, all within: its own arrays, no copy
    else:
        keep = np.flatnonzero(submit < scenario.horizon_h)
        order = keep[np.argsort(submit[keep], kind="stable")]
        per_job = {name: cols[name][order] for name in _PER_JOB}
    return JobTable(**per_job, length_sum=np.concatenate(sums), length_max=np.concatenate(maxes),
                    length_capped=np.concatenate(capped), length_sq_sum=np.concatenate(squares))


MAX_ID_PROBLEMS = 8


def reserved_id_problems(scenario: Scenario, trace_ids: np.ndarray) -> list[Problem]:
    """Trace job ids that could equal an id the workload makes itself, as problems on their CSV
    lines (header = line 1): ``<class>-<digits>`` (5 or more) for a class of this scenario, and
    — when ``arrival_scale`` > 1 makes copies — any id ending in ``~<digits>``. Refusing these
    keeps every job_id unique by construction."""
    forms = []
    names = [c.name for c in scenario.workload.classes] + [c.name for c in scenario.workload.job_classes]
    if names:
        forms.append("(?:" + "|".join(re.escape(n) for n in names) + ")-[0-9]{5,}")
    if scenario.workload.arrival_scale > 1:
        forms.append(".*" + re.escape(COPY_MARK) + "[0-9]+")
    if not forms:
        return []
    reserved = re.compile("|".join(forms), re.DOTALL)
    rows = [i for i, job_id in enumerate(trace_ids) if reserved.fullmatch(job_id)]
    problems = [Problem(("job_id",), _why_reserved(str(trace_ids[i]), names), i + 2) for i in rows[:MAX_ID_PROBLEMS]]
    if len(rows) > MAX_ID_PROBLEMS:
        problems.append(Problem(("job_id",), f"... and {len(rows) - MAX_ID_PROBLEMS} more such id(s)"))
    return problems


def _why_reserved(job_id: str, class_names: list[str]) -> str:
    for name in class_names:
        head, sep, digits = job_id.rpartition("-")
        if sep and head == name and digits.isascii() and digits.isdigit():
            return (f"{job_id!r} has the form of the ids of class {name!r}'s generated jobs ({name}-NNNNN): "
                    "rename it in the trace, or rename the class")
    return (f"{job_id!r} ends like the ids of the copies arrival_scale > 1 makes (<id>{COPY_MARK}<k>): "
            f"rename it in the trace")
