"""What a run records per job (usage only: pricing is applied later, in results)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class UsageRecord:
    """Per job, in the order of the job table. Times in hours; NaN where it never happened.

    ``start_h``: the job first holds GPUs (owned: allocation; cloud: instances delivered and
    billed). ``end_h``: it releases them (may lie past the horizon: the run is cut there).
    ``held_gpus``: GPUs it holds (owned jobs over one node take whole nodes; cloud jobs whole
    instances). ``instances``: cloud instances (0 on owned and reserved). ``part``: where it ran on
    a hybrid, ``BASE`` or ``BURST`` (``BASE`` elsewhere).
    """

    option: str
    kind: str
    start_h: np.ndarray
    end_h: np.ndarray
    held_gpus: np.ndarray
    instances: np.ndarray
    part: np.ndarray
    capacity_change_h: np.ndarray  # times the installed capacity changes
    capacity_gpus: np.ndarray  # installed GPUs from each change on (owned); empty for cloud
    events: int = 0  # SimPy events scheduled in the run (a cost measure for benchmarks)


BASE, BURST = 0, 1


class Recorder:
    """Plain lists filled during the run, frozen into arrays at the end."""

    def __init__(self, n: int):
        nan = float("nan")
        self.start_h = [nan] * n
        self.end_h = [nan] * n
        self.held_gpus = [0] * n
        self.instances = [0] * n
        self.part = [BASE] * n

    def freeze(self, option: str, kind: str, cap_t: list[float], cap_gpus: list[int], events: int) -> UsageRecord:
        return UsageRecord(
            option=option,
            kind=kind,
            start_h=np.array(self.start_h, dtype=float),
            end_h=np.array(self.end_h, dtype=float),
            held_gpus=np.array(self.held_gpus, dtype=np.int64),
            instances=np.array(self.instances, dtype=np.int64),
            part=np.array(self.part, dtype=np.int8),
            capacity_change_h=np.array(cap_t, dtype=float),
            capacity_gpus=np.array(cap_gpus, dtype=np.int64),
            events=events,
        )
