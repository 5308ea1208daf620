"""Rollout offload to a preemptible pool (docs/rollout-offload.md, after RLBoost, arXiv 2510.19225):
pure, closed-form expectations.

A disaggregated job keeps its training GPUs on its own option and runs its G_r rollout GPUs on
k = G_r ÷ g instances of g GPUs rented from a spot (or on-demand) pool. Each instance is
preempted at rate λ while it is up (a Poisson process, per instance, as ``CloudOption``'s
``preemptions_per_instance_day``); a preempted instance is back after ``restart_h`` (reacquire,
provisioning, startup) plus the push of the current weights to it (``weight_push_s``,
``costsim.models.network.transfer_s``). Training state is never lost: a preemption loses only the
samples in flight on that instance, which are generated again.

Symbols: R the rollout seconds of an iteration on the whole pool (``costsim.models.rl``'s rollout
phase with ``rollout_gpus = G_r``), n samples per iteration, Σ L their response tokens, I the samples
in flight on the whole pool while it generates, w = Σ L² ÷ (2 Σ L) the tokens an in-flight sample has
generated on average (a sample is met in flight in proportion to its length, half way through it),
d = restart_h + weight_push_s the hours an instance is down after a preemption.

- availability ``a = 1 ÷ (1 + λ·d)``: an instance alternates up (mean 1/λ) and down (d); the
  renewal-reward share of time it is up. The pool generates at a times its full rate on average.
- lost samples per second of rollout: ``λ · a · I`` (k·a instances up, each preempted at λ, each
  holding I ÷ k samples); each costs w tokens generated again, a share ``w ÷ Σ L`` of the work.
- rollout time ``R' = R ÷ a · (1 + λ·a·I·R'·w ÷ Σ L)``, so ``R' = R ÷ (a · (1 − q·R))`` with
  ``q = λ·I·w ÷ Σ L`` (1/s); at ``q·R ≥ 1`` preemptions destroy work as fast as it is made: never ends.
- lost samples per iteration ``λ · a · I · R'``.

The iteration then follows ``costsim.models.rl``: sync ``R' + log-probs + scoring + update +
sync``; async ``max(R' + overhead, log-probs + scoring + update) + sync``. With λ = 0 it is
exactly the disaggregated job whose rollout GPUs are the pool's.

Approximations, stated: the pool's rate is averaged over time (a rollout of j < k instances up is
not slowed by k ÷ j as a drain bound would be: the expectation is over a rollout much longer than an
instance's downtime or over many iterations); the re-prefill of a lost sample's prompt is left out
(prefill is compute-bound and short beside decode); a replica wider than one instance (rollout tensor
parallel > g) loses the samples of the whole replica, which the caller states by passing g = the
replica's GPUs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from costsim.models import network, rl
from costsim.scenario.units import SECONDS_PER_HOUR

SECONDS_PER_DAY = 24 * SECONDS_PER_HOUR


@dataclass(frozen=True)
class Offload:
    """Expected effect of a preemptible rollout pool on each iteration (arrays, one per iteration).

    ``rollout_s``: the rollout phase with preemptions; ``total_s``: the iteration; ``lost_samples``:
    samples lost and generated again; ``availability``: share of time an instance is up;
    ``instance_hours``: instance-hours held per iteration, pushes and startup included (what is billed)."""

    rollout_s: np.ndarray
    total_s: np.ndarray
    lost_samples: np.ndarray
    availability: float
    instance_hours: np.ndarray


def availability(preemptions_per_instance_day: float, down_h: float) -> float:
    """Share of time an instance is up: 1 ÷ (1 + λ·d), λ per hour, d hours down per preemption."""
    return 1.0 / (1.0 + preemptions_per_instance_day / 24.0 * down_h)


def weight_push_s(params_b: float, inter_busbw_gb_s: float, bytes_per_param: float = 2.0) -> float:
    """Seconds to push the current weights to a new rollout instance over its fabric link
    (``network.transfer_s``; the instance's whole-node busbw, ``network.inter_node_busbw_gb_s``)."""
    return network.transfer_s(rl.weight_bytes(params_b, bytes_per_param), inter_busbw_gb_s)


def inflight_samples(shape: rl.Shape, hw: rl.Hardware, len_sum, len_sq_sum) -> np.ndarray:
    """Samples in flight on the rollout GPUs while they generate, per iteration: the replicas' KV
    memory ÷ a sequence's mean context (``rl.mean_context``), at most the samples of the iteration
    (sync; async runs up to (s+1)·n, the caller passes its own when it knows the staleness used)."""
    lay = rl.layout(shape, hw)
    context = rl.mean_context(shape.prompt_tokens, np.asarray(len_sum, float), np.asarray(len_sq_sum, float))
    return np.minimum(float(shape.samples), lay.replicas * lay.kv_capacity_tokens / context)


def offloaded(pt: rl.PhaseTimes, asynchronous: bool, len_sum, len_sq_sum, inflight, instances: int,
              preemptions_per_instance_day: float, restart_h: float, push_s: float,
              billed_restart_h: float = 0.0, pipelined=None) -> Offload:
    """The iteration of a job whose rollout runs on ``instances`` preemptible instances.

    ``pt``: ``rl.phase_times`` of the job with its rollout GPUs the pool's (no preemption);
    ``len_sum``/``len_sq_sum``: Σ L and Σ L² per iteration (tokens); ``inflight``: samples in flight
    on the whole pool (``inflight_samples``); ``restart_h``: hours from a preemption to a running
    instance (reacquire, provisioning, startup); ``push_s``: seconds of the weight push after it;
    ``billed_restart_h``: the part of ``restart_h`` that is billed (startup), for ``instance_hours``;
    ``pipelined``: per iteration, whether an async job overlaps rollout and training at the staleness
    ``rl.phase_times`` chose (``split_phase_times`` gives it; None: read from ``pt``).
    A rollout that never ends (see the module docstring) is ``inf``."""
    lam_s = preemptions_per_instance_day / SECONDS_PER_DAY
    a = availability(preemptions_per_instance_day, restart_h + push_s / SECONDS_PER_HOUR)
    len_sum = np.asarray(len_sum, float)
    wasted = np.asarray(len_sq_sum, float) / (2.0 * np.maximum(len_sum, 1e-12))  # w: tokens per lost sample
    q = lam_s * np.asarray(inflight, float) * wasted / np.maximum(len_sum, 1e-12)
    r = np.asarray(pt.rollout, float)
    keeps_up = q * r < 1.0
    rollout = np.where(keeps_up, r / (a * np.where(keeps_up, 1.0 - q * r, 1.0)), math.inf)
    lost = lam_s * a * np.asarray(inflight, float) * rollout
    if pipelined is None:
        # An async job runs as a synchronous one where rl.phase_times found staleness 0 best (its total
        # is then the sequential sum); a pt without a total (NaN) is taken as pipelined.
        pipelined = asynchronous & ~(pt.total >= pt.rollout + pt.logprobs + pt.scoring + pt.update + pt.sync)
    total = iteration_s(rollout, pt.overhead, pt.logprobs + pt.scoring + pt.update, pt.sync, pipelined)
    return Offload(rollout_s=rollout, total_s=total, lost_samples=lost, availability=a,
                   instance_hours=instance_hours(total, instances, preemptions_per_instance_day, restart_h, push_s,
                                                  billed_restart_h))


def iteration_s(rollout, overhead, train, sync, pipelined) -> np.ndarray:
    """An iteration's seconds as ``rl.phase_times`` combines its phases: pipelined (async with some
    staleness) ``max(rollout + overhead, train) + sync``, else ``rollout + train + sync`` (an async
    job whose best staleness is 0 runs as a synchronous one)."""
    return np.where(pipelined, np.maximum(rollout + overhead, train), rollout + train) + sync


def split_phase_times(shape: rl.Shape, home: rl.Hardware, pool: rl.Hardware, link_gb_s: float, len_sum, len_max,
                      len_sq_sum) -> tuple[rl.PhaseTimes, np.ndarray]:
    """An offloaded job's phases without preemptions: the rollout (its async re-prefill overhead and
    straggler too) on the pool's GPUs, log-probs, scoring and the update on the home GPUs, the
    per-iteration weight sync over the link between them (``weight_push_s``). The staleness an async
    job runs at is the one ``rl.phase_times`` picks on the pool's GPUs; returned with the phases:
    per iteration, whether it pipelines (for ``offloaded``)."""
    on_pool = rl.phase_times(shape, pool, len_sum, len_max, len_sq_sum)
    at_home = on_pool if home == pool else rl.phase_times(shape, home, len_sum, len_max, len_sq_sum)
    sync = np.full_like(on_pool.rollout, weight_push_s(shape.params_b, link_gb_s, shape.bytes_per_param))
    pipelined = shape.asynchronous & (on_pool.total < on_pool.rollout + on_pool.logprobs + on_pool.scoring
                                      + on_pool.update + on_pool.sync)
    train = at_home.logprobs + at_home.scoring + at_home.update
    total = iteration_s(on_pool.rollout, on_pool.overhead, train, sync, pipelined)
    return rl.PhaseTimes(on_pool.rollout, at_home.logprobs, at_home.scoring, at_home.update, sync, on_pool.overhead,
                         total, on_pool.straggler), pipelined


def instance_hours(iteration_s, instances: int, preemptions_per_instance_day: float, restart_h: float,
                   push_s: float, billed_restart_h: float = 0.0) -> np.ndarray:
    """Instance-hours the pool bills per iteration of ``iteration_s`` seconds: the instances up
    (a share ``a`` of them on average) for the iteration, plus, per preemption, the billed part of the
    restart (``billed_restart_h``: startup; the wait for capacity and provisioning are not billed)
    and the weight push. Held for the whole iteration: a sync job's rollout GPUs idle while it
    trains, as a disaggregated job's own rollout GPUs do."""
    d = restart_h + push_s / SECONDS_PER_HOUR
    a = availability(preemptions_per_instance_day, d)
    hours = np.asarray(iteration_s, float) / SECONDS_PER_HOUR
    # k·a·hours up, and k·a·λ·hours preemptions each billing its startup and push (one product, so
    # an iteration that never ends bills inf, not inf × 0).
    billed_per_preemption = billed_restart_h + push_s / SECONDS_PER_HOUR
    return instances * a * hours * (1.0 + preemptions_per_instance_day / 24.0 * billed_per_preemption)
