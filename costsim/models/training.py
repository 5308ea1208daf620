"""Training passes with their fixed costs (DESIGN.md section 3, v3): pure functions, seconds.

v2 timed the update and the log-prob pass by their FLOPs alone, so four times the GPUs gave four
times the speed. Measured RL trainers bend (verl on H20: update 2.76× and log-probs 2.0× on 4×
the GPUs) because every optimizer step and every micro-batch carries a cost the GPU count does
not divide: the optimizer kernels, gradient clipping and the slowest rank's padding per step
(``t_step0``), launches and packing per micro-batch (``t_mb0``), and, with parameters sharded
over the data-parallel ranks (FSDP, ZeRO-3: a layout without tensor or pipeline parallelism),
an all-gather of the weights before each forward and backward pass and a reduce-scatter of the
gradients after it.

Micro-batches per rank per optimizer step: ``max(1, ⌈tokens / (steps · ranks · tokens_per_mb)⌉)``
(dynamic batching packs up to ``microbatch_tokens`` a GPU into a micro-batch, so a data-parallel
rank of TP · PP GPUs packs TP · PP times that; a rank always runs at least one).

Dynamic batching balances tokens across the data-parallel ranks but never splits a sequence: the
rank holding a step's longest response computes at least its tokens. With many ranks and few
samples per optimizer step that rank sets the pace (verl's 7B DAPO on 128 H20: ≈ 5k tokens a rank
a step beside ≈ 9k-token responses), so the update bends with more GPUs as measured, where with
few ranks (or short responses) it does not.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np


def microbatches_per_step(tokens, steps: int, ranks: int, microbatch_tokens: float):
    """Micro-batches each data-parallel rank runs per optimizer step (at least one), per iteration."""
    per_rank = np.asarray(tokens, dtype=float) / (max(steps, 1) * max(ranks, 1) * microbatch_tokens)
    return np.maximum(np.ceil(per_rank), 1.0)


def fixed_s(steps: int, microbatches, step_s: float, microbatch_s: float):
    """Fixed seconds of a pass: ``steps · t_step0 + steps · micro-batches per step · t_mb0``."""
    return steps * step_s + steps * np.asarray(microbatches, dtype=float) * microbatch_s


def sharded_gather_s(weight_bytes: float, ranks: int, busbw_gb_s: float) -> float:
    """All-gather (or reduce-scatter) of a model's weights sharded over ``ranks`` GPUs, NCCL's
    convention: ``(n − 1) / n · bytes / busbw`` (zero on one rank)."""
    if ranks <= 1:
        return 0.0
    return (ranks - 1) / ranks * weight_bytes / (busbw_gb_s * 1e9)


def fsdp_traffic_s(weight_bytes: float, ranks: int, busbw_gb_s: float, passes, backward: bool) -> np.ndarray:
    """Parameter traffic of FSDP/ZeRO-3 over ``passes`` micro-batch passes: an all-gather before
    the forward, and with ``backward`` another before the backward plus a reduce-scatter of the
    gradients (3 collectives a micro-batch instead of 1)."""
    per_pass = (3.0 if backward else 1.0) * sharded_gather_s(weight_bytes, ranks, busbw_gb_s)
    return per_pass * np.asarray(passes, dtype=float)


def longest_per_step(len_sum, len_sq_sum, len_max, samples: int, steps: int):
    """Expected longest response (tokens) among the ``samples / steps`` of one optimizer step, per
    iteration: the quantile ``1 − 1/(m + 1)`` of a lognormal with the iteration's mean and spread
    (from Σ L and Σ L²), at most the iteration's longest. One step (``steps`` 1) holds it."""
    n = max(int(samples), 1)
    longest = np.asarray(len_max, dtype=float)
    if steps <= 1:
        return longest
    m = max(n / steps, 1.0)
    mean = np.asarray(len_sum, dtype=float) / n
    # σ² = ln(1 + var / mean²) = ln(E[L²] / mean²); the quantile mean · exp(σ z − σ² / 2).
    sigma2 = np.log(np.maximum(np.asarray(len_sq_sum, dtype=float) / n / np.maximum(mean * mean, 1e-12), 1.0))
    z = NormalDist().inv_cdf(1.0 - 1.0 / (m + 1.0))
    return np.minimum(mean * np.exp(np.sqrt(sigma2) * z - sigma2 / 2.0), longest)


def imbalance(tokens_per_rank, longest_tokens):
    """How much longer the slowest data-parallel rank computes than the average (≥ 1): a sequence
    is never split between ranks, so a rank holding the step's longest sequence (prompt included)
    computes at least its tokens however many ranks share the step's ``tokens_per_rank``."""
    return np.maximum(1.0, np.asarray(longest_tokens, dtype=float) / np.maximum(np.asarray(tokens_per_rank, float), 1e-12))
