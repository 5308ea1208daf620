"""Weight sync from the trainers to the rollout engines (DESIGN.md section 3, v3): pure, seconds.

A refit as it is done: the trainers gather each tensor from their layout (tensor, pipeline and
expert shards), send it in buckets over the slowest link between the training and the rollout
GPUs (NVLink inside one NVLink domain — a node, or a 72-GPU NVL72 rack — the NICs across), and
every rollout engine loads what it received into its own layout:

    t_sync = n_transfers · t_lat + gather + W / (bw_path · η_method) + W / (TP_r · reload)

with ``n_transfers = ⌈W / bucket⌉`` plus, for an MoE model, one per expert weight matrix (3 per
expert per layer: gate, up, down; ``moe.expert_tensors``, from the config's layers when given),
since the experts are gathered from their expert-parallel ranks and loaded tensor by tensor. A broadcast leaves the training side through one rank: across nodes its path is
that rank's NIC, inside an NVLink domain NVLink.

The method sets the per-bucket latency ``t_lat`` and the share ``η_method`` of the path's
bandwidth it reaches: an NCCL broadcast refit (per-tensor gather to one rank, conversion,
broadcast), a checkpoint engine (gather, transfer and reload pipelined) or NIXL (RDMA point to
point). Colocated engines reshard in place over NVLink the same way.

How the bytes move depends on the method. An NCCL broadcast gathers to one rank and broadcasts
from it: its path is one GPU's link (``weight_sync_s``). NIXL moves each shard point to point (RDMA
reads): every rollout GPU receives only its shard over its own link, all in parallel
(``point_to_point_s``), so a refit to many GPUs runs at their aggregate bandwidth. A checkpoint
engine does the same inside an NVLink domain (CUDA IPC between the trainers' and the engines'
GPUs) unless broadcasting is faster (many replicas fed by few trainers), and across nodes a
pipelined broadcast (one link, as NCCL's, with its own constants).

A packed NCCL broadcast (NeMo RL's ``packed_broadcast_producer``: tensors concatenated into
double-buffered refit buffers of ``min(0.02 × the GPU's memory, 5 GiB)``, one ``broadcast`` a
buffer, ``packed_bucket_gb``; 1.72 GB on an 80 GB H100) pays one latency a buffer, not one a
tensor, and not the catalog's ``rl.sync_bucket_gb``, which sizes the other methods' buckets. [A]
Its buffers are taken to be large enough that NCCL spreads each over its channels, whose rings
leave the sender's NVLink domain through every NIC of it (``broadcast_link_gb_s``): no source
shows this for NeMo RL's refit group, which holds one trainer rank, and it was chosen on the one
row it carries (NeMo RL's DeepSeek-V3 NCCL refit); a broadcast tensor by tensor (verl's Megatron
refit) stays on the sender's own NIC. Both take NCCL's constants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

SyncMethodName = Literal["nccl_broadcast", "nccl_packed", "checkpoint_engine", "nixl"]
POINT_TO_POINT = frozenset({"nixl"})  # methods that move shards point to point across nodes too
IN_DOMAIN_POINT_TO_POINT = frozenset({"nixl", "checkpoint_engine"})  # ... and inside one NVLink domain
PACKED = frozenset({"nccl_packed"})  # methods that pack tensors into large buffers before broadcasting
# The catalog's constants of each method: a packed broadcast is NCCL's, with fewer, larger messages.
METHOD_KEYS: dict[str, str] = {"nccl_broadcast": "nccl", "nccl_packed": "nccl", "checkpoint_engine": "checkpoint_engine",
                               "nixl": "nixl"}


GIB = 2**30
# NeMo RL's refit buffer (nemo_rl/utils/packed_tensor.py, get_target_packed_tensor_size):
# min(int(total_memory × NRL_REFIT_BUFFER_MEMORY_RATIO), 5 × 1024**3), the ratio 0.02 by default.
PACKED_BUFFER_MEMORY_SHARE = 0.02
PACKED_BUFFER_MAX_BYTES = 5 * GIB


@dataclass(frozen=True, kw_only=True)
class SyncMethod:
    """One way of moving weights: seconds per bucket, share of the path's bandwidth, GB per bucket,
    and the GB/s at which an engine loads received weights."""

    latency_s: float
    efficiency: float
    bucket_gb: float
    reload_gb_s: float


def method_from_constants(name: str, consts: dict[str, float]) -> SyncMethod:
    """The method's constants from the catalog's ``rl`` section (``sync_<method>_latency_s``,
    ``sync_<method>_efficiency``, ``sync_bucket_gb``, ``reload_gb_s``)."""
    key = METHOD_KEYS[name]
    return SyncMethod(latency_s=float(consts[f"sync_{key}_latency_s"]),
                      efficiency=float(consts[f"sync_{key}_efficiency"]),
                      bucket_gb=float(consts["sync_bucket_gb"]), reload_gb_s=float(consts["reload_gb_s"]))


def packed_bucket_gb(memory_gb: float) -> float:
    """GB (1e9 bytes) of one refit buffer of a packed broadcast on a GPU of ``memory_gb``:
    ``min(0.02 × memory, 5 GiB)``, as NeMo RL sizes it from torch's ``total_memory``. A GPU's
    memory is sized in binary units, so the catalog's GB are read as GiB here (torch reports
    79.2 GiB for an 80 GB H100, 1 % under): 80 GB → 1.72 GB, 192 GB → 4.12 GB, 288 GB → the
    5 GiB cap, 5.37 GB."""
    return min(PACKED_BUFFER_MEMORY_SHARE * memory_gb * GIB, PACKED_BUFFER_MAX_BYTES) / 1e9


def for_gpu(name: str, method: SyncMethod, memory_gb: float) -> SyncMethod:
    """Method ``name``'s constants on a GPU of ``memory_gb``: a ``PACKED`` method's buckets are its
    refit buffers (``packed_bucket_gb``), the others keep the catalog's ``sync_bucket_gb``."""
    return replace(method, bucket_gb=packed_bucket_gb(memory_gb)) if name in PACKED else method


def broadcast_link_gb_s(method: str, *, inside_domain: bool, nvlink_gb_s: float, nic_gb_s: float,
                        domain_nics_gb_s: float) -> float:
    """GB/s of the link a broadcast refit leaves the training side through: NVLink inside one
    NVLink domain; across domains the sender's own NIC (``nic_gb_s``), or, for a ``PACKED``
    method, every NIC of the sender's domain (``domain_nics_gb_s``, NCCL's rings reach them over
    NVLink)."""
    if inside_domain:
        return nvlink_gb_s
    return domain_nics_gb_s if method in PACKED else nic_gb_s


def gather_s(weight_bytes: float, shards: int, busbw_gb_s: float) -> float:
    """Collecting the full weights from ``shards`` training ranks (TP × PP × EP, or the
    data-parallel ranks of FSDP): an all-gather, ``(k − 1)/k · W / busbw`` (zero unsharded)."""
    if shards <= 1:
        return 0.0
    return (shards - 1) / shards * weight_bytes / (busbw_gb_s * 1e9)


def transfers(weight_bytes: float, bucket_gb: float, expert_tensors: int = 0) -> int:
    """Transfers a refit makes: the weights in buckets of ``bucket_gb``, and, for an MoE model, one
    per expert tensor (experts live on their expert-parallel ranks and are gathered one by one)."""
    return max(math.ceil(weight_bytes / (bucket_gb * 1e9)), 1) + expert_tensors


def weight_sync_s(weight_bytes: float, *, path_gb_s: float, method: SyncMethod, gather: float = 0.0,
                  rollout_tp: int = 1, expert_tensors: int = 0) -> float:
    """One refit: per-transfer latency (``transfers``) + ``gather`` seconds + the transfer over the
    path at the method's share of its bandwidth + the engines' reload of their shard (seconds)."""
    buckets = transfers(weight_bytes, method.bucket_gb, expert_tensors)
    transfer = weight_bytes / (path_gb_s * 1e9 * method.efficiency)
    reload = weight_bytes / max(rollout_tp, 1) / (method.reload_gb_s * 1e9)
    return buckets * method.latency_s + gather + transfer + reload


def point_to_point_s(weight_bytes: float, *, link_gb_s: float, method: SyncMethod, rollout_tp: int, replicas: int,
                     senders: int, expert_tensors: int = 0) -> float:
    """One refit sent point to point (seconds): every rollout GPU pulls its own shard
    (``W / rollout_tp``) from the training GPUs that hold it, each over its own link of
    ``link_gb_s`` (NVLink inside an NVLink domain, its own NIC across), all at once; no gather
    to one rank. The receivers take ``W / (TP_r · link)``, the ``senders`` send ``replicas`` copies,
    ``replicas · W / (senders · link)``; the slower, at the method's share of the links. Each
    receiver pays the latency of its own buckets and of every expert tensor, in parallel with the
    others: a tensor-parallel rank loads its slice of each (NeMo RL's refit guide counts 45,395
    tensors a vLLM rank of DeepSeek-V3 loads at TP 32), so tensor parallelism shares the bytes, not
    the tensors."""
    tp = max(rollout_tp, 1)
    shard = weight_bytes / tp
    receive = shard / (link_gb_s * 1e9)
    send = max(replicas, 1) * weight_bytes / (max(senders, 1) * link_gb_s * 1e9)
    buckets = transfers(shard, method.bucket_gb, expert_tensors)
    reload = shard / (method.reload_gb_s * 1e9)
    return buckets * method.latency_s + max(receive, send) / method.efficiency + reload
