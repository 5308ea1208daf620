"""RL iteration time from first principles (DESIGN.md section 3): pure, vectorised over iterations.

Symbols: P policy parameters (billions), F peak dense bf16 FLOP/s of a GPU, n = prompts × samples,
L_i response lengths, Lp prompt tokens, T = Σ (Lp + L_i) tokens per iteration, D decode tokens/s
per GPU (default: catalog coefficient × HBM TB/s ÷ P), s_seq decode tokens/s of one sequence.

| phase | seconds |
|---|---|
| rollout, sync | max(ΣL / (G_r · D), max L / s_seq): throughput bound vs the straggler |
| rollout, async (staleness s) | max(ΣL / (G_r · D), max L / (s_seq · (s + 1))) |
| reference / reward model | 2 · P_x · 1e9 · T / (G_s · F · mfu), per model scored |
| verifier | n · seconds per sample / (G_s · w): w CPU workers beside each GPU (catalog: 8) |
| update | 6 · P · 1e9 · T · epochs / (G_t · F · mfu) + minibatches · epochs · t_allreduce(2 · P · 1e9 bytes, G_t) |
| weight sync (disaggregated) | 2 · P · 1e9 bytes / inter-node busbw |

Iteration: colocated = rollout(G) + scoring(G) + update(G); disaggregated sync = rollout(G_r) +
scoring(G_t) + update(G_t) + sync; async = max(rollout(G_r), scoring(G_t) + update(G_t)) + sync.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costsim import network

@dataclass(frozen=True)
class Hardware:
    """What an option's GPUs and fabric contribute to an iteration.

    ``decode_coeff``: default decode tokens/s per GPU per (HBM TB/s ÷ params in B), and
    ``verifier_workers``: CPU verifier workers per GPU — both catalog assumptions (``rl.*``).
    """

    bf16_dense_tflops: float
    hbm_tb_s: float
    gpus_per_node: int
    nvlink_busbw_gb_s: float
    inter_busbw_gb_s: float  # per GPU, fabric efficiency included
    decode_coeff: float = 25_000.0
    verifier_workers: int = 8


@dataclass(frozen=True)
class Shape:
    """A job class's iteration, in the model's symbols (plain numbers)."""

    params_b: float
    gpus: int
    rollout_gpus: int
    train_gpus: int
    disaggregated: bool
    asynchronous: bool
    staleness: int
    samples: int
    prompt_tokens: float
    decode_tokens_per_s_per_gpu: float | None
    sequence_tokens_per_s: float
    reference_model: bool
    reward_model_params_b: float | None  # None: verifier
    verifier_seconds_per_sample: float
    epochs: int
    minibatches: int
    mfu: float


@dataclass(frozen=True)
class PhaseTimes:
    """Seconds per iteration, one entry per iteration."""

    rollout: np.ndarray
    scoring: np.ndarray
    update: np.ndarray
    sync: np.ndarray
    total: np.ndarray


def decode_tokens_per_s(hbm_tb_s: float, params_b: float, coeff: float = 25_000.0) -> float:
    """Default decode throughput per GPU: memory-bound, ∝ HBM bandwidth ÷ model size."""
    return coeff * hbm_tb_s / params_b


def rollout_s(len_sum, len_max, gpus: int, decode_per_gpu: float, seq_tokens_per_s: float, staleness: int = 0):
    """Sampling time: the batch's throughput bound or its longest sequence, whichever is longer.

    ``staleness`` 0 is synchronous; s > 0 lets a sequence span s + 1 iterations."""
    return np.maximum(np.asarray(len_sum) / (gpus * decode_per_gpu), np.asarray(len_max) / (seq_tokens_per_s * (staleness + 1)))


def forward_s(params_b: float, tokens, gpus: int, tflops: float, mfu: float):
    """One forward pass over ``tokens``: 2 · P · tokens FLOPs."""
    return 2.0 * params_b * 1e9 * np.asarray(tokens) / (gpus * tflops * 1e12 * mfu)


def verifier_s(samples: int, seconds_per_sample: float, gpus: int, workers_per_gpu: int = 8) -> float:
    """Verifying every sample on the CPU workers beside the scoring GPUs."""
    return samples * seconds_per_sample / (gpus * workers_per_gpu)


def update_s(params_b: float, tokens, gpus: int, hw: Hardware, epochs: int, minibatches: int, mfu: float):
    """Training: 6 · P · tokens · epochs FLOPs, plus one gradient all-reduce per optimizer step."""
    compute = 6.0 * params_b * 1e9 * np.asarray(tokens) * epochs / (gpus * hw.bf16_dense_tflops * 1e12 * mfu)
    busbw = network.allreduce_busbw_gb_s(gpus, hw.gpus_per_node, hw.nvlink_busbw_gb_s, hw.inter_busbw_gb_s)
    return compute + minibatches * epochs * network.ring_allreduce_s(2.0 * params_b * 1e9, gpus, busbw)


def phase_times(shape: Shape, hw: Hardware, len_sum, len_max) -> PhaseTimes:
    """Every phase's seconds for each iteration, given each iteration's Σ and max response length."""
    len_sum = np.asarray(len_sum, dtype=float)
    len_max = np.asarray(len_max, dtype=float)
    tokens = shape.samples * shape.prompt_tokens + len_sum
    decode = shape.decode_tokens_per_s_per_gpu or decode_tokens_per_s(hw.hbm_tb_s, shape.params_b, hw.decode_coeff)
    staleness = shape.staleness if shape.asynchronous else 0
    rollout = rollout_s(len_sum, len_max, shape.rollout_gpus, decode, shape.sequence_tokens_per_s, staleness)
    g_s = shape.train_gpus  # equals all GPUs when colocated
    scoring = np.zeros_like(len_sum)
    if shape.reference_model:
        scoring = scoring + forward_s(shape.params_b, tokens, g_s, hw.bf16_dense_tflops, shape.mfu)
    if shape.reward_model_params_b is not None:
        scoring = scoring + forward_s(shape.reward_model_params_b, tokens, g_s, hw.bf16_dense_tflops, shape.mfu)
    else:
        scoring = scoring + verifier_s(shape.samples, shape.verifier_seconds_per_sample, g_s, hw.verifier_workers)
    update = update_s(shape.params_b, tokens, shape.train_gpus, hw, shape.epochs, shape.minibatches, shape.mfu)
    sync = np.full_like(len_sum, network.transfer_s(2.0 * shape.params_b * 1e9, hw.inter_busbw_gb_s) if shape.disaggregated else 0.0)
    if shape.asynchronous:
        total = np.maximum(rollout, scoring + update) + sync
    else:
        total = rollout + scoring + update + sync
    return PhaseTimes(rollout, scoring, update, sync, total)
