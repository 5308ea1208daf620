"""One GPU's NIC and the NVLink domain, against hand calculations (DESIGN.md section 3,
"Collectives"; catalog ``nic_gb_s_per_gpu`` and ``nvlink_domain_gpus``).

A transfer one GPU makes across nodes (a refit leaving the trainers through one rank, a shard
pulled point to point, an expert-parallel all-to-all across nodes) runs at that GPU's own NIC,
the catalog's per-GPU figure, not at the node's busbw over its GPUs, which NVLink caps. A GB200's
node (the allocation and failure unit) is a 4-GPU compute tray; its NVLink domain is the 72-GPU
rack, which decides only whether a group or a refit stays on NVLink."""

from dataclasses import replace

import numpy as np
import pytest
from helpers import rl_shape

from costsim.catalog.load import default_catalog
from costsim.models import moe, rl, weight_sync
from costsim.plan.hardware import hardware
from costsim.plan.resolve import resolve
from costsim.scenario import Scenario

NCCL = weight_sync.SyncMethod(latency_s=0.001, efficiency=0.4, bucket_gb=1.0, reload_gb_s=400.0)


def plan(gpu_type: str, gpus: int, kind: str = "owned"):
    option = ({"name": "o", "kind": "owned", "gpu_type": gpu_type, "gpus": gpus} if kind == "owned"
              else {"name": "o", "kind": "cloud", "gpu_type": gpu_type})
    sc = Scenario.model_validate({"name": "x", "horizon_days": 1, "workload": {"trace": "t.csv"}, "options": [option]})
    return resolve(sc)[0]


def shape(**kw) -> rl.Shape:
    return rl_shape(**{"rollout_gpus": 8, "train_gpus": 8, "disaggregated": True, "samples": 256,
                       "prompt_tokens": 512.0, "minibatches": 1, **kw})


def test_the_catalog_gives_each_gpu_its_own_nic():
    # One 400G NIC a GPU on the reference systems: 47 GB/s each, whatever the node's NVLink caps.
    cat = default_catalog()
    for name in ("H100", "H800", "H20", "GB200", "MI300X"):
        gpu = cat.gpus[name]
        assert gpu.nic_gb_s_per_gpu == 47.0 and gpu.nics_per_node == gpu.gpus_per_node, name
    # H800: the node's busbw is capped by its 200 GB/s NVLink; over its 8 GPUs that would be 25 GB/s,
    # but a GPU's traffic to its own NIC does not cross NVLink: 47.
    h800 = hardware(plan("H800", 16))
    assert (h800.inter_busbw_gb_s, h800.inter_busbw_gb_s / 8, h800.nic_gb_s) == (200.0, 25.0, 47.0)
    # GB200: the rack's 72 NICs × 47 reach 850 GB/s (NVLink's cap); over 72 GPUs 11.8 GB/s, but one GPU's NIC is 47.
    gb200 = hardware(plan("GB200", 144))
    assert gb200.inter_busbw_gb_s == 850.0 and gb200.nic_gb_s == 47.0
    # RoCE: the fabric's efficiency applies to the GPU's NIC as to the node's.
    roce = resolve(Scenario.model_validate({"name": "x", "horizon_days": 1, "workload": {"trace": "t.csv"}, "options": [
        {"name": "o", "kind": "owned", "gpu_type": "H100", "gpus": 16, "network": "roce"}]}))[0]
    assert hardware(roce).nic_gb_s == pytest.approx(47.0 * 0.92)


def test_a_refit_across_h800_nodes_leaves_through_one_nic_at_47_gb_s():
    # 7B bf16, 8 trainers (one node, FSDP shards gathered over NVLink) → 8 rollout GPUs on another
    # node, NCCL broadcast: 14 buckets × 1 ms + gather 7/8 × 14e9 / 200e9 + 14e9 / (47e9 × 0.4)
    # + reload 14e9 / 400e9 (TP 1) = 0.014 + 0.06125 + 0.744681 + 0.035 = 0.854931 s
    # (at the node's 200 / 8 = 25 GB/s the transfer alone would take 1.4 s).
    hw = replace(hardware(plan("H800", 16)), sync_methods={"nccl_broadcast": NCCL})
    sh = shape(rollout_tp=1)
    assert rl.sync_path_gb_s(sh, hw) == 47.0
    expect = 0.014 + 7 / 8 * 14e9 / 200e9 + 14e9 / (47e9 * 0.4) + 14e9 / 400e9
    assert rl.sync_s(sh, hw) == pytest.approx(expect, rel=1e-12) and expect == pytest.approx(0.854931, rel=1e-6)


def test_a_packed_broadcast_leaves_through_every_nic_of_the_senders_node():
    # The link: NVLink inside a domain; across, one NIC tensor by tensor, the domain's NICs packed.
    link = {"inside_domain": False, "nvlink_gb_s": 470.0, "nic_gb_s": 47.0, "domain_nics_gb_s": 376.0}
    assert weight_sync.broadcast_link_gb_s("nccl_broadcast", **link) == 47.0
    assert weight_sync.broadcast_link_gb_s("nccl_packed", **link) == 376.0
    assert weight_sync.broadcast_link_gb_s("nccl_packed", **{**link, "inside_domain": True}) == 470.0
    # 7B bf16, 8 trainers → 8 rollout GPUs on another H100 node, packed: buffers of 2 % of 80 GiB =
    # 1.718 GB, so ⌈14 / 1.718⌉ = 9 buffers × 1 ms (not the 1 GB buckets' 14) + gather
    # 7/8 × 14e9 / 470e9 + 14e9 / (376e9 × 0.4) + reload 14e9 / 400e9
    # = 0.009 + 0.026064 + 0.093085 + 0.035 = 0.163149 s (tensor by tensor, through one NIC: 0.820 s).
    hw = replace(hardware(plan("H100", 16)), sync_methods={"nccl_broadcast": NCCL, "nccl_packed": NCCL})
    packed, one_nic = shape(rollout_tp=1, sync_method="nccl_packed"), shape(rollout_tp=1)
    assert hw.inter_busbw_gb_s == 376.0 and rl.sync_path_gb_s(packed, hw) == 376.0
    expect = 0.009 + 7 / 8 * 14e9 / 470e9 + 14e9 / (376e9 * 0.4) + 14e9 / 400e9
    assert rl.sync_s(packed, hw) == pytest.approx(expect, rel=1e-12) and expect == pytest.approx(0.163149, rel=1e-5)
    assert rl.sync_s(one_nic, hw) == pytest.approx(expect + 0.005 - 14e9 / (376e9 * 0.4) + 14e9 / (47e9 * 0.4),
                                                   rel=1e-12)
    # An MoE's expert tensors travel inside the buffers: no transfer each. Qwen3-30B-A3B's 48 layers ×
    # 128 experts × 3 = 18,432 tensors cost the tensor-by-tensor broadcast 18.432 s of latency alone,
    # and its 61 GB take 61 buckets of 1 GB against ⌈61 / 1.718⌉ = 36 buffers: 25 ms more.
    kw = {"params_b": 30.5, "active_params_b": 3.3, "experts": 128, "experts_per_token": 8, "layers": 48,
          "rollout_tp": 2, "train_tp": 1, "train_pp": 1, "expert_parallel": 8}
    w = 61e9
    gap = rl.sync_s(shape(**kw), hw) - rl.sync_s(shape(**kw, sync_method="nccl_packed"), hw)
    assert moe.expert_tensors(3.3, 128, 48) == 18_432
    assert gap == pytest.approx(18_432 * 0.001 + 0.025 + w / (47e9 * 0.4) - w / (376e9 * 0.4), rel=1e-9)


def test_a_packed_refit_buffer_is_2_percent_of_the_gpus_memory_at_most_5_gib():
    # NeMo RL's get_target_packed_tensor_size: min(0.02 × total_memory, 5 × 1024**3) bytes, the
    # catalog's GB read as GiB. 80 GB: 0.02 × 80 × 1,073,741,824 = 1,717,986,918 B = 1.717987 GB;
    # 192 GB: 3.84 GiB = 4.123169 GB; 288 GB: 5.76 GiB, over the cap, 5 GiB = 5.368709 GB.
    assert weight_sync.packed_bucket_gb(80.0) == pytest.approx(1.717987, rel=1e-6)
    assert weight_sync.packed_bucket_gb(192.0) == pytest.approx(4.123169, rel=1e-6)
    assert weight_sync.packed_bucket_gb(288.0) == pytest.approx(5.368709, rel=1e-6)
    assert weight_sync.packed_bucket_gb(250.0) == weight_sync.packed_bucket_gb(288.0)  # 5.0 GiB exactly: the cap
    # Only the packed method takes it; the others keep the catalog's bucket.
    assert weight_sync.for_gpu("nccl_packed", NCCL, 80.0).bucket_gb == pytest.approx(1.717987, rel=1e-6)
    assert weight_sync.for_gpu("nccl_packed", NCCL, 80.0).latency_s == NCCL.latency_s
    for name in ("nccl_broadcast", "checkpoint_engine", "nixl"):
        assert weight_sync.for_gpu(name, NCCL, 80.0) == NCCL


def test_a_class_asks_for_a_packed_refit_and_gets_nccls_constants():
    from costsim.plan.hardware import shape as class_shape
    sc = Scenario.model_validate({"name": "x", "horizon_days": 1, "workload": {"classes": [
        {"name": "split", "arrivals_per_day": 1, "gpus": 16, "placement": "disaggregated", "rollout_gpu_fraction": 0.5,
         "iterations": {"mean": 10, "cv": 0.5}, "model_params_b": 7, "sync": {"method": "nccl_packed"}}]},
        "options": [{"name": "o", "kind": "owned", "gpu_type": "H100", "gpus": 16}]})
    hw = hardware(resolve(sc)[0])
    assert hw.sync_methods["nccl_packed"] == hw.sync_methods["nccl_broadcast"]
    sh = class_shape(sc.workload.classes[0])
    assert sh.sync_method == "nccl_packed" and rl.sync_path_gb_s(sh, hw) == hw.inter_busbw_gb_s == 376.0


def test_a_point_to_point_refit_across_nodes_pulls_at_each_gpus_nic():
    # NIXL, 7B bf16 from 8 trainers to 4 replicas of TP 2 on another H800 node: each receiver pulls
    # its 7 GB shard at 47 GB/s, 0.148936 s, the senders 4 × 14e9 / (8 × 47e9) = 0.148936 s too;
    # at 0.6 of the link: 0.248227 s; 7 buckets × 0.5 ms; reload 7e9 / 400e9.
    nixl = weight_sync.SyncMethod(latency_s=0.0005, efficiency=0.6, bucket_gb=1.0, reload_gb_s=400.0)
    hw = replace(hardware(plan("H800", 16)), sync_methods={"nixl": nixl})
    got = rl.sync_s(shape(rollout_tp=2, sync_method="nixl"), hw)
    assert got == pytest.approx(7 * 0.0005 + 7e9 / 47e9 / 0.6 + 7e9 / 400e9, rel=1e-12)


def test_an_all_to_all_across_nodes_runs_at_each_gpus_nic_inside_nvlink_at_nvlink():
    # Qwen3-30B-A3B-like (30B, 3B active, 128 experts, top 8), 32 training GPUs at TP 2 (no FSDP
    # gathers; forward only, so no gradient all-reduce) and EP 16; no micro-batch cost. A log-prob
    # pass is its compute plus two all-to-alls a MoE layer: 1e6 tokens / 32 GPUs a GPU, each token
    # 2 × 8 × L·h × 2 B × 15/16 over the wire. On H100 (8-GPU domains) the EP group crosses nodes:
    # each GPU's NIC, 47 GB/s; on GB200 (a 72-GPU domain) it stays on NVLink, 850 GB/s.
    tokens = np.array([1e6])
    sh = shape(params_b=30.0, active_params_b=3.0, experts=128, experts_per_token=8, gpus=32, rollout_gpus=32,
               train_gpus=32, disaggregated=False, train_tp=2, train_pp=1, expert_parallel=16)
    per_token = 2 * 8 * moe.layers_times_hidden(3.0) * 2.0 * 15 / 16
    for gpu, link in (("H100", 47.0), ("GB200", 850.0)):
        hw = replace(hardware(plan(gpu, 32)), microbatch_s=0.0)
        compute = 2 * 3e9 * 1e6 / (32 * hw.bf16_dense_tflops * 1e12 * 0.35)
        got = rl.logprobs_s(sh, rl.layout(sh, hw), tokens, hw)[0]
        assert got == pytest.approx(compute + 1e6 / 32 * per_token / (link * 1e9), rel=1e-12), gpu


def test_a_gb200_node_is_a_four_gpu_tray_its_nvlink_domain_the_rack():
    # Allocation and failures: 144 GPUs are 36 nodes of 4; a 6-GPU job holds two whole nodes (8);
    # a node failure takes out 4 GPUs' jobs, not 72. Capex per GPU is the rack's over 72 GPUs as before
    # (a tray's $188,889 over its 4).
    p = plan("GB200", 144)
    assert (p.gpus_per_node, p.nodes) == (4, 36)
    assert p.held_gpus(np.array([3, 4, 6, 72])).tolist() == [3, 4, 8, 72]
    assert default_catalog().gpus["GB200"].server_price_usd / 4 == pytest.approx(3.4e6 / 72, rel=1e-4)
    # The model sees the rack: tensor parallel 16 trains inside it, where on H100 it spans two domains.
    hw = hardware(p)
    assert hw.nvlink_gpus == 72
    big = shape(params_b=405.0, gpus=64, rollout_gpus=64, train_gpus=64, disaggregated=False, train_tp=16,
                train_pp=1, rollout_tp=16)
    assert rl.fit_problem(big, hw) is None
    assert "spans more than one 8-GPU NVLink domain" in rl.fit_problem(big, hardware(plan("H100", 64)))
    # A rented GB200 instance of 4 GPUs (Azure ND GB200 v6) reaches the rack's domain too.
    assert hardware(plan("GB200", 0, kind="cloud")).nvlink_gpus == 72


def test_a_refit_inside_an_nvl72_rack_stays_on_nvlink_beyond_it_the_nics():
    # 32 trainers → 32 rollout GPUs: 64 GPUs, one rack: NVLink. 64 → 64: 128 GPUs, two racks: one
    # GPU's NIC. On H100 even 8 → 8 leaves the node.
    gb200 = hardware(plan("GB200", 144))
    inside = shape(gpus=64, rollout_gpus=32, train_gpus=32)
    across = shape(gpus=128, rollout_gpus=64, train_gpus=64)
    assert rl.refit_inside_nvlink(inside, gb200) and rl.sync_path_gb_s(inside, gb200) == 850.0
    assert not rl.refit_inside_nvlink(across, gb200) and rl.sync_path_gb_s(across, gb200) == 47.0
    assert rl.sync_path_gb_s(shape(), hardware(plan("H100", 16))) == 47.0


def test_an_update_sends_the_all_to_alls_forward_and_their_gradients_backward():
    # Two all-to-alls a MoE layer in the forward pass and two in the backward: the update's all-to-all
    # time is twice a log-prob pass's over the same tokens (docs/model.md).
    tokens = np.array([1e6])
    sh = shape(params_b=30.0, active_params_b=3.0, experts=128, experts_per_token=8, gpus=32, rollout_gpus=32,
               train_gpus=32, disaggregated=False, train_tp=2, train_pp=1, expert_parallel=16)
    hw = hardware(plan("H100", 32))
    no_ep = replace(sh, expert_parallel=1)
    lay, lay1 = rl.layout(sh, hw), rl.layout(no_ep, hw)
    forward = rl.logprobs_s(sh, lay, tokens, hw)[0] - rl.logprobs_s(no_ep, lay1, tokens, hw)[0]
    update = rl.update_s(sh, lay, tokens, hw)[0] - rl.update_s(no_ep, lay1, tokens, hw)[0]
    per_token = 2 * 8 * moe.layers_times_hidden(3.0) * 2.0 * 15 / 16
    assert forward == pytest.approx(1e6 / 32 * per_token / 47e9, rel=1e-9)
    assert update == pytest.approx(2 * forward, rel=1e-9)
