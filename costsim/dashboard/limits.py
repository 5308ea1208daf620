"""What one dashboard session may ask of the server (``Limits``), read from the environment.

Imports nothing heavy: the server reads its limits before costsim's tables and models are imported,
to start its warm worker processes first (``costsim.dashboard.pool``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from costsim.errors import Problem


@dataclass(frozen=True)
class Limits:
    """What one dashboard session may ask of the server. Sizes in MiB, time in seconds, memory in
    GiB; each can be raised with the environment variable named in ``ENV`` (``make app`` passes
    the environment through)."""

    upload_mb: float = 5.0  # a scenario YAML
    trace_upload_mb: float = 50.0  # a trace CSV (a million jobs is about 40 MiB)
    run_seconds: float = 120.0  # one simulation of every option
    run_memory_gb: float = 8.0  # address space of the process that simulates
    cache_mb: float = 1024.0  # pickled results the server keeps for every session (a million-job run: ~281 MiB)
    workers: float = 4.0  # worker processes of every session together (simulations, spares, tabs, upload readers)
    workers_memory_gb: float = 32.0  # their address space together
    disk_cache_mb: float = 2048.0  # runs kept on disk between server starts (disk_runs; 0: none)

    ENV = {"upload_mb": "COSTSIM_UPLOAD_MB", "trace_upload_mb": "COSTSIM_TRACE_UPLOAD_MB",
           "run_seconds": "COSTSIM_RUN_SECONDS", "run_memory_gb": "COSTSIM_RUN_MEMORY_GB",
           "cache_mb": "COSTSIM_CACHE_MB", "workers": "COSTSIM_WORKERS",
           "workers_memory_gb": "COSTSIM_WORKERS_MEMORY_GB", "disk_cache_mb": "COSTSIM_DISK_CACHE_MB"}
    WHOLE = ("workers",)  # counts: a fraction is refused, not rounded
    ZERO_OK = ("disk_cache_mb",)  # 0 turns it off

    @property
    def session_runs_bytes(self) -> int:
        """Bytes of pickled runs a session may keep unpickled between its reruns (a tab, a widget),
        outside the result cache: an eighth of the cache's limit, since every open session may
        hold one such set."""
        return int(self.cache_mb * 2**20) // 8

    @property
    def process_memory_gb(self) -> float:
        """Address space of each worker process, GiB: the run limit, within the workers' total."""
        return min(self.run_memory_gb, self.workers_memory_gb)

    @property
    def worker_slots(self) -> int:
        """Worker processes that may live at once across every session: ``workers``, fewer when
        that many at ``process_memory_gb`` each would pass ``workers_memory_gb`` (at least one)."""
        return max(1, min(int(self.workers), int(self.workers_memory_gb // self.process_memory_gb)))

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Limits:
        """Defaults overridden by the environment; a value that is not a positive finite number (or
        0, where ``ZERO_OK``) is a ScenarioError naming the variable (an operator's typo must not
        lift a limit silently)."""
        values, problems = {}, []
        for name, var in cls.ENV.items():
            raw = environ.get(var)
            if raw is None or raw.strip() == "":
                continue
            try:
                value = float(raw)
            except ValueError:
                value = math.nan
            if not (math.isfinite(value) and (value > 0 or (value == 0 and name in cls.ZERO_OK))):
                kind = "a number ≥ 0" if name in cls.ZERO_OK else "a positive number"
                problems.append(Problem((var,), f"must be {kind} (got {raw!r})"))
            elif name in cls.WHOLE and value != int(value):
                problems.append(Problem((var,), f"must be a whole number (got {raw!r})"))
            values[name] = value
        if problems:
            from costsim.scenario.errors import ScenarioError  # here: the schema layer's import is heavy

            raise ScenarioError("environment", problems)
        return cls(**values)


DEFAULT_LIMITS = Limits()  # the limits when the environment sets none (frozen: safe to share)


__all__ = ["DEFAULT_LIMITS", "Limits"]
