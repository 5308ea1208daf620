"""Plain job classes (``workload.job_classes``): generated jobs that are like a trace's rows.

A job class says "jobs of d hours on g GPUs arriving at this rate, with this daily and weekly
profile": what ``costsim fit-workload`` fits to a trace (``costsim.calibration.fit_classes``). Its jobs
have a duration and no iterations, as trace jobs do, so ``workload.checkpoint`` applies to them
too. The RL classes (``costsim.scenario.classes.RLClass``) are the other kind of generated job.

The two unions (``gpus``: a number or a pmf; ``duration``: by ``law``) pick their branch with a
callable discriminator, so an error names only the branch that was meant. The branch tags are
capitalised: ``costsim.scenario.io`` drops such tags from error paths.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import AfterValidator, Discriminator, Field, Tag

from costsim import units
from costsim.scenario.base import Name, StrictModel
from costsim.scenario.bounds import (
    MAX_HOURS,
    MIN_JOB_H,
    Days,
    GPUCount,
    GPUType,
    GrowthPerYear,
    Priority,
    float_bounds,
    show,
    span,
)

HOURS_PER_DAY = int(units.HOURS_PER_DAY)  # a profile's hourly slots: the model's day as a count
DAYS_PER_WEEK = 7
HOURS_PER_WEEK = HOURS_PER_DAY * DAYS_PER_WEEK
PMF_TOLERANCE = 1e-6
"""How far from 1 a pmf's shares may sum (rounding in a YAML file)."""
MAX_PMF = 1024
"""Entries of a GPU-count pmf: more GPU counts than any trace has."""
MAX_QUANTILES = 10_001
"""Quantiles of an empirical duration law (every 0.01 % of probability)."""

MAX_JOBS_PER_DAY = 10_000_000
"""A job class's arrival rate: a fitted trace may see far more jobs a day than RL classes run."""
MAX_DURATION_CV = 1000.0
"""A lognormal run time's cv (σ 3.7): wider than ``units.MAX_CV``, fitted run times are often heavier-tailed."""

JobsPerDay: TypeAlias = Annotated[float, *float_bounds(gt=0, le=MAX_JOBS_PER_DAY)]
Weight: TypeAlias = Annotated[float, *float_bounds(ge=0, le=1_000_000)]  # a relative weight; the generator divides by the mean
HourOfWeek: TypeAlias = Annotated[float, *float_bounds(ge=0, lt=HOURS_PER_WEEK)]
Share: TypeAlias = Annotated[float, *float_bounds(gt=0, le=1)]
DurationH: TypeAlias = Annotated[float, *float_bounds(ge=MIN_JOB_H, le=MAX_HOURS)]
DurationCV: TypeAlias = Annotated[float, *float_bounds(ge=0, le=MAX_DURATION_CV)]


def _profile(length: int, what: str):
    """A check that a profile has ``length`` weights, not all zero."""

    def check(weights: tuple[float, ...]) -> tuple[float, ...]:
        if len(weights) != length:
            raise ValueError(f"needs {length} weights, one per {what}; got {len(weights)}")
        if not any(w > 0 for w in weights):
            raise ValueError("needs a weight above 0 (all zero: no job would ever arrive)")
        return weights

    return AfterValidator(check)


HourlyProfile = Annotated[tuple[Weight, ...], _profile(HOURS_PER_DAY, "hour of the day (index 0: 00:00-01:00)")]
WeeklyProfile = Annotated[tuple[Weight, ...], _profile(DAYS_PER_WEEK, "day of the week (index 0: Monday)")]


class GPUShare(StrictModel):
    """One GPU count of a pmf and the share of jobs that ask for it."""

    gpus: GPUCount = Field(description=f"GPUs per job, a gang ({span(GPUCount)}).")
    share: Share = Field(description=f"Share of the class's jobs with this count ({span(Share)}).")
    mean_h: DurationH | None = Field(
        None, description=f"Mean run time in hours of this count's jobs ({span(DurationH)}): the class's "
        "duration law is scaled to it (its shape kept), so big jobs can run longer, as in a trace; null: the "
        "class's law as it is.")


def _pmf(entries: tuple[GPUShare, ...]) -> tuple[GPUShare, ...]:
    """A pmf: at least one entry, each GPU count once, shares summing to 1 ± ``PMF_TOLERANCE``."""
    if not entries:
        raise ValueError("a GPU-count pmf needs at least one {gpus, share}")
    counts = [e.gpus for e in entries]
    dup = sorted({g for g in counts if counts.count(g) > 1})
    if dup:
        raise ValueError(f"GPU count(s) {', '.join(map(str, dup))} listed twice; list each count once")
    total = math.fsum(e.share for e in entries)
    if abs(total - 1.0) > PMF_TOLERANCE:
        raise ValueError(f"shares sum to {total:.9g}; they must sum to 1 (± {PMF_TOLERANCE:g})")
    return entries


GPUPmf = Annotated[tuple[GPUShare, ...], Field(max_length=MAX_PMF), AfterValidator(_pmf)]


class LognormalDuration(StrictModel):
    """Run times (hours) drawn from a lognormal with this mean and coefficient of variation."""

    law: Literal["lognormal"] = Field(description="lognormal.")
    mean_h: DurationH = Field(description=f"Mean run time, hours ({span(DurationH)}).")
    cv: DurationCV = Field(
        description=f"Coefficient of variation, standard deviation ÷ mean ({span(DurationCV)}); 0: every job mean_h."
    )


def _increasing(q: tuple[float, ...]) -> tuple[float, ...]:
    bad = next((i for i in range(1, len(q)) if q[i] < q[i - 1]), None)
    if bad is not None:
        raise ValueError(f"must not decrease: quantile {bad} ({q[bad]:g} h) is below quantile {bad - 1} ({q[bad - 1]:g} h)")
    return q


class EmpiricalDuration(StrictModel):
    """Run times (hours) by inverse CDF: ``quantiles_h[i]`` is the run time at probability
    i / (n − 1), linear in between (so the first is the shortest job, the last the longest)."""

    law: Literal["empirical"] = Field(description="empirical.")
    quantiles_h: Annotated[tuple[DurationH, ...], Field(min_length=2, max_length=MAX_QUANTILES),
                           AfterValidator(_increasing)] = Field(
        description=f"Run times in hours at evenly spaced probabilities 0 … 1, not decreasing (2 … "
        f"{show(MAX_QUANTILES)} values, each {span(DurationH)})."
    )


_LAW_TAGS = {"lognormal": "Lognormal", "empirical": "Empirical"}


def _law_tag(value: Any) -> str | None:
    law = value.get("law") if isinstance(value, dict) else getattr(value, "law", None)
    return _LAW_TAGS.get(law) if isinstance(law, str) else None


def _gpus_tag(value: Any) -> str:
    return "Pmf" if isinstance(value, (list, tuple)) else "Count"


Duration = Annotated[
    Annotated[LognormalDuration, Tag("Lognormal")] | Annotated[EmpiricalDuration, Tag("Empirical")],
    Discriminator(_law_tag, custom_error_type="duration_law",
                  custom_error_message="needs `law`: lognormal ({law, mean_h, cv}) or empirical ({law, quantiles_h})"),
]
GPUs = Annotated[Annotated[GPUCount, Tag("Count")] | Annotated[GPUPmf, Tag("Pmf")], Discriminator(_gpus_tag)]


class JobClass(StrictModel):
    """A stream of plain jobs (a duration on a gang of GPUs, no iterations), like a trace's rows.

    Arrivals are Poisson with rate λ(t) = arrivals_per_day / 24 · hourly[h(t)] · weekly[d(t)] per
    hour, the profiles scaled to mean 1; h and d are the hour of the day and the day of the week
    (0 = Monday) of scenario hour t, which is ``profile_start_hour_of_week + t`` hours after
    Monday 00:00. Over whole weeks the rate averages ``arrivals_per_day``.
    """

    name: Name = Field(description="Class name (job_class in results; job ids are <name>-00000, …).")
    arrivals_per_day: JobsPerDay = Field(
        description=f"Mean arrival rate of jobs per day over a week ({span(JobsPerDay)}); "
        "workload.arrival_scale multiplies it."
    )
    hourly_profile: HourlyProfile | None = Field(
        None, description=f"24 relative arrival weights, one per hour of the day (index 0: midnight; each "
        f"{span(Weight)}), scaled to mean 1; null: flat."
    )
    weekly_profile: WeeklyProfile | None = Field(
        None, description=f"7 relative arrival weights, one per day of the week (index 0: Monday; each "
        f"{span(Weight)}), scaled to mean 1; null: flat."
    )
    profile_start_hour_of_week: HourOfWeek = Field(
        0.0, description=f"Hours after Monday 00:00 of the scenario's hour 0 on the profiles' clock "
        f"({span(HourOfWeek)}; the fit's start_hour_of_week)."
    )
    gpus: GPUs = Field(
        description=f"GPUs per job, a gang: a number ({span(GPUCount)}), or a pmf, a list of {{gpus, share}} "
        f"whose shares sum to 1 (at most {show(MAX_PMF)} entries)."
    )
    duration: Duration = Field(
        description="Run time per job, hours of work (checkpoint writes excluded): {law: lognormal, mean_h, cv} "
        "or {law: empirical, quantiles_h}; draws are kept within the trace's range "
        f"({MIN_JOB_H:g} … {show(MAX_HOURS)} h)."
    )
    priority: Priority = Field(
        0, description=f"Scheduling priority, higher first under the priority scheduler ({span(Priority)})."
    )
    gpu_type: GPUType | None = Field(
        None, description="GPU type its jobs run on: every option must have it (an owned option of node_groups: "
        "some group; a hybrid or fleet: every part); null: any.")
    start_day: Days = Field(0.0, description=f"Day the arrivals start ({span(Days)}).")
    growth_per_year: GrowthPerYear = Field(
        0.0, description=f"Compound growth of the arrival rate, a fraction per year ({span(GrowthPerYear)}; 0.8: "
        "+80 %/yr, −0.3: −30 %/yr; 0: the profiles alone): the rate t years after the horizon's start (day 0, "
        "not start_day) is multiplied by (1 + growth_per_year)^t, continuously."
    )

    @property
    def max_gpus(self) -> int:
        """The largest gang a job of this class asks for."""
        return self.gpus if isinstance(self.gpus, int) else max(e.gpus for e in self.gpus)


__all__ = ["EmpiricalDuration", "GPUShare", "JobClass", "LognormalDuration"]
