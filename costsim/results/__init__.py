"""Usage records priced into tidy tables (``contract.py``: ``Results`` and its columns; ``tables.py``: ``build``)."""

from costsim.results.contract import (
    COST_COLUMNS,
    JOB_COLUMNS,
    PHASE_COLUMNS,
    SUMMARY_COLUMNS,
    TIMESERIES_COLUMNS,
    Results,
)
from costsim.results.tables import build

__all__ = ["COST_COLUMNS", "JOB_COLUMNS", "PHASE_COLUMNS", "SUMMARY_COLUMNS", "TIMESERIES_COLUMNS", "Results", "build"]
