"""Constrained number types and time constants shared by the schema and the models.

Field names carry their unit (``_h``, ``_days``, ``_s``, ``_usd``); these aliases carry the range.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

HOURS_PER_DAY = 24.0
HOURS_PER_YEAR = 8760.0  # 365 days: the model's year
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0  # 730 h: the model's month (cost tables, $/kW-month)
SECONDS_PER_HOUR = 3600.0

NonNegative = Annotated[float, Field(ge=0)]
Positive = Annotated[float, Field(gt=0)]
Fraction = Annotated[float, Field(ge=0, le=1)]
GPUCount = Annotated[int, Field(ge=1)]

GPUType = Literal["H100", "H200", "B200", "A100", "L40S"]
"""GPU types the catalog knows (``costsim catalog`` lists their specs and prices)."""

Network = Literal["infiniband", "roce"]
Scheduler = Literal["fifo", "backfill", "priority"]
PriceTier = Literal["hyperscaler", "neocloud"]
