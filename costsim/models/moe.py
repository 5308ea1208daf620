"""Mixture-of-experts terms (DESIGN.md section 3, v3): pure functions over numbers and arrays.

An MoE model computes with its active parameters (the shared layers and ``k`` of ``E`` experts a
token) but holds, checkpoints and syncs all of them. A decode step reads the experts its batch
touches: with B tokens each routed to k of E experts, ``E · (1 − (1 − k/E)^B)`` experts are
expected to be read. Expert parallelism (EP) sends each token's hidden state to its experts and
back: two all-to-alls a MoE layer in the forward pass, two more in the backward.

Layers × hidden size, which sets the all-to-all bytes, is not part of the schema: it follows from
the active parameters as in common shapes (``P ≈ 12 · L · h²`` with ``h ≈ 80 · L``), which gives
Qwen3-30B-A3B 98k (config 48 × 2,048 = 98k), Qwen3-235B-A22B 348k (94 × 4,096 = 385k) and
DeepSeek-V3 492k (61 × 7,168 = 437k).
"""

from __future__ import annotations

import numpy as np

HIDDEN_PER_LAYER = 80.0  # h ≈ 80 · L in common transformer shapes [A]


def layers_times_hidden(active_params_b: float) -> float:
    """L · h of a transformer with ``active_params_b`` parameters a token (``P ≈ 12 L h²``, h = 80 L)."""
    h = (active_params_b * 1e9 * HIDDEN_PER_LAYER / 12.0) ** (1.0 / 3.0)
    return h * h / HIDDEN_PER_LAYER


def decode_weight_params_b(total_b: float, active_b: float, experts: int, experts_per_token: int, batch):
    """Parameters (billions) a decode step of ``batch`` tokens reads: the shared part of the active
    parameters plus the experts the batch touches. Dense (no experts, or active = total): total."""
    batch = np.asarray(batch, dtype=float)
    if experts <= 0 or active_b >= total_b:
        return np.full_like(batch, total_b)
    k, e = experts_per_token, experts
    per_expert = (total_b - active_b) / (e - k)  # total = shared + E · x, active = shared + k · x
    shared = active_b - k * per_expert
    touched = e * (1.0 - (1.0 - k / e) ** np.maximum(batch, 1.0))
    return shared + per_expert * touched


def alltoall_s(tokens, active_params_b: float, experts_per_token: int, ep: int, bytes_per_value: float,
               per_gpu_gb_s: float, passes: float):
    """Expert-parallel all-to-all seconds of ``tokens`` tokens per GPU: each MoE layer sends a
    token's hidden state to its ``k`` experts and back (2 all-to-alls a pass), the share
    (EP − 1)/EP of them to another GPU, at ``per_gpu_gb_s``; ``passes``: 1 forward, 3 forward and
    backward. Zero without expert parallelism."""
    if ep <= 1:
        return np.zeros_like(np.asarray(tokens, dtype=float))
    per_token = 2.0 * experts_per_token * layers_times_hidden(active_params_b) * bytes_per_value * (ep - 1) / ep
    return passes * np.asarray(tokens, dtype=float) * per_token / (per_gpu_gb_s * 1e9)


def expert_tensors(active_params_b: float, experts: int) -> int:
    """Expert weight matrices of an MoE model (gate, up and down per expert per layer), layers from
    ``layers_times_hidden`` (L = √(L·h / 80)); 0 for a dense model."""
    if experts <= 0:
        return 0
    layers = (layers_times_hidden(active_params_b) / HIDDEN_PER_LAYER) ** 0.5
    return int(round(3 * experts * layers))
