"""The RL model v3's new terms, each against a hand calculation (DESIGN.md section 3, "RL
iteration time, v3"): prefill, the training passes' fixed costs, weight sync, MoE compute and
all-to-all, FP8, engine constants and memory fraction."""

from dataclasses import fields, replace

import numpy as np
import pytest
from helpers import rl_shape

from costsim.models import moe, prefill, rl, training, weight_sync
from costsim.plan.hardware import engines

H100 = rl.Hardware(bf16_dense_tflops=989.0, hbm_tb_s=3.35, memory_gb=80.0, nvlink_gpus=8, nvlink_busbw_gb_s=470.0,
                   inter_busbw_gb_s=376.0, nic_gb_s=47.0, mem_efficiency=0.4, step_floor_s=0.01, kv_memory_fraction=0.8,
                   verifier_workers=8, fp8_dense_tflops=1979.0, engines={"sglang": (0.5, 0.008)},
                   optimizer_step_s=2.0, microbatch_s=0.05, microbatch_tokens=16384.0)


def shape(**kw) -> rl.Shape:
    return rl_shape(**{"mfu": 0.4, **kw})


def test_prefill_by_hand():
    # 2 × 7e9 × 1,024 × 500 tokens / (16 × 989e12 × 0.5) = 7.168e15 / 7.912e15 = 0.905966 s.
    assert float(prefill.prefill_s(7.0, 1024 * 500, 16, 989.0, 0.5)) == pytest.approx(0.9059656, rel=1e-6)
    assert prefill.rollout_prefill_tokens(1024, 500.0) == 512_000.0


def test_sync_rollout_includes_the_prompts_prefill():
    sh = shape()
    lengths = (np.array([1024 * 800.0]), np.array([2000.0]), np.array([1024 * 800.0 ** 2 * 1.5]))
    with_prompts = rl.phase_times(sh, H100, *lengths).rollout[0]
    without = rl.phase_times(replace(sh, prompt_tokens=0.0), replace(H100, prefill_mfu=1e9), *lengths).rollout[0]
    assert with_prompts > without


def test_training_fixed_costs_by_hand():
    # 4 steps; 3.2e6 tokens over 4 steps × 16 ranks = 50,000 tokens a rank a step → ⌈50,000 / 16,384⌉ = 4
    # micro-batches; fixed = 4 × 2.0 + 4 × 4 × 0.05 = 8.8 s.
    micro = training.microbatches_per_step(np.array([3.2e6]), 4, 16, 16384.0)
    assert micro[0] == 4.0
    assert float(training.fixed_s(4, micro, 2.0, 0.05)[0]) == pytest.approx(8.8)
    assert training.microbatches_per_step(np.array([10.0]), 4, 16, 16384.0)[0] == 1.0  # at least one
    # FSDP: 15/16 × 14e9 / 376e9 = 0.0349069 s a collective; 3 a micro-batch with backward, 1 without.
    assert float(training.fsdp_traffic_s(14e9, 16, 376.0, 2, backward=True)) == pytest.approx(6 * 0.03490692, rel=1e-6)
    assert float(training.fsdp_traffic_s(14e9, 16, 376.0, 2, backward=False)) == pytest.approx(2 * 0.03490692, rel=1e-6)
    assert training.sharded_gather_s(14e9, 1, 376.0) == 0.0


def test_update_strong_scaling_bends():
    # Four times the GPUs give less than four times the speed once fixed costs are counted.
    tokens = np.array([1e7])
    small, big = shape(gpus=32, rollout_gpus=32, train_gpus=32), shape(gpus=128, rollout_gpus=128, train_gpus=128)
    t32 = rl.update_s(small, rl.layout(small, H100), tokens, H100)[0]
    t128 = rl.update_s(big, rl.layout(big, H100), tokens, H100)[0]
    assert 1.0 < t32 / t128 < 4.0


def test_weight_sync_by_hand():
    # 14e9 B: 14 buckets × 1 ms + gather 2 s + 14e9 / (47e9 × 0.4) + 14e9 / 2 / 400e9.
    m = weight_sync.SyncMethod(latency_s=0.001, efficiency=0.4, bucket_gb=1.0, reload_gb_s=400.0)
    got = weight_sync.weight_sync_s(14e9, path_gb_s=47.0, method=m, gather=2.0, rollout_tp=2)
    assert got == pytest.approx(0.014 + 2.0 + 14 / 18.8 + 0.0175, rel=1e-9)
    assert weight_sync.transfers(14e9, 1.0, expert_tensors=100) == 114
    assert weight_sync.gather_s(8e9, 4, 400.0) == pytest.approx(0.75 * 8e9 / 400e9)
    assert weight_sync.gather_s(8e9, 1, 400.0) == 0.0


def test_checkpoint_engine_never_slower_than_nccl_in_the_catalog():
    from costsim.catalog.load import default_catalog
    consts = default_catalog().rl
    nccl = weight_sync.method_from_constants("nccl_broadcast", consts)
    ce = weight_sync.method_from_constants("checkpoint_engine", consts)
    assert ce.latency_s <= nccl.latency_s and ce.efficiency >= nccl.efficiency
    for w, path, tensors in ((1e9, 47.0, 0), (61e9, 47.0, 13_000), (470e9, 470.0, 25_000)):
        assert (weight_sync.weight_sync_s(w, path_gb_s=path, method=ce, expert_tensors=tensors)
                <= weight_sync.weight_sync_s(w, path_gb_s=path, method=nccl, expert_tensors=tensors))


def test_moe_terms_by_hand():
    # P = 12 L h², h = 80 L: 3.3e9 → h = (3.3e9 × 80 / 12)^(1/3) = 2,802; L·h = h² / 80 = 98,140.
    assert moe.layers_times_hidden(3.3) == pytest.approx(98_140, rel=1e-3)
    # 30B, 3B active, 128 experts, top-8: per expert (30 − 3) / 120 = 0.225B, shared 3 − 8 × 0.225 = 1.2B.
    assert float(moe.decode_weight_params_b(30.0, 3.0, 128, 8, 1.0)) == pytest.approx(1.2 + 0.225 * 8, rel=1e-9)
    touched = 128 * (1 - (1 - 8 / 128) ** 64)
    assert float(moe.decode_weight_params_b(30.0, 3.0, 128, 8, 64.0)) == pytest.approx(1.2 + 0.225 * touched)
    assert float(moe.decode_weight_params_b(7.0, 7.0, 0, 0, 64.0)) == 7.0  # dense
    # All-to-all: 1,000 tokens × 2 × 8 × L·h × 2 B × 7/8 per pass, 3 passes, at 470 GB/s.
    lh = moe.layers_times_hidden(3.0)
    want = 3 * 1000 * 2 * 8 * lh * 2 * 7 / 8 / 470e9
    assert float(moe.alltoall_s(1000.0, 3.0, 8, 8, 2.0, 470.0, 3.0)) == pytest.approx(want)
    assert float(moe.alltoall_s(1000.0, 3.0, 8, 1, 2.0, 470.0, 3.0)) == 0.0


def test_moe_with_active_equal_total_is_the_dense_model():
    lengths = (np.array([1024 * 800.0]), np.array([4000.0]), np.array([1024 * 800.0 ** 2 * 1.5]))
    dense = rl.phase_times(shape(), H100, *lengths)
    same = rl.phase_times(shape(active_params_b=7.0, experts=64, experts_per_token=8), H100, *lengths)
    for f in fields(dense):
        np.testing.assert_allclose(getattr(dense, f.name), getattr(same, f.name))


def test_moe_computes_with_active_parameters():
    lengths = (np.array([1024 * 800.0]), np.array([4000.0]), np.array([1024 * 800.0 ** 2 * 1.5]))
    dense = rl.phase_times(shape(params_b=30.0, train_tp=1, train_pp=1), H100, *lengths)
    sparse = rl.phase_times(shape(params_b=30.0, active_params_b=3.0, experts=128, experts_per_token=8, train_tp=1,
                                  train_pp=1), H100, *lengths)
    assert sparse.logprobs[0] < dense.logprobs[0] and sparse.rollout[0] < dense.rollout[0]


def test_fp8_by_hand_and_never_slower():
    assert H100.tflops("fp8") == 1979.0 and H100.tflops("bf16") == 989.0
    assert replace(H100, fp8_dense_tflops=0.0).tflops("fp8") == 989.0  # no FP8 tensor cores
    sh = shape()
    assert replace(sh, rollout_precision="fp8").rollout_bytes_per_param == 1.0
    lengths = (np.array([1024 * 800.0]), np.array([4000.0]), np.array([1024 * 800.0 ** 2 * 1.5]))
    bf16 = rl.phase_times(sh, H100, *lengths)
    fp8 = rl.phase_times(replace(sh, rollout_precision="fp8", train_precision="fp8"), H100, *lengths)
    assert fp8.rollout[0] <= bf16.rollout[0] and fp8.update[0] < bf16.update[0]


def test_engine_constants_and_memory_fraction():
    hw = H100.for_engine("sglang", 0.5)
    assert (hw.mem_efficiency, hw.step_floor_s, hw.kv_memory_fraction) == (0.5, 0.008, 0.5)
    assert H100.for_engine("vllm").mem_efficiency == 0.4  # not in engines: the hardware's own
    assert engines({"hbm_efficiency": 0.4, "decode_step_floor_s": 0.01, "sglang_hbm_efficiency": 0.5,
                    "sglang_decode_step_floor_s": 0.008}) == {"vllm": (0.4, 0.01), "sglang": (0.5, 0.008)}
    # A smaller memory fraction holds fewer sequences: never a faster rollout.
    lengths = (np.array([8192 * 3000.0]), np.array([16000.0]), np.array([8192 * 3000.0 ** 2 * 2]))
    sh = shape(samples=8192, rollout_gpus=8, gpus=8, train_gpus=8)
    big = rl.phase_times(replace(sh, memory_fraction=0.9), H100, *lengths).rollout[0]
    small = rl.phase_times(replace(sh, memory_fraction=0.4), H100, *lengths).rollout[0]
    assert small >= big


def test_the_memory_fraction_sets_the_kv_capacity_by_hand():
    # 7B bf16 on TP 1, 57,344 B of KV a token: (80e9 × 0.8 − 14e9) / 57,344 = 871,931 tokens; at
    # the engine's 0.3, (24e9 − 14e9) / 57,344 = 174,386. The layout reads the class's engine
    # whoever asks (the fit check and the refit too, not only the phase times).
    sh = shape(rollout_tp=1, kv_bytes_per_token=57_344.0)
    assert rl.layout(sh, H100).kv_capacity_tokens == pytest.approx((64e9 - 14e9) / 57_344)
    assert rl.layout(replace(sh, memory_fraction=0.3), H100).kv_capacity_tokens == pytest.approx(10e9 / 57_344)


def test_a_memory_fraction_too_small_for_the_weights_is_refused_not_fast():
    # 0.15 × 80 GB = 12 GB beside 14 GB of weights: the fit check says why, and the phase times
    # refuse to time it (a negative KV capacity once came out as a rollout ~9× too fast).
    lengths = (np.array([1024 * 800.0]), np.array([4000.0]), np.array([1024 * 800.0 ** 2 * 1.5]))
    tight = shape(rollout_tp=1, memory_fraction=0.15)
    why = rl.fit_problem(tight, H100)
    assert why is not None and "memory fraction 0.15" in why and "raise rollout.memory_fraction" in why
    assert rl.fit_problem(shape(rollout_tp=1), H100) is None  # the catalog's 0.8: 50 GB of KV cache
    with pytest.raises(ValueError, match="no rollout fits: .*memory fraction 0.15"):
        rl.phase_times(tight, H100, *lengths)
    # Just above the weights the rollout is slower than with the catalog's share, never faster.
    roomy = rl.phase_times(shape(rollout_tp=1), H100, *lengths).rollout[0]
    barely = rl.phase_times(shape(rollout_tp=1, memory_fraction=0.19), H100, *lengths).rollout[0]
    assert barely > roomy


def test_partial_rollout_never_slows_async_and_fractional_staleness():
    lengths = (np.array([1024 * 2000.0] * 2), np.array([30000.0] * 2), np.array([1024 * 2000.0 ** 2 * 3] * 2))
    sh = shape(gpus=16, rollout_gpus=8, train_gpus=8, disaggregated=True, asynchronous=True, staleness=0.5)
    plain = rl.phase_times(sh, H100, *lengths).total
    partial = rl.phase_times(replace(sh, partial_rollout=True), H100, *lengths).total
    assert np.all(partial <= plain * (1 + 1e-12))
    more = rl.phase_times(replace(sh, staleness=1.5), H100, *lengths).total
    assert np.all(more <= plain * (1 + 1e-12))


def test_moe_layers_from_the_config_by_hand():
    # With its layers, L · h = √(P · L / 12): Qwen3-30B-A3B (3.3B active, 48 layers) √(3.3e9 × 48 / 12)
    # = 114,891; DeepSeek-V3 (37B, 61) 433,686. Without, h = 80 L: L = (P / (12 × 80²))^(1/3) = 35.03.
    assert moe.layers_times_hidden(3.3, 48) == pytest.approx(114_891.25, rel=1e-6)
    assert moe.layers_times_hidden(37.0, 61) == pytest.approx(433_685.75, rel=1e-6)
    assert moe.layer_count(3.3) == pytest.approx((3.3e9 / (12 * 6400)) ** (1 / 3))
    assert moe.layers_times_hidden(3.3) == pytest.approx(80 * moe.layer_count(3.3) ** 2)  # h = 80 L
    # Expert tensors, 3 a routed expert a layer: DeepSeek-V3 3 × 256 × 61 = 46,848 (NeMo RL counts 45,395
    # tensors a vLLM rank loads); estimated from 37B active alone, 3 × 256 × 78.4 = 60,206.
    assert moe.expert_tensors(37.0, 256, 61) == 46_848
    assert moe.expert_tensors(37.0, 256) == 60_206
    assert moe.expert_tensors(7.0, 0, 28) == 0


def test_an_moe_rank_holds_its_share_of_the_experts_by_hand():
    # DeepSeek-V3: one expert (671 − 37) / (256 − 8) = 2.5565B, shared 37 − 8 × 2.5565 = 16.548B. At TP 1 ×
    # PP 16 with EP 16 a rank holds (16.548 + 256 × 2.5565 / 16) / 16 = 3.591B; without EP 671 / 16 = 41.9B.
    shared, one = moe.expert_split_b(671.0, 37.0, 256, 8)
    assert one == pytest.approx(634 / 248) and shared == pytest.approx(37 - 8 * 634 / 248)
    assert moe.rank_params_b(671.0, 37.0, 256, 8, 16, 16) == pytest.approx((shared + 256 * one / 16) / 16)
    assert moe.rank_params_b(671.0, 37.0, 256, 8, 16, 1) == pytest.approx(671 / 16)
    assert moe.rank_params_b(7.0, 7.0, 0, 0, 2, 8) == 3.5  # dense: EP holds nothing apart
    # The fit check counts it: 4 B × 3.591B + 12 B × 671B / 256 = 45.8 GB a GPU fits 80 GB; 4 × 41.9B alone would not.
    big = shape(params_b=671.0, active_params_b=37.0, experts=256, experts_per_token=8, layers=61, gpus=256,
                rollout_gpus=256, train_gpus=256, train_tp=1, train_pp=16, expert_parallel=16, rollout_tp=32)
    assert rl.fit_problem(big, H100) is None
    assert "needs 199 GB per GPU" in rl.fit_problem(replace(big, expert_parallel=1), H100)


def test_a_point_to_point_refit_loads_every_expert_tensor_on_every_receiver():
    # DeepSeek-V3 BF16 to one TP-32 replica, NIXL at the checkpoint engine's 0.1 ms and 0.5: each of the
    # 32 receivers pulls 1,342e9 / 32 = 41.94 GB at 47 GB/s (the 256 senders are faster) and loads its
    # slice of all 46,848 expert tensors: 42 buckets + 46,848 tensors × 0.1 ms + 41.94e9 / (47e9 × 0.5)
    # + 41.94e9 / 400e9 = 0.0042 + 4.6848 + 1.784681 + 0.104844 = 6.5785 s (NeMo RL measures 9.25 s).
    ce = weight_sync.SyncMethod(latency_s=0.0001, efficiency=0.5, bucket_gb=1.0, reload_gb_s=400.0)
    shard = 1342e9 / 32
    got = weight_sync.point_to_point_s(1342e9, link_gb_s=47.0, method=ce, rollout_tp=32, replicas=1, senders=256,
                                       expert_tensors=46_848)
    assert got == pytest.approx((42 + 46_848) * 0.0001 + shard / (47e9 * 0.5) + shard / 400e9, rel=1e-12)
    assert got == pytest.approx(6.5785, rel=1e-4)


def test_an_moe_kv_default_comes_from_moe_attention_configs():
    # Qwen3-30B-A3B: 2 × 48 layers × 4 KV heads × 128 × 2 B = 98,304 B a token, where its 3.3B active
    # parameters in the dense table would give ~37k; DeepSeek-V3's MLA latent 61 × 576 × 2 = 70,272.
    assert rl.default_kv_bytes_per_token(30.5, moe=True) == pytest.approx(98_304, rel=1e-12)
    assert rl.default_kv_bytes_per_token(671.0, moe=True) == pytest.approx(70_272, rel=1e-12)
    assert rl.default_kv_bytes_per_token(3.3) < 40_000
    sh = shape(params_b=30.5, active_params_b=3.3, experts=128, experts_per_token=8)
    assert rl.layout(sh, H100).kv_bytes_per_token == pytest.approx(98_304, rel=1e-12)
    # Between references, log-log: √(30.5 × 117) = 59.7B lies half way, √(98,304 × 73,728) = 85,133.
    assert rl.default_kv_bytes_per_token((30.5 * 117.0) ** 0.5, moe=True) == pytest.approx((98_304 * 73_728) ** 0.5)


def test_a_replica_across_nodes_pays_its_all_reduces_every_decode_step():
    # A decode step: the floor, or memory (or compute) plus the all-reduces across nodes, whichever is
    # longer. 14e9 B at 3.35e12 × 0.4: 10.4478 ms, + 5 ms = 15.4478 ms; 1e9 B: 0.746 + 5 ms < the 10 ms floor.
    assert float(rl.decode_step_s(14e9, 0.0, 1, 1, H100, 1.4e10, 0.4, 0.005)) == pytest.approx(
        14e9 / (3.35e12 * 0.4) + 0.005, rel=1e-12)
    assert float(rl.decode_step_s(1e9, 0.0, 1, 1, H100, 1.4e10, 0.4, 0.005)) == 0.01
    # 70B of 80 layers (P = 12 L h²: h = √(70e9 / 960) = 8,539.1), TP 16 on 8-GPU nodes: a lone token's
    # step all-reduces 160 times at 25.2 µs + 2 × 15/16 × 8,539.1 × 2 B / 376e9 (each GPU's NIC, 8 a node).
    hw = replace(H100, tp_allreduce_latency_s=25.2e-6, tp_allreduce_doubling_s=10e-6)
    sh = shape(params_b=70.0, gpus=32, rollout_gpus=32, train_gpus=32, rollout_tp=16, layers=80)
    lay = rl.layout(sh, hw)
    h = (70e9 / (12 * 80)) ** 0.5
    assert h == pytest.approx(8539.1, rel=1e-5)
    want = 160 * (25.2e-6 + 2 * 15 / 16 * h * 2 / 376e9)
    assert float(rl.tp_comm_s(sh, lay, hw, 1.0)) == pytest.approx(want, rel=1e-9)
    # Inside a node nothing is charged, and the same class inside one is as fast as without the constants.
    eight = replace(sh, rollout_tp=8)
    assert float(rl.tp_comm_s(eight, rl.layout(eight, hw), hw, 64.0)) == 0.0
    lengths = (np.array([256 * 800.0]), np.array([4000.0]), np.array([256 * 800.0 ** 2 * 1.5]))
    same = replace(eight, samples=256)
    assert rl.phase_times(same, hw, *lengths).total[0] == rl.phase_times(same, H100, *lengths).total[0]
    # Across nodes, where the drain binds, a lone token reads 140e9 B on all 16 GPUs at once (6.530 ms) and
    # all-reduces (4.046 ms): 10.575 ms, above the 10 ms floor that paces it without the latencies (6.544 ms
    # of reads and bytes), so the rollout is slower by at least 0.575 ms over each of the longest
    # response's 4,000 tokens, 2.30 s.
    wide = replace(sh, samples=256)
    slower = rl.phase_times(wide, hw, *lengths).rollout[0] - rl.phase_times(wide, H100, *lengths).rollout[0]
    lone = 140e9 / (16 * 3.35e12 * 0.4) + want
    assert lone == pytest.approx(10.575e-3, rel=1e-4)
    assert slower >= 4000 * (lone - 0.01) * (1 - 1e-9)
