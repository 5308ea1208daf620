"""An owned cluster's purchases over time (``OwnedOption.tranches``) and the value of its
hardware by age (``OwnedOption.resale_curve``): docs/scenarios.md, "Buying in tranches"."""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import Field, model_validator

from costsim.scenario.base import StrictModel
from costsim.scenario.bounds import MAX_HORIZON_DAYS, Days, Fraction, GPUCount, float_bounds, int_bounds, span

# A lease of up to 30 years (the longest horizon), in 730-h months; the depreciation life caps it
# (costsim.plan.resolve). A lessor's rate up to 100% a year.
LeaseMonths: TypeAlias = Annotated[int, *int_bounds(ge=1, le=360)]
LeaseRate: TypeAlias = Annotated[float, *float_bounds(ge=0, le=1)]
AgeYears: TypeAlias = Annotated[float, *float_bounds(ge=0, le=MAX_HORIZON_DAYS / 365)]
Payment = Literal["order", "delivery", "lease"]


class Tranche(StrictModel):
    """One purchase of an owned cluster: ``gpus`` ordered on ``order_day``, delivered the option's
    lead time later, when its nodes join the cluster; paid on order, on delivery or leased."""

    gpus: GPUCount = Field(description=f"GPUs bought, a whole number of nodes ({span(GPUCount)}).")
    order_day: Days = Field(0.0, description=f"Day of the order, from the start ({span(Days)}); before the horizon.")
    payment: Payment = Field(
        "order", description="order: the capex is paid in the order's month; delivery: in the delivery's month; "
        "lease: lease_term_months monthly payments from delivery, the hardware going back to the lessor "
        "(no book value credited).")
    lease_term_months: LeaseMonths | None = Field(
        None, description=f"lease only: months of payments from delivery ({span(LeaseMonths)}; 730-h months), "
        "at most the depreciation life.")
    lease_rate_per_year: LeaseRate | None = Field(
        None, description=f"lease only: the lessor's annual rate ({span(LeaseRate)}; monthly rate = it / 12); "
        "null: economics.cost_of_capital.")

    @model_validator(mode="after")
    def _lease_fields(self) -> Tranche:
        given = [f for f in ("lease_term_months", "lease_rate_per_year") if getattr(self, f) is not None]
        if self.payment != "lease" and given:
            raise ValueError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to payment: lease only")
        if self.payment == "lease" and self.lease_term_months is None:
            raise ValueError("payment: lease needs lease_term_months (the months of payments)")
        return self


class ResalePoint(StrictModel):
    """The hardware's value ``age_years`` after its delivery, as a fraction of its capex."""

    age_years: AgeYears = Field(description=f"Years since delivery ({span(AgeYears)}).")
    value_frac: Fraction = Field(description=f"Value as a fraction of capex ({span(Fraction)}).")
