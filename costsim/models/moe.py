"""Mixture-of-experts terms (DESIGN.md section 3, v3): pure functions over numbers and arrays.

An MoE model computes with its active parameters (the shared layers and ``k`` of ``E`` experts a
token) but holds, checkpoints and syncs all of them. A decode step reads the experts its batch
touches: with B tokens each routed to k of E experts, ``E · (1 − (1 − k/E)^B)`` experts are
expected to be read. Expert parallelism (EP) sends each token's hidden state to its experts and
back: two all-to-alls a MoE layer in the forward pass, two more in the backward.

Layers L and hidden size h, which set the all-to-all bytes and the expert tensors a refit moves,
come from the model's config when the class gives its layers (``model.layers``:
``P_active ≈ 12 · L · h²`` then gives h), else from the active parameters alone as in common
shapes (``h ≈ 80 · L``). With its layers, L · h is Qwen3-30B-A3B 115k (config 48 × 2,048 = 98k),
Qwen3-235B-A22B 415k (94 × 4,096 = 385k), DeepSeek-V3 434k (61 × 7,168 = 437k); from the active
parameters alone 98k, 348k and 492k.
"""

from __future__ import annotations

import math

import numpy as np

HIDDEN_PER_LAYER = 80.0  # h ≈ 80 · L in common transformer shapes [A]
TENSORS_PER_EXPERT = 3  # gate, up and down projections: one weight matrix each (Qwen3-MoE, DeepSeek-V3 configs)


def layer_count(active_params_b: float, layers: int | None = None) -> float:
    """Transformer layers: the config's, or from the active parameters (``P = 12 L h²``, h = 80 L)."""
    if layers is not None:
        return float(layers)
    return (active_params_b * 1e9 / (12.0 * HIDDEN_PER_LAYER ** 2)) ** (1.0 / 3.0)


def layers_times_hidden(active_params_b: float, layers: int | None = None) -> float:
    """L · h of a transformer with ``active_params_b`` parameters a token: ``√(P · L / 12)`` from
    ``P = 12 L h²``, L the config's ``layers`` or ``layer_count``'s estimate (h = 80 L)."""
    return math.sqrt(active_params_b * 1e9 * layer_count(active_params_b, layers) / 12.0)


def expert_split_b(total_b: float, active_b: float, experts: int, experts_per_token: int) -> tuple[float, float]:
    """(shared, one expert) parameters, billions: total = shared + E · x and active = shared + k · x.
    Dense (no experts, or active = total): (total, 0)."""
    if experts <= 0 or active_b >= total_b or experts <= experts_per_token:
        return total_b, 0.0
    per_expert = (total_b - active_b) / (experts - experts_per_token)
    return active_b - experts_per_token * per_expert, per_expert


def decode_weight_params_b(total_b: float, active_b: float, experts: int, experts_per_token: int, batch):
    """Parameters (billions) a decode step of ``batch`` tokens reads: the shared part of the active
    parameters plus the experts the batch touches. Dense (no experts, or active = total): total."""
    batch = np.asarray(batch, dtype=float)
    shared, per_expert = expert_split_b(total_b, active_b, experts, experts_per_token)
    if per_expert == 0.0:
        return np.full_like(batch, total_b)
    k, e = experts_per_token, experts
    touched = e * (1.0 - (1.0 - k / e) ** np.maximum(batch, 1.0))
    return shared + per_expert * touched


def rank_params_b(total_b: float, active_b: float, experts: int, experts_per_token: int, model_parallel: int,
                  expert_parallel: int) -> float:
    """Parameters (billions) one training rank holds: the shared part over the model-parallel
    degree (TP · PP) and the experts over it and the expert-parallel group too (Megatron shards
    experts over EP within each pipeline stage). Dense: total ÷ TP · PP."""
    shared, per_expert = expert_split_b(total_b, active_b, experts, experts_per_token)
    return (shared + experts * per_expert / max(expert_parallel, 1)) / max(model_parallel, 1)


def alltoall_s(tokens, active_params_b: float, experts_per_token: int, ep: int, bytes_per_value: float,
               per_gpu_gb_s: float, passes: float, layers: int | None = None):
    """Expert-parallel all-to-all seconds of ``tokens`` tokens per GPU: each MoE layer sends a
    token's hidden state to its ``k`` experts and back (2 all-to-alls a pass), the share
    (EP − 1)/EP of them to another GPU, at ``per_gpu_gb_s``; ``passes``: 1 a forward pass, 2 a
    forward and backward (the backward sends the two all-to-alls' gradients). Zero without expert
    parallelism."""
    if ep <= 1:
        return np.zeros_like(np.asarray(tokens, dtype=float))
    per_token = (2.0 * experts_per_token * layers_times_hidden(active_params_b, layers) * bytes_per_value
                 * (ep - 1) / ep)
    return passes * np.asarray(tokens, dtype=float) * per_token / (per_gpu_gb_s * 1e9)


def expert_tensors(active_params_b: float, experts: int, layers: int | None = None) -> int:
    """Expert weight matrices of an MoE model, ``TENSORS_PER_EXPERT`` per expert per layer (the
    config's layers, or ``layer_count``'s estimate); 0 for a dense model. DeepSeek-V3 with its 61
    layers: 3 × 256 × 61 = 46,848, against the 45,395 tensors NeMo RL's refit guide counts a vLLM
    rank loading (its first 3 layers are dense, and the count adds attention and norms)."""
    if experts <= 0:
        return 0
    return int(round(TENSORS_PER_EXPERT * experts * layer_count(active_params_b, layers)))
