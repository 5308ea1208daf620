"""Collective communication times (DESIGN.md section 3): pure functions, seconds, bytes and GB/s.

NCCL's bus-bandwidth convention: an all-reduce of a ``nbytes`` buffer held by each of n GPUs takes
``2 (n − 1) / n · nbytes / busbw``; a broadcast or point-to-point transfer takes ``nbytes /
busbw``. Within one NVLink domain (a node or a cloud instance) busbw is the NVLink figure. Across
nodes each GPU sends its share of the buffer over its own NIC (NCCL reduces inside the node first
and runs one ring per NIC), so a node's busbw is ``NICs × NIC busbw × fabric efficiency``, capped
by NVLink: 8 × 400 Gb/s InfiniBand reaches 8 × 47 ≈ 376 GB/s, as nccl-tests measure
(NVIDIA/nccl-tests#290), not the 47 GB/s of one NIC.

When several groups reduce at once (the data-parallel groups of a tensor- or pipeline-parallel
layout), a group with d of its members in each NVLink domain gets those members' own NICs, d ×
one GPU's NIC bandwidth: with tensor parallel 8 each data-parallel group has one GPU per node and
so one NIC. One GPU's NIC figure is the catalog's ``nic_gb_s_per_gpu`` (one 400G NIC per GPU on
H100, H800, H20, GB200 and MI300X systems), not the node's busbw over its GPUs: that is capped by
NVLink, which a GPU's traffic to its own NIC does not cross (an H800's 200 GB/s NVLink busbw over
8 GPUs would give 25 GB/s, where its NIC gives 47).

A small all-reduce is latency, not bandwidth: across d NVLink domains NCCL's tree takes the
latency of two domains plus one tree level (two network hops) a doubling of d
(``small_allreduce_latency_s``, catalog ``rl.tp_allreduce_*``). A rollout engine whose tensor
parallelism spans domains (vLLM's across nodes) all-reduces twice a layer every decode step
(``tp_decode_comm_s``).
"""

from __future__ import annotations

import math

import numpy as np

GB = 1e9


def inter_node_busbw_gb_s(nics_per_node: float, nic_busbw_gb_s: float, nvlink_busbw_gb_s: float,
                          efficiency: float) -> float:
    """Bus bandwidth of a collective over whole nodes (GB/s): the node's NICs × their busbw ×
    the fabric's efficiency (InfiniBand 1.0, tuned RoCE 0.92), never above NVLink."""
    return min(nvlink_busbw_gb_s, nics_per_node * nic_busbw_gb_s * efficiency)


def group_busbw_gb_s(members_per_domain: int, domain_gpus: int, nvlink_busbw_gb_s: float, nic_gb_s: float,
                     across_domains: bool) -> float:
    """Bus bandwidth one of several concurrent groups sees (GB/s): NVLink inside one NVLink
    domain; across domains, the NICs of its members in each domain (``members_per_domain``, at
    least 1 and at most ``domain_gpus``) at one GPU's NIC figure ``nic_gb_s`` each, never above
    NVLink (a collective reduces inside the domain first)."""
    if not across_domains:
        return nvlink_busbw_gb_s
    return min(nvlink_busbw_gb_s, min(max(members_per_domain, 1), domain_gpus) * nic_gb_s)


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


def small_allreduce_latency_s(domains: int, two_domains_s: float, doubling_s: float) -> float:
    """Latency of a small all-reduce over a group spanning ``domains`` NVLink domains (seconds):
    ``two_domains_s`` at two, ``doubling_s`` more each time the domains double (NCCL's tree grows a
    level): ``two_domains_s + doubling_s · (⌊log2 domains⌋ − 1)``, the whole levels NCCL's tuning
    model counts (``log2i(nNodes)`` in src/graph/tuning.cc, a floor: 3 domains cost what 2 do);
    zero inside one domain, whose NVLink all-reduces the decode constants already hold."""
    if domains <= 1:
        return 0.0
    return two_domains_s + doubling_s * (int(domains).bit_length() - 2)


def tp_decode_comm_s(batch, *, layers: float, hidden: float, tp: int, domain_gpus: int, two_domains_s: float,
                     doubling_s: float, busbw_gb_s: float, bytes_per_value: float = 2.0):
    """Seconds a decode step of a tensor-parallel group of ``tp`` GPUs spends all-reducing across
    NVLink domains of ``domain_gpus``: two all-reduces a layer (attention and MLP outputs), each of
    ``batch`` tokens' hidden states (``hidden`` values of ``bytes_per_value``), at the small
    all-reduce's latency plus ``allreduce_s`` at ``busbw_gb_s``. Zero when the group fits a domain."""
    domains = math.ceil(tp / max(domain_gpus, 1))
    if domains <= 1:
        return np.zeros_like(np.asarray(batch, dtype=float))
    latency = small_allreduce_latency_s(domains, two_domains_s, doubling_s)
    nbytes = np.asarray(batch, dtype=float) * hidden * bytes_per_value
    return 2.0 * layers * (latency + allreduce_s(1.0, tp, busbw_gb_s) * nbytes)
