"""The structure that carries the v3 validation rows, against hand calculations: the rank holding an
optimizer step's longest sequence, micro-batches as wide as the model-parallel group, refits point
to point, and one-step off-policy pipelining (DESIGN.md section 3, "RL iteration time, v3")."""

import math
from dataclasses import replace
from statistics import NormalDist

import numpy as np
import pytest
from helpers import rl_shape

from costsim.models import rl, training, weight_sync

H100 = rl.Hardware(bf16_dense_tflops=989.0, hbm_tb_s=3.35, memory_gb=80.0, nvlink_gpus=8, nvlink_busbw_gb_s=470.0,
                   inter_busbw_gb_s=376.0, nic_gb_s=47.0, mem_efficiency=0.4, step_floor_s=0.01, kv_memory_fraction=0.8,
                   verifier_workers=8, optimizer_step_s=0.0, microbatch_s=0.05, microbatch_tokens=16384.0)
NIXL = weight_sync.SyncMethod(latency_s=0.0005, efficiency=0.6, bucket_gb=1.0, reload_gb_s=400.0)


def shape(**kw) -> rl.Shape:
    return rl_shape(**{"gpus": 128, "rollout_gpus": 128, "train_gpus": 128, "samples": 512, "prompt_tokens": 200.0,
                       "minibatches": 16, **kw})


def test_longest_per_step_by_hand():
    # 512 responses of mean 1,000 and cv 1 (Σ L² = 512 × 1,000² × (1 + 1)), 16 optimizer steps of 32:
    # σ² = ln 2, the quantile 1 − 1/33 of the lognormal: exp(ln 1,000 − ln 2 / 2 + √(ln 2) · z),
    # z = Φ⁻¹(32/33) ≈ 1.876, about 3,372 tokens; never more than the iteration's longest.
    z = NormalDist().inv_cdf(1 - 1 / 33)
    expect = math.exp(math.log(1000) - math.log(2) / 2 + math.sqrt(math.log(2)) * z)
    got = training.longest_per_step(np.array([512e3]), np.array([512 * 2e6]), np.array([20_000.0]), 512, 16)
    assert got[0] == pytest.approx(expect, rel=1e-12) and 3300 < expect < 3450
    capped = training.longest_per_step(np.array([512e3]), np.array([512 * 2e6]), np.array([2_000.0]), 512, 16)
    assert capped[0] == 2000.0
    # One step holds every response: its longest is the iteration's.
    assert training.longest_per_step(np.array([512e3]), np.array([512 * 2e6]), np.array([9e3]), 512, 1)[0] == 9e3


def test_imbalance_by_hand():
    # 5,000 tokens a rank a step beside an 8,000-token sequence: the rank holding it computes 1.6×.
    assert training.imbalance(np.array([5000.0, 20_000.0]), np.array([8000.0, 8000.0])).tolist() == [1.6, 1.0]


def test_the_update_bends_when_a_rank_holds_the_longest_sequence():
    # 7B on 128 GPUs (pure data parallel), 16 steps: tokens per rank a step 1,024,000 / (16 × 128) = 500;
    # a step's longest sequence of 1,500 tokens makes the compute 3× (1,500 / 500); on 32 GPUs
    # (2,000 a rank a step) nothing changes.
    tokens = np.array([1_024_000.0])
    for gpus, factor in ((128, 3.0), (32, 1.0)):
        sh = shape(gpus=gpus, rollout_gpus=gpus, train_gpus=gpus)
        lay = rl.layout(sh, H100)
        flat = rl.update_s(sh, lay, tokens, H100)[0]
        compute = 6 * 7e9 * 1_024_000 / (gpus * 989e12 * 0.35)
        bent = rl.update_s(sh, lay, tokens, H100, longest=np.array([1500.0]))[0]
        assert bent - flat == pytest.approx(compute * (factor - 1), rel=1e-9)


def test_a_microbatch_is_as_wide_as_the_model_parallel_group():
    # 32B on 32 GPUs at TP 4 × PP 4 (DP 2): a forward pass of 6.4M tokens packs 16 × 16,384 tokens a
    # micro-batch, ⌈6.4e6 / (2 × 262,144)⌉ = 13 micro-batches a rank, 13 × 0.05 s of fixed cost.
    sh = shape(params_b=32.0, gpus=32, rollout_gpus=32, train_gpus=32, train_tp=4, train_pp=4)
    lay = rl.layout(sh, H100)
    compute = 2 * 32e9 * 6.4e6 / (32 * 989e12 * 0.35)
    assert rl.logprobs_s(sh, lay, np.array([6.4e6]), H100)[0] == pytest.approx(compute + 13 * 0.05, rel=1e-12)


def test_point_to_point_refit_by_hand():
    # 671 GB (FP8) to one replica of 32 GPUs across nodes from 256 trainers, 47 GB/s each: every
    # receiver takes 671e9 / 32 = 20.97 GB, 0.446144 s at full rate (the senders 671e9 / (256 × 47e9)
    # = 0.0558 s, faster); at NIXL's 0.6: 0.743573 s; 21 buckets × 0.5 ms; reload 20.97e9 / 400e9.
    shard = 671e9 / 32
    expect = 21 * 0.0005 + shard / 47e9 / 0.6 + shard / 400e9
    got = weight_sync.point_to_point_s(671e9, link_gb_s=47.0, method=NIXL, rollout_tp=32, replicas=1, senders=256)
    assert got == pytest.approx(expect, rel=1e-12) and got == pytest.approx(0.80649, rel=1e-4)
    # Many replicas from few senders: the senders bind, 8 × 671e9 / (16 × 47e9) at 0.6.
    many = weight_sync.point_to_point_s(671e9, link_gb_s=47.0, method=NIXL, rollout_tp=32, replicas=8, senders=16)
    assert many == pytest.approx(21 * 0.0005 + 8 * 671e9 / (16 * 47e9) / 0.6 + shard / 400e9, rel=1e-12)


def test_checkpoint_engine_in_a_node_is_point_to_point_over_nvlink():
    # 7B bf16, 4 trainers → 4 rollout GPUs (one replica of TP 4) in one 8-GPU node: each rollout GPU
    # pulls 14e9 / 4 = 3.5 GB over NVLink: 4 buckets × 0.1 ms + 3.5e9 / (470e9 × 0.5) + 3.5e9 / 400e9.
    ce = weight_sync.SyncMethod(latency_s=0.0001, efficiency=0.5, bucket_gb=1.0, reload_gb_s=400.0)
    hw = replace(H100, sync_methods={"checkpoint_engine": ce})
    sh = shape(gpus=8, rollout_gpus=4, train_gpus=4, disaggregated=True, rollout_tp=4, sync_method="checkpoint_engine")
    assert rl.sync_s(sh, hw) == pytest.approx(4 * 0.0001 + 3.5e9 / (470e9 * 0.5) + 3.5e9 / 400e9, rel=1e-12)


def test_one_step_off_policy_overlaps_a_whole_batch_with_training():
    # Staleness 1 without partial rollout: the next batch is generated whole while this one trains,
    # so the iteration is at most max(the synchronous rollout, training) + sync, with no re-prefill.
    d = (np.full(3, 512 * 1000.0), np.full(3, 4000.0), np.full(3, 512 * 1000.0 ** 2 * 2))
    split = dict(gpus=16, rollout_gpus=8, train_gpus=8, disaggregated=True)
    sync = rl.phase_times(shape(**split), H100, *d)
    off = rl.phase_times(shape(**split, asynchronous=True, staleness=1), H100, *d)
    bound = np.maximum(sync.rollout, sync.logprobs + sync.scoring + sync.update) + sync.sync
    assert (off.total <= bound * (1 + 1e-12)).all()


def test_the_longest_sequence_term_in_the_phase_times_by_hand():
    # 7B on 128 GPUs (pure data parallel), 512 samples of 200-token prompts, Σ L = 512,000, longest
    # 20,000: 614,400 tokens, 4,800 a rank, but the rank holding the longest sequence computes its
    # 20,200: the log-prob pass is stretched 20,200 / 4,800 = 4.2083×, the forward compute alone being
    # 2 × 7e9 × 614,400 / (128 × 989e12 × 0.35) = 0.194135 s.
    sh = shape(samples=512)
    d = (np.array([512_000.0]), np.array([20_000.0]), np.array([512 * 1000.0 ** 2 * 2]))
    lay = rl.layout(sh, H100)
    compute = 2 * 7e9 * 614_400 / (128 * 989e12 * 0.35)
    flat = rl.logprobs_s(sh, lay, np.array([614_400.0]), H100)[0]
    got = rl.phase_times(sh, H100, *d).logprobs[0]
    assert compute == pytest.approx(0.194135, rel=1e-5)
    assert got - flat == pytest.approx(compute * (20_200 / 4_800 - 1), rel=1e-9)
    # Where no response can outweigh a rank's share (16 GPUs: 38,400 tokens a rank), the term is skipped.
    few = shape(samples=512, gpus=16, rollout_gpus=16, train_gpus=16)
    lay16 = rl.layout(few, H100)
    assert rl.phase_times(few, H100, *d).logprobs[0] == pytest.approx(
        rl.logprobs_s(few, lay16, np.array([614_400.0]), H100)[0], rel=1e-12)
