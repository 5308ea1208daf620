"""An owned cluster's purchases (tranches) in numbers: when each is ordered, delivered and paid,
what it costs, and what the hardware is worth as it ages (``value_usd``), for the engine (capacity
grows at each delivery) and for pricing (capital, cash and book value follow each tranche).

An option bought at once is one tranche: its GPUs ordered at hour 0, delivered after the lead
time and paid on order (``OwnedPlan.purchases``).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from costsim.models import economics as eco
from costsim.plan.economics import EconomicsValues
from costsim.units import HOURS_PER_MONTH, HOURS_PER_YEAR

ResaleCurve = tuple[tuple[float, float], ...]  # (age in years since delivery, value as a fraction of capex)


@dataclass(frozen=True, kw_only=True)
class TranchePlan:
    """One purchase: ``gpus`` GPUs (``nodes`` nodes) ordered at ``order_h``, in service from
    ``delivery_h`` (hours from the start) until ``returned_h`` (a lease whose term ends within the
    horizon: its nodes go back to the lessor then; inf: to the horizon's end), costing ``capex_usd``
    and paid by ``payment``: ``order`` (in the order's month), ``delivery`` (in the delivery's
    month) or ``lease`` (``lease_usd_per_month`` per 730-h month for ``lease_term_h`` hours from
    delivery)."""

    gpus: int
    nodes: int
    order_h: float
    delivery_h: float
    capex_usd: float
    payment: str = "order"
    lease_term_h: float = 0.0
    lease_usd_per_month: float = 0.0
    returned_h: float = math.inf

    @property
    def span(self) -> tuple[float, float, int]:
        """(delivery hour, return hour, GPUs): what ``InService.of`` takes of this tranche."""
        return self.delivery_h, self.returned_h, self.gpus

    @property
    def leased(self) -> bool:
        """Leased: paid monthly, the hardware going back to the lessor (no book value of one's own)."""
        return self.payment == "lease"

    @property
    def lead_h(self) -> float:
        """Hours from its order to its delivery: the option's lead time."""
        return self.delivery_h - self.order_h

    @property
    def paid_h(self) -> float:
        """Hour the capex of a bought tranche is paid: its order's or its delivery's."""
        return self.order_h if self.payment == "order" else self.delivery_h

    @property
    def lease_end_h(self) -> float:
        """Hour a lease's last payment period ends (its delivery for a bought tranche)."""
        return self.delivery_h + (self.lease_term_h if self.leased else 0.0)

    def lease_owed_usd(self, horizon_h: float) -> float:
        """A lease's payments due after the horizon's end, USD: the monthly payment × the 730-h months
        of its term left then, owed at that end like the rest of a reservation's term (signed, so
        owed whatever the use; the hardware goes back to the lessor, so nothing is credited). 0 for
        a bought tranche, a term ended by then, or a lease delivered after the horizon (its payments
        begin at delivery, as a purchase paid on a delivery after the horizon is not paid within it)."""
        if not self.leased or self.delivery_h >= horizon_h:
            return 0.0
        return self.lease_usd_per_month * max(self.lease_end_h - horizon_h, 0.0) / HOURS_PER_MONTH

    def unpriced(self) -> TranchePlan:
        """The tranche as a run reads it (``OwnedPlan.unpriced``): its GPUs and hours only, prices
        NaN and payment terms dropped (how it is paid moves no job, so variants that differ only
        in payment share a run; a lease's return within the horizon moves jobs, so it is kept)."""
        nan = float("nan")
        return TranchePlan(gpus=self.gpus, nodes=self.nodes, order_h=self.order_h, delivery_h=self.delivery_h,
                           capex_usd=nan, lease_usd_per_month=nan, returned_h=self.returned_h)


def residual_frac(curve: ResaleCurve | None, econ: EconomicsValues) -> float:
    """What the hardware is worth at the end of its depreciation life, as a fraction of capex: the
    resale curve's value at ``depreciation_years`` when there is one, else ``residual_value_frac``."""
    return econ.residual_value_frac if curve is None else eco.resale_frac(curve, econ.depreciation_years)


def value_usd(capex_usd: float, curve: ResaleCurve | None, econ: EconomicsValues, age_years: float) -> float:
    """What hardware bought for ``capex_usd`` is worth ``age_years`` after its delivery: read off the
    resale curve, or without one its straight-line book value (to ``residual_value_frac`` over
    ``depreciation_years``)."""
    if curve is None:
        return eco.book_value_usd(capex_usd, econ.residual_value_frac, econ.depreciation_years, age_years)
    return capex_usd * eco.resale_frac(curve, age_years)


def lease_usd_per_month(capex_usd: float, curve: ResaleCurve | None, econ: EconomicsValues, months: int,
                        rate: float) -> float:
    """A lease's monthly payment (``economics.lease_payment_usd``): the hardware goes back to the
    lessor at the term's end worth ``value_usd`` at that age (the residual the lessee does not pay for)."""
    residual = value_usd(capex_usd, curve, econ, months * HOURS_PER_MONTH / HOURS_PER_YEAR)
    return eco.lease_payment_usd(capex_usd, residual, rate, months)


def book_value_at_usd(tranches: Sequence[TranchePlan], curve: ResaleCurve | None, econ: EconomicsValues,
                      horizon_h: float) -> float:
    """Value credited at the horizon's end: each bought tranche paid by then at its age then
    (``value_usd``; one delivered after the horizon at age 0). Leased tranches are the
    lessor's; a tranche paid on a delivery after the horizon was never paid for."""
    total = 0.0
    for t in tranches:
        if t.leased or t.paid_h >= horizon_h:
            continue
        total += value_usd(t.capex_usd, curve, econ, max(horizon_h - t.delivery_h, 0.0) / HOURS_PER_YEAR)
    return total


@dataclass(frozen=True)
class InService:
    """GPUs in service over time, a step function of the tranches: a tranche counts from its
    delivery (hours) until its return to the lessor (inf: never). ``times`` are the hours the count
    changes, ascending, the first -inf; ``gpus[k]`` the count from ``times[k]`` on; ``most_after[k]``
    the most at any hour from ``times[k]`` on (the largest job that can ever fit from then)."""

    times: tuple[float, ...]
    gpus: tuple[int, ...]
    most_after: tuple[int, ...]

    @classmethod
    def of(cls, spans: Sequence[tuple[float, float, int]]) -> InService:
        """From (delivery hour, return hour, GPUs) per tranche."""
        changes: dict[float, int] = {}
        for delivered, returned, gpus in spans:
            if returned <= delivered:
                continue  # gone before it came: never in service
            changes[delivered] = changes.get(delivered, 0) + gpus
            if math.isfinite(returned):
                changes[returned] = changes.get(returned, 0) - gpus
        times, counts, now = [-math.inf], [0], 0
        for t in sorted(changes):
            now += changes[t]
            times.append(t)
            counts.append(now)
        most = list(counts)
        for k in range(len(most) - 2, -1, -1):
            most[k] = max(most[k], most[k + 1])
        return cls(tuple(times), tuple(counts), tuple(most))

    def at(self, h: float) -> int:
        """GPUs in service at hour ``h``."""
        return self.gpus[bisect.bisect_right(self.times, h) - 1]

    def most_from(self, h: float) -> int:
        """The most GPUs in service at any hour from ``h`` on."""
        return self.most_after[bisect.bisect_right(self.times, h) - 1]

    def most_from_each(self, h: np.ndarray) -> np.ndarray:
        """``most_from`` of each hour of ``h`` (an array)."""
        k = np.searchsorted(np.asarray(self.times), np.asarray(h, dtype=float), side="right") - 1
        return np.asarray(self.most_after, dtype=np.int64)[k]
