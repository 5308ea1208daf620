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
(dynamic batching packs up to ``microbatch_tokens`` a micro-batch; a rank always runs at least one).
"""

from __future__ import annotations

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
