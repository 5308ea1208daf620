"""The assumptions table as a reader sees it (the report's section, the dashboard's Data tab): its
values as text, from ``costsim.results.assumptions``' table of numbers and provenance."""

from __future__ import annotations

from typing import Any

import pandas as pd

from costsim.present import formats


def shown(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (``costsim.results.assumptions.assumptions``) with its values as text: separators,
    no scientific notation, up to 10 significant figures so a catalog value reads as written."""
    def text(v: Any) -> str:
        if isinstance(v, str):
            return v
        if isinstance(v, int) and not isinstance(v, bool):
            return formats.count(v)
        return formats.significant(float(v), 10)
    return frame.assign(value=[text(v) for v in frame["value"]])
