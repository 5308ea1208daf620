"""Collective times (costsim.models.network) against hand calculations in NCCL's bus-bandwidth
convention, and the published figure they must reproduce: 8 × 400 Gb/s InfiniBand per node
reaches ≈ 350–380 GB/s of all-reduce bus bandwidth (nccl-tests), accepted within 250–450 GB/s."""

import pytest

from costsim.models import network

# H100 catalog figures: NVLink4 busbw 470 GB/s, 8 NICs of 400 Gb/s at 47 GB/s busbw each.
NVLINK, NICS, NIC = 470.0, 8, 47.0


def test_busbw_of_8_x_400g_infiniband_is_the_published_band():
    # 8 NICs × 47 GB/s × efficiency 1.0 = 376 GB/s (below NVLink's 470, so not capped);
    # v1 divided by the GPUs per node and got 47 GB/s, 8× too slow.
    ib = network.inter_node_busbw_gb_s(NICS, NIC, NVLINK, 1.0)
    assert ib == pytest.approx(376.0, rel=1e-12)
    assert 250.0 <= ib <= 450.0


def test_roce_is_its_efficiency_times_infiniband():
    # Tuned RoCE: 8 × 47 × 0.92 = 345.92 GB/s, so any transfer over it takes 1 / 0.92 as long.
    roce = network.inter_node_busbw_gb_s(NICS, NIC, NVLINK, 0.92)
    assert roce == pytest.approx(345.92, rel=1e-12)
    ib = network.inter_node_busbw_gb_s(NICS, NIC, NVLINK, 1.0)
    assert network.allreduce_s(140e9, 64, roce) / network.allreduce_s(140e9, 64, ib) == pytest.approx(1 / 0.92)


def test_fabric_busbw_never_exceeds_nvlink():
    # 16 NICs × 47 = 752 GB/s would outrun the 470 GB/s NVLink the node reduces over first.
    assert network.inter_node_busbw_gb_s(16, NIC, NVLINK, 1.0) == NVLINK
    # A100 with 4 × HDR 200G: 4 × 24 = 96 GB/s (nccl-tests#119 reports 85–96).
    assert network.inter_node_busbw_gb_s(4, 24.0, 230.0, 1.0) == pytest.approx(96.0)


def test_allreduce_by_hand():
    # 2 (n − 1)/n · S / busbw. 14 GB (a 7B model's bf16 gradients):
    # over 8 GPUs on NVLink: 2 × 7/8 × 14e9 / 470e9 = 0.0521277 s;
    # over 16 GPUs across nodes: 2 × 15/16 × 14e9 / 376e9 = 0.0698138 s.
    assert network.allreduce_s(14e9, 8, 470.0) == pytest.approx(0.05212766, rel=1e-6)
    assert network.allreduce_s(14e9, 16, 376.0) == pytest.approx(0.06981383, rel=1e-6)
    # two GPUs move the whole buffer once: 2 × 1/2 × S / busbw = S / busbw
    assert network.allreduce_s(1e9, 2, 100.0) == pytest.approx(0.01)
    assert network.allreduce_s(14e9, 1, 470.0) == 0.0  # nothing to reduce


def test_allreduce_approaches_twice_the_buffer_over_busbw():
    # Ring all-reduce: 2 (n − 1)/n → 2 as n grows; 1,024 GPUs: 2 × 1023/1024 × 1e9 / 1e11 = 0.0199805 s.
    assert network.allreduce_s(1e9, 1024, 100.0) == pytest.approx(0.019980469, rel=1e-6)


def test_transfer_by_hand():
    # Weight sync of a 7B bf16 model across the fabric: 14e9 / 376e9 = 0.0372340 s;
    # reshard within a node: 14e9 / 470e9 = 0.0297872 s.
    assert network.transfer_s(14e9, 376.0) == pytest.approx(0.03723404, rel=1e-6)
    assert network.transfer_s(14e9, 470.0) == pytest.approx(0.02978723, rel=1e-6)


def test_group_busbw_tensor_parallel_8_leaves_one_nic_per_group():
    # TP 8: each data-parallel group has one GPU per 8-GPU node, so one NIC: 47 GB/s.
    assert network.group_busbw_gb_s(1, 8, NVLINK, 47.0, across_domains=True) == pytest.approx(47.0)
    # TP 2: four members per node, four NICs: 4 × 47 = 188 GB/s.
    assert network.group_busbw_gb_s(4, 8, NVLINK, 47.0, across_domains=True) == pytest.approx(188.0)
    # Pure data parallel: the whole node, 8 × 47 = 376 GB/s.
    assert network.group_busbw_gb_s(8, 8, NVLINK, 47.0, across_domains=True) == pytest.approx(376.0)
    # H800: NVLink busbw 200 caps the whole node (8 × 47 = 376 → 200), not one member's NIC:
    # 47 GB/s, where the node's capped figure over its GPUs would give 200 / 8 = 25.
    assert network.group_busbw_gb_s(8, 8, 200.0, 47.0, across_domains=True) == pytest.approx(200.0)
    assert network.group_busbw_gb_s(1, 8, 200.0, 47.0, across_domains=True) == pytest.approx(47.0)
    # Members beyond the node (or none, TP·PP > node) are clamped to [1, node].
    assert network.group_busbw_gb_s(0, 8, NVLINK, 47.0, across_domains=True) == pytest.approx(47.0)
    assert network.group_busbw_gb_s(16, 8, NVLINK, 47.0, across_domains=True) == pytest.approx(376.0)
    # Inside one NVLink domain the group reduces over NVLink whatever its size.
    assert network.group_busbw_gb_s(1, 8, NVLINK, 47.0, across_domains=False) == NVLINK


def test_pipeline_bubble_by_hand():
    # (PP − 1)/(m + PP − 1): 4 stages, 12 micro-batches: 3/15 = 0.2; 2 stages, 16: 1/17.
    assert network.pipeline_bubble(4, 12) == pytest.approx(0.2)
    assert network.pipeline_bubble(2, 16) == pytest.approx(1 / 17)
    assert network.pipeline_bubble(1, 5) == 0.0  # no pipeline, no bubble
    assert network.pipeline_bubble(8, 1) == pytest.approx(7 / 8)  # one micro-batch: a stage idles 7/8


def test_a_small_all_reduce_across_domains_is_nccls_tree_latency():
    # NCCL's tuning model, tree/LL, 8 GPUs a node: 6.8 + 2 × (7 × 0.6 + log2(nodes) × 5.0) µs =
    # 25.2 on 2 nodes, 35.2 on 4, 45.2 on 8: 25.2 at two domains, 10 more a doubling.
    assert 6.8 + 2 * (7 * 0.6 + 1 * 5.0) == pytest.approx(25.2)
    # NCCL counts whole levels (log2i, a floor): 3 nodes as 2, 5–7 as 4, 12 as 8.
    for domains, want in ((1, 0.0), (2, 25.2e-6), (3, 25.2e-6), (4, 35.2e-6), (5, 35.2e-6), (7, 35.2e-6),
                          (8, 45.2e-6), (12, 45.2e-6), (16, 55.2e-6)):
        assert network.small_allreduce_latency_s(domains, 25.2e-6, 10e-6) == pytest.approx(want, abs=1e-15)


def test_tensor_parallel_decode_across_nodes_all_reduces_twice_a_layer():
    # Qwen3-235B-A22B-like, TP 16 over two 8-GPU nodes, 64 sequences of hidden 4,096 in bf16:
    # 64 × 4,096 × 2 = 524,288 B an all-reduce, 2 × 15/16 × 524,288 / 376e9 = 2.61447 µs of bytes
    # + 25.2 µs of latency, twice for each of 94 layers: 188 × 27.81447 µs = 5.229120 ms a step.
    kw = {"layers": 94, "hidden": 4096, "domain_gpus": 8, "two_domains_s": 25.2e-6, "doubling_s": 10e-6,
          "busbw_gb_s": 376.0}
    got = network.tp_decode_comm_s(64.0, tp=16, **kw)
    assert float(got) == pytest.approx(188 * (25.2e-6 + 2 * 15 / 16 * 524_288 / 376e9), rel=1e-12)
    assert float(got) == pytest.approx(5.229120e-3, rel=1e-6)
    # TP 32 over four nodes: 35.2 µs a call; inside one node nothing (per entry of a batch array).
    four = network.tp_decode_comm_s(64.0, tp=32, **kw)
    assert float(four) == pytest.approx(188 * (35.2e-6 + 2 * 31 / 32 * 524_288 / 376e9), rel=1e-12)
    inside = network.tp_decode_comm_s([1.0, 64.0], tp=8, **kw)
    assert list(inside) == [0.0, 0.0]
