"""What a run records (usage only: pricing is applied later, in results)."""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

BASE, BURST = 0, 1  # a hybrid's parts; a fleet's are numbered in its order (its burst: the number of its pools)
ROLLOUT = 100  # the rollout pool of an offloading option (docs/rollout-offload.md): above any fleet's parts


@dataclass(frozen=True)
class UsageRecord:
    """Per job (in job-table order) and per allocation. Times in hours; NaN where it never happened.

    Per job: ``start_h`` when it first held GPUs; ``end_h`` when its last attempt ends (may lie past
    the horizon: the run is cut there); ``held_gpus`` GPUs it holds (whole nodes beyond one node,
    whole instances on cloud); ``part`` where it ran on a hybrid or fleet (its part's number; ``BASE`` elsewhere),
    on a pool of node groups its group (never started: the first it may use, where it is timed); ``restarts``
    interruptions (failures and preemptions), ``preemptions`` spot preemptions, ``lost_h`` hours of
    work lost to them, ``overhead_h`` hours held restarting or waiting for a swapped node;
    ``pos_h`` hours of its planned run safely checkpointed, ``work_from_h`` when its current attempt
    began (or begins) to work: together, how far it got by the horizon.

    Per allocation (a job holds GPUs once, or again after each preemption or owned-node failure):
    ``alloc_job``, ``alloc_start``, ``alloc_end`` (planned end if still open), ``alloc_held``,
    ``alloc_instances`` (0 on owned and reserved pools), ``alloc_part``, ``alloc_share`` (the
    share of the allocation's instance-hours held and billed: 1, except on a rollout pool, where it
    is the expected share up plus restarts, ``costsim.models.offload``).
    """

    option: str
    kind: str
    start_h: np.ndarray
    end_h: np.ndarray
    held_gpus: np.ndarray
    instances: np.ndarray
    part: np.ndarray
    restarts: np.ndarray
    preemptions: np.ndarray
    lost_h: np.ndarray
    overhead_h: np.ndarray
    pos_h: np.ndarray
    work_from_h: np.ndarray
    alloc_job: np.ndarray
    alloc_start: np.ndarray
    alloc_end: np.ndarray
    alloc_held: np.ndarray
    alloc_instances: np.ndarray
    alloc_part: np.ndarray
    alloc_share: np.ndarray
    capacity_change_h: np.ndarray  # times the installed capacity changes (delivery, failures, repairs)
    capacity_gpus: np.ndarray  # installed GPUs in service from each change on; empty without a pool
    events: int = 0  # SimPy events scheduled in the run (a cost measure for benchmarks)
    capacity_part: np.ndarray | None = None  # a fleet's: the pool part of each capacity change; None: one pool


def doubles(values) -> array:
    """A compact float64 column the event loop can index and set like a list (8 bytes a value, not a
    boxed float per job); from a numpy array, a list or anything else ``numpy.asarray`` takes."""
    out = array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return out


def integers(values) -> array:
    """As ``doubles`` for int64 values."""
    out = array("q")
    out.frombytes(np.ascontiguousarray(values, dtype=np.int64).tobytes())
    return out


def _frozen(column: array, dtype) -> np.ndarray:
    """A recorded column as a numpy array over the same memory (no copy: the recorder is done, and
    the column can no longer grow while the array holds it)."""
    return np.frombuffer(column, dtype=dtype)


class Recorder:
    """Per-job and per-allocation columns filled during the run, frozen into numpy arrays at the end.

    Columns are ``array.array`` (typed, contiguous): indexed and set from the event loop as cheaply
    as lists, but 8 bytes a value instead of a pointer plus a boxed float each, so a million-job run
    keeps its records in tens of MiB. Allocations are six parallel columns (``alloc_*``), one row
    per hold; ``allocs`` gives them as rows for tests that want them so.
    """

    def __init__(self, n: int):
        nan = float("nan")
        self.start_h = array("d", [nan]) * n
        self.end_h = array("d", [nan]) * n
        self.held_gpus = array("q", [0]) * n
        self.instances = array("q", [0]) * n
        self.part = array("b", [BASE]) * n
        self.restarts = array("q", [0]) * n
        self.preemptions = array("q", [0]) * n
        self.lost_h = array("d", [0.0]) * n
        self.overhead_h = array("d", [0.0]) * n
        self.pos_h = array("d", [0.0]) * n
        self.work_from_h = array("d", [nan]) * n
        self.alloc_job, self.alloc_start, self.alloc_end = array("q"), array("d"), array("d")
        self.alloc_held, self.alloc_instances, self.alloc_part = array("q"), array("q"), array("b")
        self.open: dict[int, int] = {}  # job -> index of its open allocation

    @property
    def allocs(self) -> list[list]:
        """The allocations as rows ``[job, start, end, held, instances, part]`` (a copy)."""
        cols = (self.alloc_job, self.alloc_start, self.alloc_end, self.alloc_held, self.alloc_instances,
                self.alloc_part)
        return [list(row) for row in zip(*cols, strict=True)]

    def hold(self, i: int, now: float, held: int, instances: int = 0) -> None:
        """Job i starts holding GPUs now."""
        if self.start_h[i] != self.start_h[i]:
            self.start_h[i] = now
        self.held_gpus[i] = held
        self.instances[i] = instances
        self.open[i] = len(self.alloc_job)
        self.alloc_job.append(i)
        self.alloc_start.append(now)
        self.alloc_end.append(float("nan"))
        self.alloc_held.append(held)
        self.alloc_instances.append(instances)
        self.alloc_part.append(self.part[i])

    def release(self, i: int, now: float) -> None:
        """Job i gives its GPUs back now (finished, failed on an owned node, or preempted)."""
        self.alloc_end[self.open.pop(i)] = now

    def freeze(self, option: str, kind: str, cap_t: list[float], cap_gpus: list[int], events: int,
               cap_part: list[int] | None = None) -> UsageRecord:
        for i, k in self.open.items():  # still holding at the horizon: planned end
            self.alloc_end[k] = self.end_h[i]
        f8, i8 = np.float64, np.int64
        return UsageRecord(
            option=option, kind=kind,
            start_h=_frozen(self.start_h, f8), end_h=_frozen(self.end_h, f8),
            held_gpus=_frozen(self.held_gpus, i8), instances=_frozen(self.instances, i8),
            part=_frozen(self.part, np.int8), restarts=_frozen(self.restarts, i8),
            preemptions=_frozen(self.preemptions, i8), lost_h=_frozen(self.lost_h, f8),
            overhead_h=_frozen(self.overhead_h, f8),
            pos_h=_frozen(self.pos_h, f8), work_from_h=_frozen(self.work_from_h, f8),
            alloc_job=_frozen(self.alloc_job, i8), alloc_start=_frozen(self.alloc_start, f8),
            alloc_end=_frozen(self.alloc_end, f8), alloc_held=_frozen(self.alloc_held, i8),
            alloc_instances=_frozen(self.alloc_instances, i8), alloc_part=_frozen(self.alloc_part, np.int8),
            alloc_share=np.ones(len(self.alloc_job)),
            capacity_change_h=np.array(cap_t, dtype=float), capacity_gpus=np.array(cap_gpus, dtype=np.int64),
            events=events, capacity_part=None if cap_part is None else np.array(cap_part, dtype=np.int8),
        )
