"""Usage records priced into tidy tables (``contract.py``: ``Results`` and its columns; ``tables.py``: ``build``)."""

from costsim.results.contract import Results
from costsim.results.tables import build

__all__ = ["Results", "build"]
