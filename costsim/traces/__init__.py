"""Trace importers: a job record from a real cluster (SLURM, Kubernetes, public traces) into
costsim's trace CSV. One module per format, each a ``jobs(path, options, report)`` generator of
:class:`~costsim.traces.common.Job`; :mod:`costsim.traces.common` does the rest, and
``formats.py`` holds ``import_trace(format, path, options)`` and ``FORMATS``.
"""

from costsim.traces.common import ImportOptions, ImportResult
from costsim.traces.formats import FORMATS, GPU_TYPED, import_trace

__all__ = ["FORMATS", "GPU_TYPED", "ImportOptions", "ImportResult", "import_trace"]
