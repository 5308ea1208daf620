"""The trace formats costsim imports and the entry point that reads any of them:
``import_trace(format, path, options)``; ``FORMATS`` names each format and the module and function
that read it (imported only when used)."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

from costsim.traces.common import ImportOptions, ImportResult
from costsim.traces.table import import_jobs

FORMATS = {  # format name -> "module:function" under costsim.traces
    "slurm": "slurm:read",
    "k8s-pods": "k8s_pods:jobs",
    "philly": "philly:jobs",
    "helios": "helios:jobs",
    "alibaba-pai": "alibaba_pai:jobs",
}
GPU_TYPED = frozenset({"slurm", "k8s-pods", "alibaba-pai"})  # formats that say which GPU a job ran on


def import_trace(fmt: str, path: Path | str, options: ImportOptions | None = None) -> ImportResult:
    """Import ``path`` in format ``fmt`` (a key of FORMATS). Raises ScenarioError for bad input."""
    module, func = FORMATS[fmt].split(":")
    jobs = getattr(import_module(f"costsim.traces.{module}"), func)
    return import_jobs(jobs, path, options or ImportOptions())


__all__ = ["FORMATS", "GPU_TYPED", "ImportOptions", "ImportResult", "import_trace"]
