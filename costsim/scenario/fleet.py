"""A fleet: several options under one scheduler, in order of preference (``kind: fleet``).

The parts are other options of the scenario, named in order: first the pools (owned clusters and
reserved commitments), then, last, one on-demand or spot burst. A job waits in the queues of the
pools at once and starts on the first that can start it (at one instant the pools decide in part
order); if none has started it when its wait ends — the burst part's waiting policy, the same
policies and fields as a hybrid's — it runs on the burst. A hybrid is the fleet of two parts,
``[base, burst]``, and runs through the same code (``costsim.engine.run``).

This module also holds ``Option``, the union of every option kind, since the fleet is the last of
them and is built on the others' definitions (``costsim.scenario.options``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_serializer, model_validator

from costsim.scenario.base import Name, StrictModel
from costsim.scenario.bounds import span
from costsim.scenario.options import (
    DEFAULT_MAX_WAIT_H,
    WAIT_COEFFICIENTS,
    CloudOption,
    HybridOption,
    MaxWaitHours,
    OwnedOption,
    RolloutLink,
    RolloutPool,
    WaitPerGPU,
    WaitPerGPUHour,
    WaitPerHour,
    WaitPolicy,
    check_rollout_link,
    check_wait_fields,
)

MAX_PARTS = 16  # far more than any real fleet; part numbers must stay clear of the rollout pool's (engine.records)
WAIT_FIELDS = ("wait_policy", "max_wait_h", *WAIT_COEFFICIENTS.values())


class FleetPart(StrictModel):
    """One part of a fleet: the option it is, and — the last (burst) part only — how long a job
    waits for the pools before it runs there (a hybrid's waiting policies, after Starburst)."""

    option: Name = Field(description="Name of an owned, cloud or reserved option of this scenario.")
    wait_policy: WaitPolicy = Field(
        "constant", description="Burst part only: how long a job waits for the pool parts before it bursts, as a "
        "hybrid's: constant (max_wait_h), zero, linear_runtime (wait_per_hour_h × planned run hours on the first "
        "part), linear_gpus (wait_per_gpu_h × GPUs) or linear_cost (wait_per_gpu_hour_h × GPUs × planned run hours).")
    max_wait_h: MaxWaitHours = Field(
        DEFAULT_MAX_WAIT_H, description=f"Burst part, wait_policy constant: hours a job waits for the pool parts "
        f"before it bursts ({span(MaxWaitHours)}; longer than the horizon: never bursts).")
    wait_per_hour_h: WaitPerHour | None = Field(
        None, description=f"Burst part, linear_runtime only: hours waited per hour of planned run on the first part "
        f"(h/h, {span(WaitPerHour)}).")
    wait_per_gpu_h: WaitPerGPU | None = Field(
        None, description=f"Burst part, linear_gpus only: hours waited per GPU (h/GPU, {span(WaitPerGPU)}).")
    wait_per_gpu_hour_h: WaitPerGPUHour | None = Field(
        None, description=f"Burst part, linear_cost only: hours waited per GPU-hour of planned run on the first part "
        f"({span(WaitPerGPUHour)}).")

    @property
    def waits(self) -> bool:
        """Whether any waiting field is written (a pool part must have none)."""
        return bool(self.model_fields_set & set(WAIT_FIELDS))

    @model_serializer(mode="wrap")
    def _as_written(self, handler):
        """A dump keeps the option and the waiting fields written (defaults left out), so a pool part
        reads back without the waiting fields it must not have."""
        data = handler(self)
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k == "option" or k in self.model_fields_set}
        return data


class FleetOption(StrictModel):
    """Options in order of preference under one scheduler: pool parts (owned, reserved) tried in
    order, the last part an on-demand or spot burst that takes a job after its wait (the burst
    part's ``wait_policy``); before the first part is delivered, with ``bridge_until_ready``, a
    job joins only the pools already there, and bursts at once when there is none."""

    name: Name = Field(description="Unique option name.")
    kind: Literal["fleet"] = "fleet"
    parts: tuple[FleetPart, ...] = Field(
        description=f"The options the fleet runs on, in order of preference: owned or reserved pools, then one "
        f"on-demand or spot burst, last (2 … {MAX_PARTS} parts, each option once).")
    bridge_until_ready: bool = Field(
        True, description="Before the first part's lead time ends, a job joins only the pool parts already "
        "delivered, and bursts at once if there is none (renting while the cluster is built).")
    rollout_pool: RolloutPool = Field(
        None, description="Name of a cloud option, on_demand or spot, whose instances run the rollout GPUs of the "
        "disaggregated RL classes while they train on the first part (docs/rollout-offload.md); null: the first "
        "part's own rollout_pool, if any.")
    rollout_link_gb_s: RolloutLink = None

    @model_validator(mode="after")
    def _parts(self) -> FleetOption:
        check_rollout_link(self)
        names = [p.option for p in self.parts]
        if len(names) < 2:
            raise ValueError(f"parts: a fleet needs at least two parts (pools, then a burst), got {len(names)}")
        if len(names) > MAX_PARTS:
            raise ValueError(f"parts: at most {MAX_PARTS} parts, got {len(names)}")
        if self.name in names:
            raise ValueError(f"parts.{names.index(self.name)}.option: fleet {self.name!r} names itself")
        for k, name in enumerate(names):
            if name in names[:k]:
                raise ValueError(f"parts.{k}.option: option {name!r} is part {names.index(name)} already; "
                                 "each option is a part once")
        for k, part in enumerate(self.parts[:-1]):
            if part.waits:
                raise ValueError(f"parts.{k}: wait_policy, max_wait_h and wait_per_* apply to the last (burst) "
                                 "part only")
        try:
            check_wait_fields(self.parts[-1])
        except ValueError as exc:
            raise ValueError(f"parts.{len(names) - 1}: {exc}") from None
        return self

    @property
    def burst(self) -> FleetPart:
        """The last part: the burst, with the waiting policy."""
        return self.parts[-1]

    def part_names(self) -> tuple[str, ...]:
        """The options the fleet is made of, in order of preference."""
        return tuple(p.option for p in self.parts)


Option = Annotated[OwnedOption | CloudOption | HybridOption | FleetOption, Field(discriminator="kind")]


def part_problems(fleet: FleetOption, by_name: dict) -> list[tuple[tuple[str | int, ...], str]]:
    """What is wrong with ``fleet``'s parts among the scenario's options ``by_name``: (path within
    the fleet, why) each — a part naming no option, a fleet or hybrid, a burst that is not on
    demand or spot, a pool part after a burst, a later pool part with its own rollout pool."""
    out: list[tuple[tuple[str | int, ...], str]] = []
    last = len(fleet.parts) - 1
    for k, part in enumerate(fleet.parts):
        opt = by_name.get(part.option)
        at = ("parts", k, "option")
        if opt is None:
            out.append((at, f"{part.option!r} is not an option of this scenario (options: {', '.join(sorted(by_name))})"))
        elif isinstance(opt, FleetOption | HybridOption):
            out.append((at, f"option {opt.name!r} is a {opt.kind}; a fleet's parts are owned or cloud options"))
        elif getattr(opt, "node_groups", None) is not None:
            out.append((at, f"option {opt.name!r} has node_groups; a fleet's parts are one gpu_type each (a pool "
                            "of node groups is not a fleet's part)"))
        elif k == last and not (isinstance(opt, CloudOption) and opt.pricing in ("on_demand", "spot")):
            if any(p[1].startswith("pool part") for p in out):
                continue  # the burst came too early: said once, at that part
            what = "owned" if isinstance(opt, OwnedOption) else f"cloud, pricing {opt.pricing}"
            out.append((at, f"the last part is the burst and must be a cloud option, on_demand or spot; {opt.name!r} "
                            f"is {what}"))
        elif k < last and isinstance(opt, CloudOption) and opt.pricing != "reserved":
            out.append((at, f"pool part {fleet.parts[k + 1].option!r} comes after the burst part {opt.name!r} "
                            f"({opt.pricing}): pools (owned, reserved) come first, one on-demand or spot burst last"))
        elif 0 < k < last and opt.rollout_pool is not None:
            out.append((at, f"option {opt.name!r} offloads rollouts (rollout_pool); in a fleet only the first part "
                            "or the fleet itself may name a rollout_pool"))
    return out
