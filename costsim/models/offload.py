"""Rollout offload to a preemptible pool (docs/rollout-offload.md, after RLBoost, arXiv 2510.19225):
pure, closed-form expectations.

A disaggregated job keeps its training GPUs on its own option and runs its G_r rollout GPUs on
k = ⌈G_r ÷ g⌉ instances of g GPUs rented from a spot (or on-demand) pool. Each instance is
preempted at rate λ while it is up (a Poisson process, per instance, as ``CloudOption``'s
``preemptions_per_instance_day``); a preempted instance is back after ``restart_h`` (reacquire,
provisioning, startup) plus the push of the current weights to it (``weight_push_s``: a refit over
the link, ``rl.sync_s``). Training state is never lost: a preemption loses only the
samples in flight on that instance, which are generated again.

Symbols: R the rollout seconds of an iteration on the whole pool (``costsim.models.rl``'s rollout
phase with ``rollout_gpus = G_r``), n samples per iteration, Σ L their response tokens, I the samples
in flight on the whole pool while it generates, w = Σ L² ÷ (2 Σ L) the tokens an in-flight sample has
generated on average (a sample is met in flight in proportion to its length, half way through it),
d = restart_h + weight_push_s the hours an instance is down after a preemption, T the seconds a sync
job spends between rollouts (log-probs, scoring, update, weight sync).

- availability ``a = 1 ÷ (1 + λ·d)``: an instance alternates up (mean 1/λ) and down (d); the
  renewal-reward share of time it is up, whatever the job does (it is preempted idle or busy).
- the rollout's work ``W = R ÷ (1 − q·R)`` pool-seconds, ``q = λ·I·w ÷ Σ L`` (1/s): the instances up
  while the pool generates, k·W instance-seconds an iteration, each hold I ÷ k samples and are
  preempted at λ, so λ·I·W samples are lost, each w tokens (a share ``w ÷ Σ L`` of R) made again:
  ``W = R·(1 + q·W)``. At ``q·R ≥ 1`` preemptions destroy work as fast as it is made: never ends.
- lost samples per iteration ``λ·I·W``.

The iteration (``pool_iteration``). A rollout proceeds with the instances up: j of the k up
generate at j ÷ k of the pool's rate (the samples are shared by the instances up). Between rollouts
the pool idles for a gap g (a sync job's log-probs, scoring, update and weight sync; a pipelined
async job's wait for its training, and the sync); its instances are preempted then too, and one
preempted in the gap is not back when the next rollout starts, which goes on without it.

1. Up-time, exact under these assumptions: an instance is up a share a of the wall clock, and while
   the pool generates every instance up generates, k·W instance-seconds an iteration. So per
   instance ``a·E[P] = W + E[U]``, P the iteration, U the instance's up-time in the gap:
   ``E[P] = (W + E[U]) ÷ a``; the rollout (its waits for instances included) is E[P] less the mean gap.
2. An instance up when a gap of g seconds starts is up in it ``τ(g) = (1/λ)·Σ_{m ≥ 0, m·d < g}
   P(m + 1, λ·(g − m·d))`` seconds on average (P the regularised lower incomplete gamma): it is up
   at t with m preemptions behind it iff its up-time t − m·d holds exactly m of the Poisson(λ)
   preemptions, ``Pr(up at t) = Σ_m Poisson(m; λ·(t − m·d))``, integrated term by term; for g < d,
   ``τ(g) = (1 − e^(−λ·g)) ÷ λ``. An instance down when it starts, its residual downtime taken as the
   stationary one (uniform over d), is up ``(g − τ(g)) ÷ (λ·d)`` (so that an instance in its
   stationary state, up with probability a, is up a·g).
3. Which instances are up when a rollout ends: take the states as changing slowly beside an
   iteration (d and 1/λ long beside it: hours against minutes). With j up an iteration takes
   ``P_j = iteration_s(k·W/j, overhead, train, sync)`` and idles the pool ``g_j = P_j − k·W/j``; the
   clock spends a share ``π_j = Binomial(j; k, a)`` with j up, so iterations complete at
   ``Σ_j π_j ÷ P_j`` a second (none with j = 0) and one has j up with probability
   ``p_j = (π_j ÷ P_j) ÷ Σ_i (π_i ÷ P_i)``, a given instance up at its end with probability j ÷ k:
   ``E[U] = Σ_j p_j·((j/k)·τ(g_j) + (1 − j/k)·(g_j − τ(g_j)) ÷ (λ·d))``, the mean gap ``Σ_j p_j·g_j``.

Checks: one instance, sync (gap T): always up when its rollout ends, ``E[P] = (W + τ(T)) ÷ a``,
exact (its up-time is memoryless), ≈ (R + T) ÷ a for λ·T ≪ 1; k → ∞: j/k → a, ``E[U] = a·g``,
``E[P] = W/a + g``, the rollout ``R' = R ÷ (a·(1 − q·R))``, which holds for every k with no gap;
states slow beside an iteration (τ(g) → g): ``E[P] = 1 ÷ Σ_j (π_j ÷ P_j)``. With λ·d = 0 it is
exactly the disaggregated job whose rollout GPUs are the pool's. The phases combine as in
``costsim.models.rl``: sync ``rollout + log-probs + scoring + update + sync``; async
``max(rollout + overhead, log-probs + scoring + update) + sync``.

Approximations, stated: in step 3 the states are frozen over an iteration and a down instance's
residual downtime is the stationary one. Against a Monte Carlo of the instances (event by event;
tests/models/test_rollout_offload_timing.py), a sync iteration is within 0.6 % (a little under) at 1 to 24
instances for d from T/4 to 120·T and λ·T up to 0.4, where leaving the gap's downtime out was up to
25 % under; exact at one instance. An async iteration counts a stall whole where its training's
slack would absorb part of it: within 0.6 % at 6 preemptions a day and d = 1 h, 2.3 % over at 24 a
day, d = 15 min and 420 s iterations (leaving the gap out: up to 20 % under). The re-prefill of a
lost sample's prompt is left out (prefill is compute-bound and short beside decode) and the async
re-prefill (overhead) is not stretched; a replica wider than one instance (rollout tensor parallel
> g) loses the samples of the whole replica, which the caller states by passing g = the replica's
GPUs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from costsim.models import rl
from costsim.units import SECONDS_PER_HOUR

SECONDS_PER_DAY = 24 * SECONDS_PER_HOUR


@dataclass(frozen=True)
class Offload:
    """Expected effect of a preemptible rollout pool on each iteration (arrays, one per iteration).

    ``rollout_s``: the rollout phase with preemptions, its waits for instances still down included
    (the iteration less the pool's mean gap); ``total_s``: the iteration; ``lost_samples``:
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


def weight_push_s(shape: rl.Shape, home: rl.Hardware, link_gb_s: float) -> float:
    """Seconds to push the current weights to a new rollout instance: a refit as every iteration's
    (``rl.sync_s`` on the home hardware: per-transfer latency, the gather from the training layout,
    the weights over the ``link_gb_s`` link at the method's share, the engines' reload), not the
    bytes over the link alone."""
    return rl.sync_s(shape, home, path_gb_s=link_gb_s)


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
    down_s = restart_h * SECONDS_PER_HOUR + push_s
    len_sum = np.asarray(len_sum, float)
    wasted = np.asarray(len_sq_sum, float) / (2.0 * np.maximum(len_sum, 1e-12))  # w: tokens per lost sample
    q = lam_s * np.asarray(inflight, float) * wasted / np.maximum(len_sum, 1e-12)
    r = np.asarray(pt.rollout, float)
    keeps_up = q * r < 1.0
    work = np.where(keeps_up, r / np.where(keeps_up, 1.0 - q * r, 1.0), math.inf)  # W = R / (1 - qR)
    lost = lam_s * np.asarray(inflight, float) * work
    if pipelined is None:
        # An async job runs as a synchronous one where rl.phase_times found staleness 0 best (its total
        # is then the sequential sum); a pt without a total (NaN) is taken as pipelined.
        pipelined = asynchronous & ~(pt.total >= pt.rollout + pt.logprobs + pt.scoring + pt.update + pt.sync)
    rollout, total = pool_iteration(work, pt.overhead, pt.logprobs + pt.scoring + pt.update, pt.sync, pipelined,
                                    instances, lam_s, down_s)
    return Offload(rollout_s=rollout, total_s=total, lost_samples=lost,
                   availability=availability(preemptions_per_instance_day, down_s / SECONDS_PER_HOUR),
                   instance_hours=instance_hours(total, instances, preemptions_per_instance_day, restart_h, push_s,
                                                  billed_restart_h))


def pool_iteration(work_s, overhead, train, sync, pipelined, instances: int, per_s: float, down_s: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Seconds of the rollout phase (its waits for instances included) and of the iteration, per
    iteration, when the rollout's ``work_s`` (pool-seconds at full rate, W in the module docstring)
    runs on ``instances`` instances preempted at ``per_s`` per second while up and down ``down_s``
    seconds each time; ``overhead``, ``train``, ``sync``, ``pipelined`` as ``iteration_s``. The
    derivation is the module docstring's steps 1–3; inf where the work is."""
    work = np.asarray(work_s, float)
    k = max(int(instances), 1)
    if per_s * down_s == 0.0:  # never down: the pool always generates at its full rate
        return work, iteration_s(work, overhead, train, sync, pipelined)
    a = 1.0 / (1.0 + per_s * down_s)
    rate = np.zeros_like(work)  # Σ π_j / P_j: iterations a second
    up_in_gap = np.zeros_like(work)  # Σ π_j / P_j · U_j
    gap = np.zeros_like(work)  # Σ π_j / P_j · g_j
    finite = np.isfinite(work)
    done = np.where(finite, work, 0.0)  # the rollouts that never end are put back at the end
    for j, share in _up_counts(k, per_s * down_s):
        x = k * done / j
        p = iteration_s(x, overhead, train, sync, pipelined)
        g = p - x
        tau = up_time_s(g, per_s, down_s)
        weight = share / p
        rate += weight
        up_in_gap += weight * (j / k * tau + (1.0 - j / k) * (g - tau) / (per_s * down_s))
        gap += weight * g
    total = (done + up_in_gap / rate) / a
    rollout = total - gap / rate
    return np.where(finite, rollout, math.inf), np.where(finite, total, math.inf)


def up_time_s(gap_s, per_s: float, down_s: float) -> np.ndarray:
    """Expected seconds an instance that is up at the start of a gap of ``gap_s`` seconds is up in
    it, preempted at ``per_s`` (> 0) per second while up and down ``down_s`` seconds each time: τ(g)
    of the module docstring's step 2, Σ_m P(m + 1, λ·(g − m·d)) ÷ λ over m·d < g."""
    g = np.asarray(gap_s, float)
    total = -np.expm1(-per_s * g)  # m = 0: not yet preempted
    if down_s > 0.0 and (g > down_s).any():  # back from a preemption within the gap, m times
        from scipy.special import gammainc

        m = 1
        while (g > m * down_s).any():
            term = gammainc(m + 1, per_s * np.maximum(g - m * down_s, 0.0))
            total = total + term
            if (term <= 1e-15 * total).all():  # the terms fall with m: the rest is below rounding
                break
            m += 1
    return total / per_s


def _up_counts(k: int, per_down: float) -> list[tuple[int, float]]:
    """(j, Binomial(j; k, a)) for j = 1..k instances up, a = 1 ÷ (1 + λ·d) with ``per_down`` = λ·d > 0,
    those below 1e-15 of the likeliest left out (too rare to count); in logs, so that large k neither
    overflows nor underflows (log a = −log(1 + λ·d), log(1 − a) = log(λ·d) − log(1 + λ·d))."""
    log_up, log_down = -math.log1p(per_down), math.log(per_down) - math.log1p(per_down)
    logs = {j: math.lgamma(k + 1) - math.lgamma(j + 1) - math.lgamma(k - j + 1) + j * log_up + (k - j) * log_down
            for j in range(1, k + 1)}
    top = max(logs.values())
    return [(j, math.exp(v)) for j, v in logs.items() if v - top > math.log(1e-15)]


def iteration_s(rollout, overhead, train, sync, pipelined) -> np.ndarray:
    """An iteration's seconds as ``rl.phase_times`` combines its phases: pipelined (async with some
    staleness) ``max(rollout + overhead, train) + sync``, else ``rollout + train + sync`` (an async
    job whose best staleness is 0 runs as a synchronous one)."""
    return np.where(pipelined, np.maximum(rollout + overhead, train), rollout + train) + sync


def split_phase_times(shape: rl.Shape, home: rl.Hardware, pool: rl.Hardware, link_gb_s: float, len_sum, len_max,
                      len_sq_sum) -> tuple[rl.PhaseTimes, np.ndarray]:
    """An offloaded job's phases without preemptions: the rollout (its async re-prefill overhead and
    straggler too) on the pool's GPUs, log-probs, scoring and the update on the home GPUs, the
    per-iteration weight sync over the link between them (``rl.sync_s`` with the link as its path). The staleness an async
    job runs at is the one ``rl.phase_times`` picks on the pool's GPUs; returned with the phases:
    per iteration, whether it pipelines (for ``offloaded``)."""
    on_pool = rl.phase_times(shape, pool, len_sum, len_max, len_sq_sum)
    at_home = on_pool if home == pool else rl.phase_times(shape, home, len_sum, len_max, len_sq_sum)
    # A refit as at home (gather, per-transfer latency, reload), its transfer over the link.
    sync = np.full_like(on_pool.rollout, rl.sync_s(shape, home, path_gb_s=link_gb_s))
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
