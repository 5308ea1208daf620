"""Timing for the benchmarks: best of repeats, measured in this process."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def best(fn: Callable[[], T], repeats: int) -> tuple[float, T]:
    """The shortest wall time of ``repeats`` calls (least disturbed by the machine) and a result."""
    times = []
    out = None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out  # type: ignore[return-value]
