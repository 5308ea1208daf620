"""How much input the loader will read: file sizes, YAML nodes, nesting depth.

Each limit bounds the work (time and memory) of reading one input before anything is simulated,
so a hostile or mistaken file is refused in seconds instead of hanging a run or the dashboard.
The two file-size limits can be raised with environment variables (a whole number of bytes):

- ``COSTSIM_MAX_SCENARIO_BYTES`` (default 5,000,000): a scenario file or uploaded text;
- ``COSTSIM_MAX_TRACE_BYTES`` (default 1,000,000,000): a trace CSV (about 25 million jobs;
  reading one takes a few times its size in memory).

The YAML limits are fixed: no real scenario comes near them.
"""

from __future__ import annotations

import os

from costsim.scenario.errors import Problem, ScenarioError

DEFAULT_MAX_SCENARIO_BYTES = 5_000_000
DEFAULT_MAX_TRACE_BYTES = 1_000_000_000
MAX_SCENARIO_BYTES_ENV = "COSTSIM_MAX_SCENARIO_BYTES"
MAX_TRACE_BYTES_ENV = "COSTSIM_MAX_TRACE_BYTES"

MAX_YAML_DEPTH = 50
"""Nesting of mappings and lists; a scenario needs 7. Deeper input would exhaust Python's stack."""

MAX_YAML_NODES = 100_000
"""Nodes in a scenario, each alias counted as the nodes it stands for (so an alias "bomb" of
nested anchors, 10⁹ nodes in 500 bytes, is refused after 100,000). A scenario at the class and
option limits has about 50,000; the pure-Python YAML parser reads about 20,000 a second on a
loaded machine, so this also bounds the parse to about 10 s."""


def _env_limit(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip().replace("_", ""))
    except ValueError:
        value = -1
    if value < 1:
        raise ScenarioError(f"${name}", [Problem((), f"must be a whole number of bytes >= 1 (got {raw!r})")])
    return value


def max_scenario_bytes() -> int:
    """The largest scenario file or text read, in bytes (``COSTSIM_MAX_SCENARIO_BYTES``)."""
    return _env_limit(MAX_SCENARIO_BYTES_ENV, DEFAULT_MAX_SCENARIO_BYTES)


def max_trace_bytes() -> int:
    """The largest trace file read, in bytes (``COSTSIM_MAX_TRACE_BYTES``)."""
    return _env_limit(MAX_TRACE_BYTES_ENV, DEFAULT_MAX_TRACE_BYTES)


def too_large(size: int, limit: int, env: str, what: str) -> Problem:
    """The problem of an input over its size limit, saying how to raise the limit."""
    return Problem((), f"{what} is {size:,} bytes, more than the limit of {limit:,} (set {env} to raise it)")
