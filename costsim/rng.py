"""Named random streams from one root seed (no global RNG anywhere).

``stream(seed, name, *key)`` is ``default_rng(SeedSequence(seed, spawn_key=(id(name), *key)))``:
built from integers only, so it is identical in-process, in a worker process and on Dask (a
``SeedSequence`` object that has already spawned would not be). Each source of randomness has
its own stream, so adding an option or a failure model never shifts the workload's draws.
"""

from __future__ import annotations

import numpy as np

STREAMS = ("arrivals", "job_shapes", "response_lengths", "failures", "preemptions", "provisioning")


def stream(seed: int, name: str, *key: int) -> np.random.Generator:
    """The generator for stream ``name`` (one of ``STREAMS``), optionally per option/class index."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(STREAMS.index(name), *key)))
