"""Time constants of the model, in one place (stdlib only): every layer converts hours, days,
months and years with these, so a day is 24 h and a year 365 days everywhere."""

from __future__ import annotations

HOURS_PER_DAY = 24.0
HOURS_PER_YEAR = 8760.0  # 365 days: the model's year
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0  # 730 h: the model's month (cost tables, $/kW-month)
SECONDS_PER_HOUR = 3600.0
