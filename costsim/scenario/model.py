"""Scenario schema v1 (DESIGN.md section 2): pydantic models, frozen, unknown keys rejected.

Durations carry their unit in the name; money is USD. Fields left ``null`` take their value from
the catalog (``costsim catalog``) when the scenario is resolved. Only fields with behaviour are
accepted: settings that later versions model (RL job classes, reserved/spot/hybrid, serving,
failures) are rejected with a message until they exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from costsim.units import (
    Fraction,
    GPUCount,
    GPUType,
    Network,
    NonNegative,
    Positive,
    PriceTier,
    Scheduler,
)

from .base import StrictModel
from .classes import RLClass
from .options import CloudOption, HybridOption, Option, OwnedOption

class TraceCheckpoint(StrictModel):
    """Checkpointing of trace jobs: every ``every_hours`` of work, a write of ``write_minutes``."""

    every_hours: Positive = Field(description="Hours of work between checkpoints.")
    write_minutes: NonNegative = Field(
        0.0, description="Minutes a checkpoint write holds the job's GPUs (added to its run time)."
    )
    restart_minutes: NonNegative = Field(
        0.0, description="Minutes to restart from the last checkpoint after a failure or preemption."
    )


class Workload(StrictModel):
    """The jobs: a CSV trace (``submit_h, gpus, duration_h [, job_id, job_class, priority]``),
    generated RL job classes, or both."""

    trace: str | None = Field(
        None, description="CSV trace path, relative to the scenario file.", min_length=1
    )
    checkpoint: TraceCheckpoint | None = Field(
        None, description="Checkpointing of trace jobs; none when absent."
    )
    classes: list[RLClass] = Field(default_factory=list, description="Generated RL job classes.")
    arrival_scale: Positive = Field(
        1.0,
        description=(
            "Multiplies the arrival rate. Below 1, each trace job is kept with this probability; "
            "above 1, each is submitted floor(scale) or floor(scale)+1 times, the copies within "
            "±12 h of the original (the seeded `arrivals` stream). Generated classes: "
            "multiplies arrivals_per_day."
        ),
    )

    @model_validator(mode="after")
    def _has_jobs(self) -> Workload:
        if self.trace is None and not self.classes:
            raise ValueError("a workload needs a `trace` (CSV of jobs) or `classes` (generated RL jobs)")
        if self.checkpoint is not None and self.trace is None:
            raise ValueError("checkpoint applies to trace jobs; RL classes have their own `checkpoint`")
        names = [c.name for c in self.classes]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"class name(s) {', '.join(sorted(dup))} used twice; names must be unique")
        return self


class Economics(StrictModel):
    """Overrides of the catalog's economics; every null keeps the catalog value."""

    electricity_usd_per_kwh: NonNegative | None = Field(None, description="USD per kWh.")
    pue: Annotated[float, Field(ge=1.0, le=3.0)] | None = Field(
        None, description="Power usage effectiveness (facility kW / IT kW)."
    )
    colo_usd_per_kw_month: NonNegative | None = Field(
        None, description="Facility cost per provisioned kW (node max power) per month."
    )
    depreciation_years: Positive | None = Field(None, description="Years capex is spread over.")
    residual_value_frac: Fraction | None = Field(
        None, description="Share of capex recovered at the end of depreciation."
    )
    maintenance_frac_per_year: Fraction | None = Field(
        None, description="Maintenance and support per year, as a share of capex."
    )
    staff_usd_per_fte_year: NonNegative | None = Field(None, description="Loaded cost of one engineer per year.")
    gpus_per_fte: Positive | None = Field(None, description="GPUs one engineer runs.")
    storage_capex_frac: NonNegative | None = Field(None, description="Storage capex as a share of server capex.")
    install_capex_frac: NonNegative | None = Field(None, description="Installation capex as a share of server capex.")
    cost_of_capital: Annotated[float, Field(ge=0, le=1)] | None = Field(
        None, description="Annual rate; > 0: capital cost is an annuity, 0: straight-line."
    )
    setup_usd: NonNegative | None = Field(
        None, description="One-time groundwork per owned cluster, paid at the start."
    )
    discount_rate: Annotated[float, Field(ge=0, le=1)] | None = Field(
        None, description="Annual rate for the net present value of each option's monthly cash flow."
    )


class ServingGPUs(StrictModel):
    """Inference demand in GPUs: a daily sine around a base that grows linearly."""

    base: Positive = Field(description="GPUs serving needs on average at the start.")
    diurnal_amplitude: Annotated[float, Field(ge=0, le=1)] = Field(
        0.0, description="Daily swing as a share of the base (0.3: ±30 % over the day)."
    )
    growth_per_year: Annotated[float, Field(ge=-0.9)] = Field(
        0.0, description="Linear growth of the base per year (0.5: +50 % after a year)."
    )


class Serving(StrictModel):
    """An inference load served from the same compute: on owned and reserved capacity it takes GPUs
    first (RL jobs get what is left); on on-demand or spot capacity it is rented and billed."""

    gpus: ServingGPUs = Field(description="Demand in GPUs over time.")
    priority: Literal[True] = Field(
        True, description="Serving takes GPUs before RL jobs (the only policy in this version)."
    )


class Scenario(StrictModel):
    """A build-vs-rent question: one workload, several options, one horizon."""

    name: Annotated[str, Field(min_length=1)] = Field(description="Scenario name.")
    description: str = Field("", description="Free text.")
    seed: Annotated[int, Field(ge=0)] = Field(0, description="Root seed; simulate(seed=) overrides.")
    horizon_days: Positive = Field(description="Days simulated.")
    warmup_days: NonNegative = Field(
        0.0, description="Jobs submitted before this day are left out of delay statistics."
    )
    economics: Economics = Field(default_factory=Economics, description="Catalog overrides.")
    workload: Workload = Field(description="The jobs.")
    serving: Serving | None = Field(None, description="Inference load on the same compute; null: none.")
    options: Annotated[list[Option], Field(min_length=1)] = Field(
        description="The alternatives compared, names unique."
    )

    _base_dir: Path | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        if self.warmup_days >= self.horizon_days:
            raise ValueError(
                f"warmup_days ({self.warmup_days}) must be shorter than horizon_days ({self.horizon_days})"
            )
        seen: set[str] = set()
        for opt in self.options:
            if opt.name in seen:
                raise ValueError(f"option name {opt.name!r} is used twice; names must be unique")
            seen.add(opt.name)
        for opt in self.options:
            if isinstance(opt, HybridOption):
                self._check_hybrid(opt)
        return self

    def _check_hybrid(self, hybrid: HybridOption) -> None:
        by_name = {o.name: o for o in self.options}
        base, burst = by_name.get(hybrid.base), by_name.get(hybrid.burst)
        if base is None:
            raise ValueError(f"hybrid {hybrid.name!r}: base {hybrid.base!r} is not an option of this scenario")
        if burst is None:
            raise ValueError(f"hybrid {hybrid.name!r}: burst {hybrid.burst!r} is not an option of this scenario")
        if not (isinstance(base, OwnedOption) or (isinstance(base, CloudOption) and base.pricing == "reserved")):
            raise ValueError(f"hybrid {hybrid.name!r}: base {base.name!r} must be owned or reserved")
        if not (isinstance(burst, CloudOption) and burst.pricing in ("on_demand", "spot")):
            raise ValueError(f"hybrid {hybrid.name!r}: burst {burst.name!r} must be a cloud option, on_demand or spot")

    @property
    def horizon_h(self) -> float:
        return self.horizon_days * 24.0

    @property
    def warmup_h(self) -> float:
        return self.warmup_days * 24.0

    @property
    def base_dir(self) -> Path:
        """Folder that relative paths in the scenario (the trace) are read from."""
        return self._base_dir if self._base_dir is not None else Path.cwd()

    def with_base_dir(self, base_dir: Path | str) -> Scenario:
        """This scenario, reading its relative paths from ``base_dir``."""
        copy = self.model_copy()
        copy._base_dir = Path(base_dir).resolve()
        return copy

    def option(self, name: str) -> OwnedOption | CloudOption:
        for opt in self.options:
            if opt.name == name:
                return opt
        raise KeyError(name)
