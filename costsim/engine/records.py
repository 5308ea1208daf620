"""What a run records (usage only: pricing is applied later, in results)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BASE, BURST = 0, 1


@dataclass(frozen=True)
class UsageRecord:
    """Per job (in job-table order) and per allocation. Times in hours; NaN where it never happened.

    Per job: ``start_h`` when it first held GPUs; ``end_h`` when its last attempt ends (may lie past
    the horizon: the run is cut there); ``held_gpus`` GPUs it holds (whole nodes beyond one node,
    whole instances on cloud); ``part`` where it ran on a hybrid (``BASE`` elsewhere); ``restarts``
    interruptions (failures and preemptions), ``preemptions`` spot preemptions, ``lost_h`` hours of
    work lost to them, ``overhead_h`` hours held restarting or waiting for a swapped node;
    ``pos_h`` hours of its planned run safely checkpointed, ``work_from_h`` when its current attempt
    began (or begins) to work: together, how far it got by the horizon.

    Per allocation (a job holds GPUs once, or again after each preemption or owned-node failure):
    ``alloc_job``, ``alloc_start``, ``alloc_end`` (planned end if still open), ``alloc_held``,
    ``alloc_instances`` (0 on owned and reserved pools), ``alloc_part``.
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
    capacity_change_h: np.ndarray  # times the installed capacity changes (delivery, failures, repairs)
    capacity_gpus: np.ndarray  # installed GPUs in service from each change on; empty without a pool
    events: int = 0  # SimPy events scheduled in the run (a cost measure for benchmarks)


class Recorder:
    """Plain lists filled during the run, frozen into arrays at the end."""

    def __init__(self, n: int):
        nan = float("nan")
        self.start_h = [nan] * n
        self.end_h = [nan] * n
        self.held_gpus = [0] * n
        self.instances = [0] * n
        self.part = [BASE] * n
        self.restarts = [0] * n
        self.preemptions = [0] * n
        self.lost_h = [0.0] * n
        self.overhead_h = [0.0] * n
        self.pos_h = [0.0] * n
        self.work_from_h = [nan] * n
        self.allocs: list[list] = []  # [job, start, end, held, instances, part]
        self.open: dict[int, int] = {}  # job -> index of its open allocation

    def hold(self, i: int, now: float, held: int, instances: int = 0) -> None:
        """Job i starts holding GPUs now."""
        if self.start_h[i] != self.start_h[i]:
            self.start_h[i] = now
        self.held_gpus[i] = held
        self.instances[i] = instances
        self.open[i] = len(self.allocs)
        self.allocs.append([i, now, float("nan"), held, instances, self.part[i]])

    def release(self, i: int, now: float) -> None:
        """Job i gives its GPUs back now (finished, failed on an owned node, or preempted)."""
        self.allocs[self.open.pop(i)][2] = now

    def freeze(self, option: str, kind: str, cap_t: list[float], cap_gpus: list[int], events: int) -> UsageRecord:
        for i, k in self.open.items():  # still holding at the horizon: planned end
            self.allocs[k][2] = self.end_h[i]
        a = np.array(self.allocs, dtype=float).reshape(-1, 6)
        return UsageRecord(
            option=option, kind=kind,
            start_h=np.array(self.start_h, dtype=float), end_h=np.array(self.end_h, dtype=float),
            held_gpus=np.array(self.held_gpus, dtype=np.int64), instances=np.array(self.instances, dtype=np.int64),
            part=np.array(self.part, dtype=np.int8), restarts=np.array(self.restarts, dtype=np.int64),
            preemptions=np.array(self.preemptions, dtype=np.int64), lost_h=np.array(self.lost_h, dtype=float),
            overhead_h=np.array(self.overhead_h, dtype=float),
            pos_h=np.array(self.pos_h, dtype=float), work_from_h=np.array(self.work_from_h, dtype=float),
            alloc_job=a[:, 0].astype(np.int64), alloc_start=a[:, 1], alloc_end=a[:, 2],
            alloc_held=a[:, 3].astype(np.int64), alloc_instances=a[:, 4].astype(np.int64),
            alloc_part=a[:, 5].astype(np.int8),
            capacity_change_h=np.array(cap_t, dtype=float), capacity_gpus=np.array(cap_gpus, dtype=np.int64),
            events=events,
        )
