"""The schema of a sweep file as written (``costsim.runs.sweepfile`` expands it into variants)."""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias

from pydantic import BeforeValidator, Field, ValidationError, model_validator

from costsim.scenario import Problem
from costsim.scenario.base import StrictModel
from costsim.scenario.bounds import MAX_SEED, float_bounds, int_bounds

MAX_TASKS = 100_000
"""Variants × replications in one sweep: each is a whole simulation."""
MAX_REPLICATIONS = 1000


def _grid(value: Any) -> Any:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("must be a mapping of dotted paths to lists of values (options.own-256.gpus: [256, 384])")
    return value


def _values(value: Any) -> Any:
    if isinstance(value, dict):
        raise ValueError("a grid entry is a list of values; a range {low, high, n} goes under sample:")
    if not isinstance(value, list):
        raise ValueError(f"must be a list of values, e.g. [{value!r}] (got {value!r})")
    if not value:
        raise ValueError("empty list: give at least one value")
    return value


def _sample(value: Any) -> Any:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("must be a mapping of dotted paths to ranges {low, high, n}")
    return value


def check_seed(value: Any) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED):
        raise ValueError(f"must be a whole number from 0 to 2^63 - 1 (got {value!r})")
    return value


Replications: TypeAlias = Annotated[int, *int_bounds(ge=1, le=MAX_REPLICATIONS)]
Points: TypeAlias = Annotated[int, *int_bounds(ge=1, le=MAX_TASKS)]
Finite: TypeAlias = Annotated[float, *float_bounds()]
Values = Annotated[tuple[Any, ...], BeforeValidator(_values)]


class Range(StrictModel):
    """A real-valued field sampled on [low, high): n points, one in each of n equal strata."""

    low: Finite
    high: Finite
    n: Points

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if not self.low < self.high:
            raise ValueError(f"low ({self.low:g}) must be less than high ({self.high:g})")
        return self


class SweepSpec(StrictModel):
    """A sweep file as written."""

    base: Annotated[str, Field(min_length=1, max_length=4096)]
    seed: Annotated[int | None, BeforeValidator(check_seed)] = None
    replications: Replications = 1
    grid: Annotated[dict[str, Values], BeforeValidator(_grid)] = Field(default_factory=dict)
    sample: Annotated[dict[str, Range], BeforeValidator(_sample)] = Field(default_factory=dict)


TOP = ", ".join(SweepSpec.model_fields)


def spec_problems(err: ValidationError) -> list[Problem]:
    """pydantic's errors with the sweep file's paths kept whole (a grid key contains dots and dashes)."""
    out: list[Problem] = []
    for e in err.errors(include_url=False):
        loc = tuple(e["loc"])
        keep = 3 if loc[:1] == ("sample",) else 2 if loc[:1] == ("grid",) else 1
        loc = loc[:keep]  # deeper parts are pydantic's own (tuple indices, union branches)
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = f"unknown field (a sweep file has: {TOP})" if len(loc) == 1 else "unknown field (a range has: low, high, n)"
        elif e["type"] == "missing":
            msg = "required field is missing"
        if not any(p.loc == loc and p.message == msg for p in out):
            out.append(Problem(loc, msg))
    return out


__all__ = ["MAX_REPLICATIONS", "MAX_TASKS", "TOP", "Range", "SweepSpec", "check_seed", "spec_problems"]
