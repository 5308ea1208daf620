"""Scenario schema v1 (DESIGN.md section 2): pydantic models, frozen, unknown keys rejected.

Durations carry their unit in the name; money is USD. Fields left ``null`` take their value from
the catalog (``costsim catalog``) when the scenario is resolved. Only fields with behaviour are
accepted: settings that later versions model (RL job classes, reserved/spot/hybrid, serving,
failures) are rejected with a message until they exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, TypeAlias

from pydantic import AfterValidator, Field, PrivateAttr, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from costsim.scenario.base import StrictModel
from costsim.scenario.bounds import (
    MAX_GPUS,
    USD,
    Days,
    Fraction,
    HorizonDays,
    IntervalHours,
    Minutes,
    Seed,
    float_bounds,
    int_bounds,
    show,
    span,
)
from costsim.scenario.classes import RLClass
from costsim.scenario.fleet import FleetOption, Option, part_problems
from costsim.scenario.jobclass import JobClass
from costsim.scenario.node_groups import gpu_type_problems, grouped_use_problems
from costsim.scenario.options import CloudOption, HybridOption, OwnedOption
from costsim.scenario.pinned import CatalogValues
from costsim.scenario.targets import DEFAULT_TARGETS, target_problem
from costsim.units import HOURS_PER_DAY

MAX_CLASSES = 500
"""RL job classes per scenario: far more than any lab runs, few enough to validate at once."""
MAX_OPTIONS = 100
"""Options per scenario: each is a whole simulation of the workload."""

ArrivalScale: TypeAlias = Annotated[float, *float_bounds(gt=0, le=100)]
ElectricityPrice: TypeAlias = Annotated[float, *float_bounds(ge=0, le=10)]
ColoPrice: TypeAlias = Annotated[float, *float_bounds(ge=0, le=10_000)]
Pue: TypeAlias = Annotated[float, *float_bounds(ge=1.0, le=3.0)]
DepreciationYears: TypeAlias = Annotated[float, *float_bounds(ge=0.1, le=30)]
GPUsPerFTE: TypeAlias = Annotated[float, *float_bounds(ge=1, le=MAX_GPUS)]
StaffMinimum: TypeAlias = Annotated[int, *int_bounds(ge=0, le=MAX_GPUS)]
StaffSalary: TypeAlias = Annotated[float, *float_bounds(ge=0, le=10_000_000)]
CapexShare: TypeAlias = Annotated[float, *float_bounds(ge=0, le=10)]
AnnualRate: TypeAlias = Annotated[float, *float_bounds(ge=0, le=1)]
ServingBase: TypeAlias = Annotated[float, *float_bounds(gt=0, le=MAX_GPUS)]
Growth: TypeAlias = Annotated[float, *float_bounds(ge=-0.9, le=10)]
WaitingPrice: TypeAlias = Annotated[float, *float_bounds(ge=0, le=1_000)]
MAX_TARGETS = 20


def _target_text(text: str) -> str:
    """A target's text, checked where it is written (the error names ``decision.targets.I``)."""
    if target_problem(text)[0] is None:
        raise ValueError(target_problem(text)[1])
    return text


TargetText = Annotated[str, AfterValidator(_target_text)]

class TraceCheckpoint(StrictModel):
    """Checkpointing of trace jobs and job classes' jobs: every ``every_hours`` of work, a write of
    ``write_minutes``."""

    every_hours: IntervalHours = Field(description=f"Hours of work between checkpoints ({span(IntervalHours)}).")
    write_minutes: Minutes = Field(
        0.0, description=f"Minutes a checkpoint write holds the job's GPUs, added to its run time ({span(Minutes)})."
    )
    restart_minutes: Minutes = Field(
        0.0, description=f"Minutes to restart from the last checkpoint after a failure or preemption ({span(Minutes)})."
    )


class Workload(StrictModel):
    """The jobs: a CSV trace (``submit_h, gpus, duration_h [, job_id, job_class, priority,
    gpu_type]``, and ``status, observed_delay_h, source_id`` from ``costsim import-trace``, read and
    ignored),
    generated RL job classes, generated plain job classes (``costsim fit-workload`` fits them to a
    trace), or any mix."""

    trace: str | None = Field(
        None, description="CSV trace path, relative to the scenario file (costsim import-trace writes one from "
        "SLURM, Kubernetes, Helios, Philly or Alibaba PAI records); null: no trace.", min_length=1
    )
    checkpoint: TraceCheckpoint | None = Field(
        None, description="Checkpointing of trace jobs and job_classes' jobs; none when absent."
    )
    classes: tuple[RLClass, ...] = Field(
        (), max_length=MAX_CLASSES, description=f"Generated RL job classes (at most {show(MAX_CLASSES)})."
    )
    job_classes: tuple[JobClass, ...] = Field(
        (), max_length=MAX_CLASSES, description="Generated plain job classes: a run time on a gang of GPUs, "
        f"arriving with daily and weekly profiles, like trace rows (at most {show(MAX_CLASSES)})."
    )
    arrival_scale: ArrivalScale = Field(
        1.0,
        description=(
            f"Multiplies the arrival rate ({span(ArrivalScale)}). Below 1, each trace job is kept with this probability; "
            "above 1, each is submitted floor(scale) or floor(scale)+1 times, the copies within "
            "±12 h of the original (the seeded `arrivals` stream). Generated classes and job classes: "
            "multiplies arrivals_per_day."
        ),
    )

    @model_validator(mode="after")
    def _has_jobs(self) -> Workload:
        if self.trace is None and not self.classes and not self.job_classes:
            raise ValueError("a workload needs a `trace` (CSV of jobs), `classes` (generated RL jobs) or "
                             "`job_classes` (generated plain jobs)")
        if self.checkpoint is not None and self.trace is None and not self.job_classes:
            raise ValueError("checkpoint applies to trace jobs and job_classes; RL classes have their own `checkpoint`")
        names = [c.name for c in self.classes] + [c.name for c in self.job_classes]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"class name(s) {', '.join(sorted(dup))} used twice (classes and job_classes "
                             "together); names must be unique")
        return self


class Economics(StrictModel):
    """Overrides of the catalog's economics; every null keeps the catalog value."""

    electricity_usd_per_kwh: ElectricityPrice | None = Field(
        None, description=f"USD per kWh ({span(ElectricityPrice)})."
    )
    pue: Pue | None = Field(None, description=f"Power usage effectiveness, facility kW / IT kW ({span(Pue)}).")
    colo_usd_per_kw_month: ColoPrice | None = Field(
        None, description=f"Facility cost per provisioned kW (node max power) per month, USD ({span(ColoPrice)})."
    )
    depreciation_years: DepreciationYears | None = Field(
        None, description=f"Years capex is spread over ({span(DepreciationYears)})."
    )
    residual_value_frac: Fraction | None = Field(
        None, description=f"Share of capex recovered at the end of depreciation ({span(Fraction)})."
    )
    maintenance_frac_per_year: Fraction | None = Field(
        None, description=f"Maintenance and support per year, as a share of capex ({span(Fraction)})."
    )
    staff_usd_per_fte_year: StaffSalary | None = Field(
        None, description=f"Loaded cost of one engineer per year, USD ({span(StaffSalary)})."
    )
    gpus_per_fte: GPUsPerFTE | None = Field(
        None, description=f"GPUs one engineer runs ({span(GPUsPerFTE)}); staff is whole engineers, "
        "⌈GPUs ÷ gpus_per_fte⌉ per owned cluster."
    )
    staff_min_fte: StaffMinimum | None = Field(
        None, description=f"Fewest engineers an owned cluster (or a hybrid's owned base) is staffed with, whole "
        f"engineers ({span(StaffMinimum)})."
    )
    storage_capex_frac: CapexShare | None = Field(
        None, description=f"Storage capex as a share of server capex ({span(CapexShare)})."
    )
    install_capex_frac: CapexShare | None = Field(
        None, description=f"Installation capex as a share of server capex ({span(CapexShare)})."
    )
    cost_of_capital: AnnualRate | None = Field(
        None, description=f"Annual rate ({span(AnnualRate)}); > 0: capital cost is an annuity, 0: straight-line."
    )
    setup_usd: USD | None = Field(
        None, description=f"One-time groundwork per owned cluster, paid at the start, USD ({span(USD)})."
    )
    discount_rate: AnnualRate | None = Field(
        None, description=f"Annual rate for the net present value of each option's monthly cash flow ({span(AnnualRate)})."
    )


class ServingGPUs(StrictModel):
    """Inference demand in GPUs: a daily sine around a base that grows linearly."""

    base: ServingBase = Field(description=f"GPUs serving needs on average at the start ({span(ServingBase)}).")
    diurnal_amplitude: Fraction = Field(
        0.0, description=f"Daily swing as a share of the base ({span(Fraction)}; 0.3: ±30 % over the day)."
    )
    growth_per_year: Growth = Field(
        0.0, description=f"Linear growth of the base per year ({span(Growth)}; 0.5: +50 % after a year)."
    )


class Serving(StrictModel):
    """An inference load served from the same compute: on owned and reserved capacity it takes GPUs
    first (RL jobs get what is left); on on-demand or spot capacity it is rented and billed."""

    gpus: ServingGPUs = Field(description="Demand in GPUs over time.")
    priority: Literal[True] = Field(
        True, description="Serving takes GPUs before RL jobs (the only policy in this version)."
    )


class Decision(StrictModel):
    """What the lab holds itself to when choosing: service-level targets an option must meet to be
    recommended, and an optional price on waiting, counted in every option's fair total."""

    targets: tuple[TargetText, ...] | None = Field(
        None, max_length=MAX_TARGETS,
        description="Service-level targets, METRIC<=NUMBER or METRIC>=NUMBER (p95_delay_h, p99_delay_h, "
        "mean_delay_h, completion, rl_iterations_per_day, utilization, total_cost_usd), as costsim's "
        f"--target takes them; null: {' and '.join(DEFAULT_TARGETS)}, the defaults a lab would hold; "
        "[]: none (cost alone decides among options that keep up).",
    )
    waiting_usd_per_gpu_hour: WaitingPrice = Field(
        0.0, description="Price of a GPU-hour spent waiting in the queue, USD (what a researcher's idle wait "
        f"costs the lab; {span(WaitingPrice)}): queued GPU-hours × this price is a named line of every "
        "option's fair total. 0: waiting is priced only through the targets.",
    )

    @property
    def stated_targets(self) -> tuple[str, ...]:
        """The targets in force: those stated, or ``DEFAULT_TARGETS`` when none are."""
        return DEFAULT_TARGETS if self.targets is None else self.targets


class Scenario(StrictModel):
    """A build-vs-rent question: one workload, several options, one horizon."""

    name: Annotated[str, Field(min_length=1, max_length=200)] = Field(description="Scenario name (1 … 200 characters).")
    description: Annotated[str, Field(max_length=10_000)] = Field("", description="Free text (at most 10,000 characters).")
    seed: Seed = Field(0, description=f"Root seed ({span(Seed)}); simulate(seed=) overrides.")
    horizon_days: HorizonDays = Field(
        description=f"Days simulated, one hour to 30 years ({span(HorizonDays)})."
    )
    warmup_days: Days = Field(
        0.0,
        description=f"Jobs submitted before this day are left out of delay statistics ({span(Days)}; "
        "less than horizon_days).",
    )
    economics: Economics = Field(default_factory=Economics, description="Catalog overrides.")
    catalog: CatalogValues | None = Field(
        None, description="Catalog values no other field holds (GPU specs, fabric efficiency, RL constants), "
        "pinned; null: catalog.")
    catalog_version: Annotated[str, Field(min_length=1, max_length=100)] | None = Field(
        None, description="The catalog version the scenario's values were filled in from (scenario.resolved.yaml "
        "records it); a run under another installed catalog warns; null: none recorded.")
    workload: Workload = Field(description="The jobs.")
    serving: Serving | None = Field(None, description="Inference load on the same compute; null: none.")
    decision: Decision = Field(default_factory=Decision,
                               description="Service-level targets and the price of waiting the verdict holds options to.")
    options: tuple[Option, ...] = Field(
        min_length=1,
        max_length=MAX_OPTIONS,
        description=f"The alternatives compared, names unique (1 … {show(MAX_OPTIONS)}).",
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
        self._check_fleets()
        self._check_node_groups()
        self._check_rollout_pools()
        self._check_scaling_references()
        return self

    def _check_scaling_references(self) -> None:
        """A class's ``scaling.reference_option`` names an owned or cloud option (a hybrid's GPU-hours
        are two systems'), raised at its field."""
        by_name = {o.name: o for o in self.options}
        errors = []
        for k, cls in enumerate(self.workload.classes):
            name = cls.scaling.reference_option if cls.scaling is not None else None
            if name is None:
                continue
            if name not in by_name:
                why = f"{name!r} is not an option of this scenario (options: {', '.join(sorted(by_name))})"
            elif isinstance(by_name[name], HybridOption | FleetOption):
                why = (f"option {name!r} is a {by_name[name].kind}; the reference must be an owned or cloud option "
                       "(one of its parts, say)")
            else:
                continue
            errors.append(InitErrorDetails(type=PydanticCustomError("reference_option", "{why}", {"why": why}),
                                           loc=("workload", "classes", k, "scaling", "reference_option"), input=name))
        if errors:
            raise ValidationError.from_exception_data("Scenario", errors)

    def _check_rollout_pools(self) -> None:
        """An option's ``rollout_pool`` names a cloud option, on_demand or spot, and there is a
        disaggregated RL class for it to take rollouts from (else it would be ignored;
        docs/rollout-offload.md). Raised as a located ValidationError, so the error names
        ``options.I.rollout_pool`` rather than the scenario as a whole."""
        by_name = {o.name: o for o in self.options}
        takers = any(cls.placement == "disaggregated" for cls in self.workload.classes)
        errors = []
        for i, opt in enumerate(self.options):
            name = opt.rollout_pool
            if name is None:
                continue
            pool = by_name.get(name)
            if pool is None:
                why = f"{name!r} is not an option of this scenario (options: {', '.join(sorted(by_name))})"
            elif not (isinstance(pool, CloudOption) and pool.pricing in ("on_demand", "spot")):
                what = pool.kind if not isinstance(pool, CloudOption) else f"cloud, pricing {pool.pricing}"
                why = f"option {pool.name!r} is {what}; a rollout pool must be a cloud option, on_demand or spot"
            elif not takers:
                why = ("no RL class has placement: disaggregated, so no rollouts can be offloaded (colocated "
                       "classes sample on their training GPUs)")
            else:
                continue
            errors.append(InitErrorDetails(type=PydanticCustomError("rollout_pool", "{why}", {"why": why}),
                                           loc=("options", i, opt.kind, "rollout_pool"), input=name))
        if errors:
            raise ValidationError.from_exception_data("Scenario", errors)

    def _check_node_groups(self) -> None:
        """What a pool of node groups cannot be used with (``node_groups.grouped_use_problems``) and
        each class asking for a GPU type an option cannot give it (``node_groups.gpu_type_problems``),
        raised at the field to fix."""
        found = grouped_use_problems(self.options, self.serving) + gpu_type_problems(
            {"classes": self.workload.classes, "job_classes": self.workload.job_classes}, self.options)
        errors = [InitErrorDetails(type=PydanticCustomError("node_groups", "{why}", {"why": why}), loc=at, input=None)
                  for at, why in found]
        if errors:
            raise ValidationError.from_exception_data("Scenario", errors)

    def _check_fleets(self) -> None:
        """Each fleet's parts name owned or cloud options of this scenario, pools first and an
        on-demand or spot burst last (``fleet.part_problems``), raised at the part's field."""
        by_name = {o.name: o for o in self.options}
        errors = [InitErrorDetails(type=PydanticCustomError("fleet_part", "{why}", {"why": why}),
                                   loc=("options", i, "fleet", *at), input=None)
                  for i, opt in enumerate(self.options) if isinstance(opt, FleetOption)
                  for at, why in part_problems(opt, by_name)]
        if errors:
            raise ValidationError.from_exception_data("Scenario", errors)

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
        return self.horizon_days * HOURS_PER_DAY

    @property
    def warmup_h(self) -> float:
        return self.warmup_days * HOURS_PER_DAY

    @property
    def base_dir(self) -> Path:
        """Folder that relative paths in the scenario (the trace) are read from."""
        return self._base_dir if self._base_dir is not None else Path.cwd()

    def with_base_dir(self, base_dir: Path | str) -> Scenario:
        """This scenario, reading its relative paths from ``base_dir``."""
        copy = self.model_copy()
        copy._base_dir = Path(base_dir).resolve()
        return copy

    def option(self, name: str) -> OwnedOption | CloudOption | HybridOption | FleetOption:
        for opt in self.options:
            if opt.name == name:
                return opt
        raise KeyError(name)
