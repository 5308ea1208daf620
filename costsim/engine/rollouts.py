"""Rollout instances of offloaded jobs (docs/rollout-offload.md), added to a finished run's record.

A job whose class offloads its rollouts (``rollout_pool``) holds its training GPUs on the option's
pool, simulated event by event, and ``k`` rented instances on the rollout pool for as long as it
holds them. Those instances are priced by expectation (``costsim.models.offload``: the share of the
time an instance is up, plus the restarts each preemption bills), so they are not events: they are
allocation rows added once, after the run, on the pool's part (``ROLLOUT``), each mirroring an
allocation of the job at home with ``alloc_share`` the billed share. A job waiting at home again
after a failure holds no instances: each hold's are billed from their delivery (the provisioning
delay after it starts at home; its restart covers provisioning, startup and the push).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from costsim.engine.records import BASE, ROLLOUT, UsageRecord
from costsim.workload.plan import Offloads


def with_rollouts(rec: UsageRecord, off: Offloads) -> UsageRecord:
    """``rec`` with a rollout allocation beside each home (``BASE``) allocation of an offloaded job."""
    k = np.flatnonzero((rec.alloc_part == BASE) & off.offloads[rec.alloc_job])
    job = rec.alloc_job[k]
    start, end = rec.alloc_start[k], rec.alloc_end[k]
    start = np.minimum(start + off.delivery_h[job], end)  # each hold re-acquires its instances
    instances = off.instances[job]
    return replace(
        rec,
        alloc_job=np.concatenate([rec.alloc_job, job]),
        alloc_start=np.concatenate([rec.alloc_start, start]),
        alloc_end=np.concatenate([rec.alloc_end, end]),
        alloc_held=np.concatenate([rec.alloc_held, instances * off.gpus_per_instance[job]]),
        alloc_instances=np.concatenate([rec.alloc_instances, instances]),
        alloc_part=np.concatenate([rec.alloc_part, np.full(len(k), ROLLOUT, dtype=np.int8)]),
        alloc_share=np.concatenate([rec.alloc_share, off.share[job]]),
    )

