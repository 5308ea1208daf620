"""What would flip the verdict, found honestly (DESIGN.md section 14: "flips that are real").

Two flips, each the point at which the fair difference between the recommended option and the
option it is compared with (one owned, one rented) is zero:

- **electricity** (``electricity_flip``): exact. Energy is the only cost line that moves with the
  price p of a kWh, in proportion to it, so Δ(p) = Δ(p0) + (E_a − E_b)·(p/p0 − 1) and the root
  p* = p0·(1 − Δ(p0)/(E_a − E_b)). Reported only within a factor ``FLIP_RANGE`` of today's price.
- **utilisation** (``utilization_flip``): re-simulated. The work is scaled by a factor f (the
  scenario's ``arrival_scale`` × f: with arrivals drawn sequentially, a smaller factor thins the
  same jobs and a larger one adds jobs without moving the others), only the two options (with the
  parts they are built of, and the rentals that set the price of unfinished work) are simulated,
  on the first replication's seed, and f is searched until the fair difference changes sign
  between two simulated factors whose owned utilisations are within ``UTILIZATION_STEP`` of each
  other. The flip is the owned option's utilisation interpolated between them; the two ends are
  simulated, so just past the flip the order of the pair has been seen to change. A linear model
  (fixed cost + a part in proportion to the work) gives the first factor to try; regula falsi
  (Illinois) the next. Omitted, with the reason, when no factor that keeps the owned option's
  utilisation within 0–100 % changes the order, when the option that would become cheaper
  would then miss a target or not keep up, or when the search runs out of
  ``FLIP_SIMULATIONS``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

import pandas as pd

from costsim.decisions.fair import fair_rows
from costsim.decisions.targets import Shortfall, Target, shortfall
from costsim.plan import facts
from costsim.scenario import Scenario

if TYPE_CHECKING:  # for the type only: costsim.results is imported lazily
    from costsim.results import Results

Simulate: TypeAlias = Callable[[Scenario, int], "Results"]

FLIP_RANGE = 10.0  # an electricity flip further than this factor from today's price is not reported
FLIP_SIMULATIONS = 8  # simulations at most to find the utilisation flip
UTILIZATION_STEP = 0.02  # the search stops when the bracket's utilisations are this close
MIN_FACTOR = 0.02  # the smallest share of today's work tried
MAX_ARRIVAL_SCALE = 100.0  # workload.arrival_scale's upper bound in the schema
# Cost lines that grow with the work; the others (capital, facility, staff, a reservation, serving)
# are taken as fixed by the linear model that picks the first factor to try.
VARIABLE_LINES = ("cost_energy_usd", "cost_cloud_usd", "cost_rollout_usd", "unfinished_rent_usd", "waiting_cost_usd")
# Why there is no utilisation flip (``Flip.reason``), a code ``costsim.present.wording.flip_reason`` words:
UNUSED = "unused"  # the owned option is not used, or the two cost the same today
FULL = "full"  # the owned option is already fully used (``owned_utilization``): no more work fits
UNCHANGED = "unchanged"  # no factor in range changes the order (``less_work``: the search went below today's)
NOT_NARROWED = "not narrowed"  # not narrowed to UTILIZATION_STEP within FLIP_SIMULATIONS
WINNER_MISSES = "winner misses"  # where ``winner`` would cost less it misses a target or cannot keep up
# ... and why the verdict did not search (``verdict.decide``):
NOT_SEARCHED = "not searched"  # decide(..., flips=False)
NO_SCENARIO = "no scenario"  # runs whose scenario (and seeds) are not known
ORDER_DIFFERS = "order differs"  # the first replication orders the pair the other way from the mean


@dataclass(frozen=True, kw_only=True)
class Flip:
    """``utilization``: the owned option's utilisation at the flip (NaN when there is none, with
    ``reason``); ``work_factor``: the share of today's work there; ``low``/``high``: the simulated
    factors around it (the order of the pair differs at the two); ``simulations``: run. Why there
    is none, in numbers: ``owned``, the owned option searched, and its utilisation
    ``owned_utilization`` (today's when ``FULL``; where the order changes when ``WINNER_MISSES``);
    ``less_work``: the search went to less work than today's (``UNCHANGED``); ``winner`` and its
    ``shortfall`` there (``WINNER_MISSES``)."""

    utilization: float = math.nan
    work_factor: float = math.nan
    low: float = math.nan
    high: float = math.nan
    reason: str = ""
    simulations: int = 0
    owned: str = ""
    owned_utilization: float = math.nan
    less_work: bool = False
    winner: str = ""
    shortfall: Shortfall | None = None


def electricity_flip(diff_usd: float, energy_a_usd: float, energy_b_usd: float, price_usd_per_kwh: float) -> float:
    """The electricity price (USD/kWh) at which the fair difference a − b is zero; NaN unless it
    is within a factor ``FLIP_RANGE`` of ``price_usd_per_kwh`` (beyond that it is no guide)."""
    slope = energy_a_usd - energy_b_usd
    if slope == 0 or math.isnan(diff_usd) or price_usd_per_kwh <= 0:
        return math.nan
    p = price_usd_per_kwh * (1 - diff_usd / slope)
    return p if price_usd_per_kwh / FLIP_RANGE <= p <= price_usd_per_kwh * FLIP_RANGE else math.nan


def _fixed(row) -> float:
    return float(row["fair_total_usd"]) - sum(float(row.get(c, 0.0)) for c in VARIABLE_LINES)


def linear_factor(build, rent) -> float:
    """The factor at which Δ(f) = ΔF + f·(Δ1 − ΔF) is zero, ΔF the fixed parts' difference and Δ1
    today's fair difference (NaN when the line has no root)."""
    fixed = _fixed(build) - _fixed(rent)
    today = float(build["fair_total_usd"]) - float(rent["fair_total_usd"])
    slope = today - fixed
    return -fixed / slope if slope != 0 else math.nan


def needed_options(scenario: Scenario, names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` with the options they are built of (a hybrid's base and burst, rollout pools) and
    every on-demand or spot option (they set the price of unfinished work), in scenario order."""
    by_name = {o.name: o for o in scenario.options}
    keep: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in keep or name not in by_name:
            continue
        keep.add(name)
        opt = by_name[name]
        todo += [n for n in (*facts.parts_of(opt), opt.rollout_pool) if n]
    keep |= set(facts.pay_as_you_go_names(scenario))
    return tuple(o.name for o in scenario.options if o.name in keep)


class _Search:
    """Fair differences of the pair at factors of today's work, simulated on one seed."""

    def __init__(self, scenario: Scenario, seed: int, build: str, rent: str, price: float, simulate: Simulate | None):
        keep = needed_options(scenario, (build, rent))
        self.simulate = simulate
        self.scenario = scenario.model_copy(update={"options": tuple(o for o in scenario.options if o.name in keep)})
        self.seed, self.build, self.rent, self.price = seed, build, rent, price
        self.simulations = 0
        self.rows: dict[float, pd.DataFrame] = {}

    def at(self, factor: float) -> tuple[float, float]:
        """(fair difference build − rent, the build option's utilisation) at ``factor``."""
        from costsim.runs import api

        if factor not in self.rows:
            scale = self.scenario.workload.arrival_scale * factor
            workload = self.scenario.workload.model_copy(update={"arrival_scale": scale})
            scaled = self.scenario.model_copy(update={"workload": workload})
            res = (self.simulate or (lambda sc, seed: api.simulate(sc, seed=seed)))(scaled, self.seed)
            self.simulations += 1
            self.rows[factor] = fair_rows(res.summary, self.price).set_index("option")
        rows = self.rows[factor]
        return (float(rows.at[self.build, "fair_total_usd"] - rows.at[self.rent, "fair_total_usd"]),
                float(rows.at[self.build, "utilization"]))

    def shortfall(self, factor: float, option: str, wanted: tuple[Target, ...]) -> Shortfall:
        """What ``option`` misses at ``factor`` of keeping up and the targets."""
        return shortfall(self.rows[factor].loc[option], wanted)


def utilization_flip(scenario: Scenario, seed: int, build, rent, *, price: float,
                     wanted: tuple[Target, ...], simulate: Simulate | None = None) -> Flip:
    """The owned option's utilisation at which ``build`` and ``rent`` (``fair_rows`` rows of one
    run on ``seed``) cost the same (see the module). ``simulate(scenario, seed) -> Results``: how
    to run a simulation (default ``costsim.simulate``; the dashboard runs them in its bounded
    workers)."""
    today = float(build["fair_total_usd"]) - float(rent["fair_total_usd"])
    u1 = float(build["utilization"])
    if not (u1 > 0) or today == 0 or math.isnan(today):
        return Flip(reason=UNUSED)
    cheaper_builds = today < 0  # owning is cheaper today: the flip lies at less work
    top = min(1.0 / u1, MAX_ARRIVAL_SCALE / scenario.workload.arrival_scale)  # owned utilisation ≤ 100 %
    lo_f, hi_f = (MIN_FACTOR, 1.0) if cheaper_builds else (1.0, top)
    if hi_f <= lo_f * 1.0001:
        return Flip(reason=FULL, owned=str(build["option"]), owned_utilization=u1)
    search = _Search(scenario, seed, str(build["option"]), str(rent["option"]), price, simulate)
    known = {1.0: (today, u1)}
    guess = linear_factor(build, rent)
    tries = [min(max(guess, lo_f), hi_f) if math.isfinite(guess) else (lo_f if cheaper_builds else hi_f)]
    far_end = lo_f if cheaper_builds else hi_f
    if tries[0] != far_end:
        tries.append(far_end)
    # Bracket: the first factor tried whose difference has the other sign.
    other = None
    for f in tries:
        if search.simulations >= FLIP_SIMULATIONS:
            break
        known[f] = search.at(f)
        if (known[f][0] > 0) == (today > 0):
            continue
        other = f
        break
    if other is None:
        return Flip(reason=UNCHANGED, less_work=cheaper_builds, owned=search.build, simulations=search.simulations)
    a = min((f for f in known if (known[f][0] > 0) == (today > 0)), key=lambda f: abs(f - other))
    b = other  # a: today's order, b: the other order
    fa, fb = known[a][0], known[b][0]  # Illinois: a value halved when its end is kept twice running
    kept = ""
    while abs(known[a][1] - known[b][1]) > UTILIZATION_STEP and search.simulations < FLIP_SIMULATIONS:
        f = (a * fb - b * fa) / (fb - fa)
        if not min(a, b) < f < max(a, b):
            f = (a + b) / 2
        known[f] = search.at(f)
        if (known[f][0] > 0) == (today > 0):
            a, fa = f, known[f][0]
            fb = fb / 2 if kept == "b" else fb
            kept = "b"
        else:
            b, fb = f, known[f][0]
            fa = fa / 2 if kept == "a" else fa
            kept = "a"
    (da, ua), (db, ub) = known[a], known[b]
    if abs(ua - ub) > UTILIZATION_STEP:
        return Flip(reason=NOT_NARROWED, owned=search.build, simulations=search.simulations)
    share = da / (da - db)
    u_star, f_star = ua + (ub - ua) * share, a + (b - a) * share
    winner = str(rent["option"]) if cheaper_builds else str(build["option"])
    missed = search.shortfall(b, winner, wanted) if b in search.rows else None
    if missed is not None and missed.conditions:
        return Flip(reason=WINNER_MISSES, owned=search.build, owned_utilization=u_star, winner=winner,
                    shortfall=missed, simulations=search.simulations)
    return Flip(utilization=u_star, work_factor=f_star, low=min(a, b), high=max(a, b),
                simulations=search.simulations)
