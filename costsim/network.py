"""Collective communication times (DESIGN.md section 3): pure functions, seconds and bytes.

Bus bandwidth follows NCCL's convention: a ring all-reduce of ``bytes`` over n GPUs takes
``2 (n − 1) / n · bytes / busbw``. Within one node busbw is the NVLink figure; across nodes it
is the per-GPU share of the node's NICs times the fabric's efficiency (InfiniBand 1.0, tuned
RoCE 0.92: ``costsim catalog``).
"""

from __future__ import annotations

GB = 1e9


def inter_node_busbw_gb_s(nics_per_node: int, nic_busbw_gb_s: float, gpus_per_node: int, efficiency: float) -> float:
    """Per-GPU bus bandwidth across nodes: NIC bandwidth per GPU × fabric efficiency (GB/s)."""
    return nics_per_node * nic_busbw_gb_s / gpus_per_node * efficiency


def allreduce_busbw_gb_s(gpus: int, gpus_per_node: int, nvlink_busbw_gb_s: float, inter_busbw_gb_s: float) -> float:
    """The bus bandwidth an all-reduce over ``gpus`` sees: NVLink inside one node, the fabric beyond."""
    return nvlink_busbw_gb_s if gpus <= gpus_per_node else inter_busbw_gb_s


def ring_allreduce_s(nbytes: float, gpus: int, busbw_gb_s: float) -> float:
    """Ring all-reduce time: 2 (n − 1)/n · bytes / busbw. Zero on one GPU."""
    if gpus <= 1:
        return 0.0
    return 2.0 * (gpus - 1) / gpus * nbytes / (busbw_gb_s * GB)


def transfer_s(nbytes: float, busbw_gb_s: float) -> float:
    """Point-to-point transfer time at a bandwidth (weight sync from trainers to samplers)."""
    return nbytes / (busbw_gb_s * GB)
