"""A rollout engine's decode step (DESIGN.md section 3): pure, seconds, vectorised over iterations.

A step of a replica of g GPUs reads the weights and the KV cache of its active sequences at η of
their HBM bandwidth, or computes its tokens, whichever is longer; when the replica's tensor
parallelism spans NVLink domains (vLLM across nodes) every layer also all-reduces twice over the
NICs (``network.tp_decode_comm_s``, at the catalog's ``rl.tp_allreduce_*`` latency); and it never
takes less than the engine's floor t_floor (kernel launches, sampling, scheduling):
``t_step = max(t_floor, max(memory, compute) + all-reduces)``.
"""

from __future__ import annotations

import numpy as np

from costsim.models import moe, network
from costsim.models.rl_shape import Hardware, Layout, Shape


def decode_step_s(weight_b: float, kv_read_bytes, batch, tp: int, hw: Hardware, flops_per_token: float, mfu: float,
                  comm=0.0):
    """One decode step of a replica of ``tp`` GPUs: the weights and ``kv_read_bytes`` of KV cache
    read at η of HBM bandwidth or the compute of ``batch`` tokens, whichever is longer, plus
    ``comm`` seconds of all-reduces across NVLink domains (``tp_comm_s``); at least the floor."""
    memory = (weight_b + np.asarray(kv_read_bytes)) / (tp * hw.hbm_tb_s * 1e12 * hw.mem_efficiency)
    compute = flops_per_token * np.asarray(batch) / (tp * hw.bf16_dense_tflops * 1e12 * mfu)
    return np.maximum(hw.step_floor_s, np.maximum(memory, compute) + comm)


def lone_token_step_s(weight_b: float, tp: int, hw: Hardware, comm: float = 0.0) -> float:
    """A lone sequence's decode step, the floor aside (seconds): its weights read as the full
    batch's steps read them, each of the replica's ``tp`` GPUs its shard at once at η of its HBM
    bandwidth (inside one NVLink domain or across: tensor parallelism, not pipeline stages), plus
    ``comm`` seconds of all-reduces across domains (``tp_comm_s`` of one token)."""
    return weight_b / (max(tp, 1) * hw.hbm_tb_s * 1e12 * hw.mem_efficiency) + comm


def tp_comm_s(shape: Shape, lay: Layout, hw: Hardware, batch):
    """Seconds a decode step of a replica holding ``batch`` sequences all-reduces across NVLink
    domains (``network.tp_decode_comm_s``; zero inside one): its tensor parallelism spans them, as
    vLLM's does across nodes, so every layer all-reduces twice over the NICs of its GPUs. Layers
    and hidden size from the model's config, else from its active parameters (``moe.layer_count``)."""
    layers = moe.layer_count(shape.active_b, shape.layers)
    busbw = network.group_busbw_gb_s(lay.rollout_tensor, hw.nvlink_gpus, hw.nvlink_busbw_gb_s, hw.nic_gb_s, True)
    return network.tp_decode_comm_s(batch, layers=layers, hidden=moe.layers_times_hidden(shape.active_b, shape.layers)
                                    / layers, tp=lay.rollout_tp, domain_gpus=hw.nvlink_gpus,
                                    two_domains_s=hw.tp_allreduce_latency_s, doubling_s=hw.tp_allreduce_doubling_s,
                                    busbw_gb_s=busbw)
