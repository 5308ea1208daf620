"""Constrained number types and the physical bounds of every number a scenario states.

Field names carry their unit (``_h``, ``_days``, ``_s``, ``_usd``); these aliases carry the range.
Every number in a scenario is finite and bounded: the bounds are physical (a horizon of at most
30 years, at most 10 million GPUs, at most $10,000 per GPU-hour, ...), wide enough for any real
question and narrow enough that no cost, delay or count can overflow or hang a run. A field's
description prints its range with ``span`` so ``costsim schema`` shows it.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, TypeAlias, TypedDict, Unpack, get_args

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BeforeValidator, Field
from pydantic.fields import FieldInfo

from costsim.units import HOURS_PER_DAY

# Physical bounds (each the largest or smallest value a scenario or trace may state).
MAX_HORIZON_DAYS = 30 * 365  # 30 years, in days
MIN_HORIZON_DAYS = 1 / HOURS_PER_DAY  # one hour, in days
MAX_HOURS = MAX_HORIZON_DAYS * HOURS_PER_DAY  # 262,800 h: any duration or delay, in hours
MIN_INTERVAL_H = 1 / 60  # one minute: the shortest checkpoint or retry interval, in hours
MIN_JOB_H = 1e-9  # the shortest trace job, in hours (3.6 µs; denormal durations overflowed costs per GPU-hour)
MAX_MINUTES = 24 * 60  # a day: the longest checkpoint write or restart, in minutes
MAX_BILLING_S = 365 * 24 * 3600  # a year: the longest billing increment or minimum, in seconds
MAX_GPUS = 10_000_000  # GPUs in one cluster, job, quota or serving demand
MAX_GPUS_PER_NODE = 1024  # GPUs in one node or instance (rack-scale systems have 72-576)
MAX_PRIORITY = 10**9  # |priority| of a class or trace job
MAX_SEED = 2**63 - 1  # a root seed fits a signed 64-bit integer
MAX_COUNT = 10_000_000  # jobs per class, iterations per job or between checkpoints
MAX_USD_PER_GPU_HOUR = 10_000.0  # a rental price, USD per GPU-hour
MAX_USD_PER_GPU = 10_000_000.0  # capex, USD per GPU
MAX_USD = 1e12  # one-off sums and yearly salaries, USD
MAX_CV = 10.0  # coefficient of variation of a lognormal
MAX_PARAMS_B = 100_000.0  # 100 trillion parameters, in billions
MIN_PARAMS_B = 0.001  # one million parameters, in billions
MAX_TOKENS = 10_000_000  # tokens in one prompt or response


def _not_bool(value: Any) -> Any:
    """YAML ``true`` is not a number: refuse it where pydantic would read it as 1."""
    if isinstance(value, bool):
        raise ValueError(f"must be a number, not {str(value).lower()}")
    return value


_NUMBER = BeforeValidator(_not_bool)
TermYears = Annotated[Literal[1, 3], _NUMBER]  # a reservation's term; true is not 1


class FloatBounds(TypedDict, total=False):
    """The bounds ``float_bounds`` takes: pydantic's ge/gt/le/lt, in the field's unit."""

    ge: float
    gt: float
    le: float
    lt: float


def float_bounds(**bounds: Unpack[FloatBounds]) -> tuple[FieldInfo, BeforeValidator]:
    """The metadata of a finite float within ``bounds`` (pydantic's ge/gt/le/lt), true/false
    refused: ``Annotated[float, *float_bounds(gt=0, le=1)]``. Spelt as ``Annotated`` at each alias
    (not returned whole) so a type checker sees a type alias, not a value."""
    return Field(allow_inf_nan=False, **bounds), _NUMBER


def int_bounds(*, ge: int, le: int) -> tuple[FieldInfo, BeforeValidator]:
    """The metadata of an integer within ge … le, true/false refused:
    ``Annotated[int, *int_bounds(ge=1, le=10)]``."""

    def in_range(value: Any) -> Any:
        _not_bool(value)
        # A float such as 1e30 would fail as "unable to parse" before the bound is checked.
        if isinstance(value, float) and math.isfinite(value):
            if value > le:
                raise ValueError(f"Input should be less than or equal to {le}")
            if value < ge:
                raise ValueError(f"Input should be greater than or equal to {ge}")
        return value

    return Field(ge=ge, le=le), BeforeValidator(in_range)


def show(x: float) -> str:
    """A bound as a description prints it: ``10,000,000``, ``0.5``, ``0.0166667``."""
    if isinstance(x, int) or (float(x).is_integer() and abs(x) < 1e15):
        return f"{int(x):,}"
    return f"{x:g}"


def _number(bound: object) -> float:
    """A bound of a bounded number type: ``float_bounds`` and ``int_bounds`` only make numbers
    (annotated_types types a bound as anything comparable)."""
    assert isinstance(bound, int | float), bound
    return bound


def span(kind: Any) -> str:
    """The range of a bounded number type, for its field's description: ``0 … 10,000``,
    ``above 0 … 1`` (lower bound excluded), ``0 … below 1`` (upper bound excluded)."""
    lo = hi = ""
    for meta in get_args(kind)[1:]:
        for m in getattr(meta, "metadata", ()):
            if isinstance(m, Ge):
                lo = show(_number(m.ge))
            elif isinstance(m, Gt):
                lo = f"above {show(_number(m.gt))}"
            elif isinstance(m, Le):
                hi = show(_number(m.le))
            elif isinstance(m, Lt):
                hi = f"below {show(_number(m.lt))}"
    if not (lo and hi):
        raise TypeError(f"{kind!r} is not a bounded number type")
    return f"{lo} … {hi}"


# Counts.
GPUCount: TypeAlias = Annotated[int, *int_bounds(ge=1, le=MAX_GPUS)]
NodeGPUs: TypeAlias = Annotated[int, *int_bounds(ge=1, le=MAX_GPUS_PER_NODE)]
Count: TypeAlias = Annotated[int, *int_bounds(ge=1, le=MAX_COUNT)]
Priority: TypeAlias = Annotated[int, *int_bounds(ge=-MAX_PRIORITY, le=MAX_PRIORITY)]
Seed: TypeAlias = Annotated[int, *int_bounds(ge=0, le=MAX_SEED)]

# Time.
HorizonDays: TypeAlias = Annotated[float, *float_bounds(ge=MIN_HORIZON_DAYS, le=MAX_HORIZON_DAYS)]
Days: TypeAlias = Annotated[float, *float_bounds(ge=0, le=MAX_HORIZON_DAYS)]
Hours: TypeAlias = Annotated[float, *float_bounds(ge=0, le=MAX_HOURS)]
IntervalHours: TypeAlias = Annotated[float, *float_bounds(ge=MIN_INTERVAL_H, le=MAX_HOURS)]
Minutes: TypeAlias = Annotated[float, *float_bounds(ge=0, le=MAX_MINUTES)]

# Yearly trends: compound fractions per year (0.8: +80 %/yr; −0.2: −20 %/yr), continuous in time
# (costsim.models.trend). −0.9 keeps a tenth each year (the logarithm stays finite); +1000 %/yr
# over the 30-year horizon is 11³⁰ ≈ 2·10³¹, still a finite float.
GrowthPerYear: TypeAlias = Annotated[float, *float_bounds(ge=-0.9, le=10)]
PriceChangePerYear: TypeAlias = Annotated[float, *float_bounds(ge=-0.9, le=1)]

# Shares and spreads.
Fraction: TypeAlias = Annotated[float, *float_bounds(ge=0, le=1)]
CV: TypeAlias = Annotated[float, *float_bounds(ge=0, le=MAX_CV)]

# Money.
PricePerGPUHour: TypeAlias = Annotated[float, *float_bounds(ge=0, le=MAX_USD_PER_GPU_HOUR)]
CapexPerGPU: TypeAlias = Annotated[float, *float_bounds(gt=0, le=MAX_USD_PER_GPU)]
USD: TypeAlias = Annotated[float, *float_bounds(ge=0, le=MAX_USD)]

# Models.
ParamsB: TypeAlias = Annotated[float, *float_bounds(ge=MIN_PARAMS_B, le=MAX_PARAMS_B)]
Tokens: TypeAlias = Annotated[float, *float_bounds(ge=1, le=MAX_TOKENS)]

# Finite but unbounded above: kept for callers outside the schema; scenario fields use the above.
NonNegative: TypeAlias = Annotated[float, *float_bounds(ge=0)]
Positive: TypeAlias = Annotated[float, *float_bounds(gt=0)]

GPUType = Literal["H100", "H200", "B200", "A100", "L40S", "H20", "H800", "GB200", "MI300X"]
"""GPU types the catalog knows (``costsim catalog`` lists their specs and prices)."""

Network = Literal["infiniband", "roce"]
Scheduler = Literal["fifo", "backfill", "priority", "sjf", "lifo"]
Placement = Literal["best_fit", "first_fit"]
PriceTier = Literal["hyperscaler", "neocloud"]
