"""Usage records priced into tidy tables (``tables.py``: ``Results`` and ``build``)."""

from costsim.results.tables import Results, build

__all__ = ["Results", "build"]
