"""The report's "Capacity over time" section: capacity against demand per option (an owned
option's tranches stacked), its purchases from order to delivery and the cash paid by month
(``costsim.plots.capacity_plan``). Only for a scenario that changes over time (tranches, growing
workloads or serving, a cloud price trend): with none, capacity and demand are flat and the
Capacity and Break-even figures already say it."""

from __future__ import annotations

from typing import Any

from costsim.plots import capacity_plan as figures
from costsim.report import html as h
from costsim.results.contract import Results

# Scenario fields that make capacity or demand move over the horizon when set (nonzero, non-empty).
CHANGES_OVER_TIME = ("tranches", "growth_per_year", "price_change_per_year")


def _set(data: Any) -> bool:
    """Whether ``data`` (a scenario's JSON dump) sets a ``CHANGES_OVER_TIME`` field anywhere."""
    if isinstance(data, dict):
        return any((k in CHANGES_OVER_TIME and bool(v)) or _set(v) for k, v in data.items())
    if isinstance(data, list):
        return any(_set(v) for v in data)
    return False


def changes_over_time(scenario) -> bool:
    """Whether the scenario buys in tranches, grows a workload or its serving, or trends a price."""
    return _set(scenario.model_dump(mode="json"))


def capacity_section(first: Results, reps: int) -> str:
    """The section's HTML ("" for a scenario that does not change over time)."""
    if not changes_over_time(first.scenario):
        return ""
    which = "" if reps == 1 else f" (replication 1 of {reps}, seed {first.seed})"
    note = h.para("Demand: GPUs held plus GPUs asked for by queued jobs, daily means; an owned option bought in "
                  "tranches shows each one from its delivery. Purchases run from order to delivery (the lead "
                  "time), coloured by how they are paid. Cash by month: capex in the month it is paid, running "
                  "costs and rent as incurred, no book value credit.", "note")
    # The two figures whose height follows their rows keep it (h.figure sets every figure's).
    drawn = [figures.capacity_vs_demand(first), figures.tranche_timeline(first), figures.monthly_cash(first)]
    return h.section("Capacity over time" + which, note, *(h.figure(f, height=f.layout.height or 460) for f in drawn),
                     anchor="capacity-over-time")


__all__ = ["CHANGES_OVER_TIME", "capacity_section", "changes_over_time"]
