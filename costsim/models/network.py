"""Collective communication times (DESIGN.md section 3): pure functions, seconds, bytes and GB/s.

NCCL's bus-bandwidth convention: an all-reduce of a ``nbytes`` buffer held by each of n GPUs takes
``2 (n − 1) / n · nbytes / busbw``; a broadcast or point-to-point transfer takes ``nbytes /
busbw``. Within one NVLink domain (a node or a cloud instance) busbw is the NVLink figure. Across
nodes each GPU sends its share of the buffer over its own NIC (NCCL reduces inside the node first
and runs one ring per NIC), so a node's busbw is ``NICs × NIC busbw × fabric efficiency``, capped
by NVLink: 8 × 400 Gb/s InfiniBand reaches 8 × 47 ≈ 376 GB/s, as nccl-tests measure
(NVIDIA/nccl-tests#290), not the 47 GB/s of one NIC.

When several groups reduce at once (the data-parallel groups of a tensor- or pipeline-parallel
layout), a group with d of its members on each node of ``gpus_per_node`` GPUs gets d /
gpus_per_node of the node's NICs: with tensor parallel 8 each data-parallel group has one GPU
per node and so one NIC.
"""

from __future__ import annotations

GB = 1e9


def inter_node_busbw_gb_s(nics_per_node: float, nic_busbw_gb_s: float, nvlink_busbw_gb_s: float,
                          efficiency: float) -> float:
    """Bus bandwidth of a collective over whole nodes (GB/s): the node's NICs × their busbw ×
    the fabric's efficiency (InfiniBand 1.0, tuned RoCE 0.92), never above NVLink."""
    return min(nvlink_busbw_gb_s, nics_per_node * nic_busbw_gb_s * efficiency)


def group_busbw_gb_s(members_per_node: int, gpus_per_node: int, nvlink_busbw_gb_s: float,
                     inter_busbw_gb_s: float, across_nodes: bool) -> float:
    """Bus bandwidth one of several concurrent groups sees (GB/s): NVLink inside one NVLink
    domain; across nodes, its members' share ``members_per_node / gpus_per_node`` of the node's
    fabric bandwidth ``inter_busbw_gb_s`` (the whole-node figure), never above NVLink."""
    if not across_nodes:
        return nvlink_busbw_gb_s
    share = min(max(members_per_node, 1), gpus_per_node) / gpus_per_node
    return min(nvlink_busbw_gb_s, inter_busbw_gb_s * share)


def allreduce_s(nbytes: float, gpus: int, busbw_gb_s: float) -> float:
    """Ring all-reduce of a ``nbytes`` buffer on each of ``gpus`` GPUs: 2 (n − 1)/n · bytes / busbw.
    Zero on one GPU."""
    if gpus <= 1:
        return 0.0
    return 2.0 * (gpus - 1) / gpus * nbytes / (busbw_gb_s * GB)


def transfer_s(nbytes: float, busbw_gb_s: float) -> float:
    """A broadcast or point-to-point transfer of ``nbytes`` at ``busbw_gb_s`` (weight sync, reshard)."""
    return nbytes / (busbw_gb_s * GB)


def pipeline_bubble(stages: int, microbatches: int) -> float:
    """Idle share of a pipeline-parallel step (1F1B or GPipe): (PP − 1) / (m + PP − 1)."""
    return (stages - 1) / (microbatches + stages - 1)
