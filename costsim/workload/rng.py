"""Named random streams from one root seed (no global RNG anywhere).

``stream(seed, name, key, *index)`` is ``default_rng(SeedSequence(seed, spawn_key=(index of name,
name_key(key), *index)))``:
the stream kind (``STREAMS``) and the NAME of the option or job class it belongs to pick the
stream, never a position in a list. So inserting, removing or reordering options or classes
never shifts another one's draws, and a stream is built from integers only — identical
in-process, in a worker process and on Dask (a ``SeedSequence`` object that has already spawned
would not be, nor would Python's ``hash()``, which is salted per process).
"""

from __future__ import annotations

import hashlib

import numpy as np

STREAMS = ("arrivals", "job_shapes", "response_lengths", "failures", "preemptions", "provisioning",
           "trace_scaling")
"""Stream kinds. Per job class: ``arrivals``, ``job_shapes``, ``response_lengths``. Per option:
``failures``, ``preemptions``, ``provisioning``. Once per scenario: ``trace_scaling`` (the
trace's thinning and copies under ``arrival_scale``; its own kind, so no class name can share it).
Append new kinds at the end: a kind's index is part of its streams' keys."""


def name_key(name: str) -> int:
    """A stable 64-bit integer for a name: the first 8 bytes of its BLAKE2b digest (UTF-8).

    The same on every machine, process and Python version, unlike ``hash(name)``; two distinct
    names collide with probability about 2⁻⁶⁴.
    """
    return int.from_bytes(hashlib.blake2b(name.encode("utf-8")).digest()[:8], "little")


def stream(seed: int, name: str, key: str | int | None = None, *index: int) -> np.random.Generator:
    """The generator for stream kind ``name`` (one of ``STREAMS``) of the option or class named ``key``.

    ``key=None``: the scenario-wide stream of that kind (used by ``trace_scaling``). An ``int``
    key is used as it is: for callers outside a scenario (tests driving the engine directly);
    the simulation itself always keys by name. ``index``: further integers appended to the spawn
    key, for a family of independent streams under one name (a job class's arrival layers,
    ``costsim.workload.arrivals``).
    """
    kind = STREAMS.index(name)
    if key is None:
        spawn_key: tuple[int, ...] = (kind,)
    elif isinstance(key, str):
        spawn_key = (kind, name_key(key))
    else:
        spawn_key = (kind, int(key))
    spawn_key += tuple(int(i) for i in index)
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=spawn_key))
