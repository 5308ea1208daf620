"""RL iteration time (costsim.rl, costsim.network) against hand calculations and the effects
public RL systems report. Hardware: H100 — 989 TFLOP/s bf16, 3.35 TB/s HBM, 8 GPUs per node,
NVLink busbw 470 GB/s, 8 × 47 GB/s NICs per node (47 GB/s per GPU across nodes)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from costsim import network, rl

H100 = rl.Hardware(bf16_dense_tflops=989.0, hbm_tb_s=3.35, gpus_per_node=8, nvlink_busbw_gb_s=470.0, inter_busbw_gb_s=47.0)
# 7B policy, 2,048 samples of exactly 2,000 tokens after 512-token prompts, 16 GPUs.
N, LP, L, P = 2048, 512, 2000.0, 7.0
T = N * (LP + L)  # 5,144,576 tokens scored and trained on
D = 25_000 * 3.35 / 7  # 11,964.29 decode tokens/s per GPU


def shape(**kw):
    base = dict(params_b=P, gpus=16, rollout_gpus=16, train_gpus=16, disaggregated=False, asynchronous=False,
                staleness=1, samples=N, prompt_tokens=LP, decode_tokens_per_s_per_gpu=None, sequence_tokens_per_s=60.0,
                reference_model=True, reward_model_params_b=None, verifier_seconds_per_sample=0.05, epochs=1,
                minibatches=4, mfu=0.35)
    return rl.Shape(**{**base, **kw})


def times(sh, len_sum=N * L, len_max=L):
    pt = rl.phase_times(sh, H100, np.array([len_sum]), np.array([len_max]))
    return {k: float(getattr(pt, k)[0]) for k in ("rollout", "scoring", "update", "sync", "total")}


def test_default_decode_rate_comes_from_the_catalog():
    # ≈ 12k tokens/s for a 7B model on an H100: the catalog's stated calibration, used by options.
    from costsim.catalog import default_catalog, resolve
    from costsim.scenario import Scenario
    from costsim.workplan import hardware

    coeff = default_catalog().rl["decode_tokens_per_s_per_tb_s_per_b"]
    assert rl.decode_tokens_per_s(3.35, 7, coeff) == pytest.approx(11_964.2857, rel=1e-6)
    sc = Scenario.model_validate({"name": "x", "horizon_days": 1, "workload": {"trace": "t.csv"},
                                  "options": [{"name": "o", "kind": "owned", "gpu_type": "H100", "gpus": 8}]})
    hw = hardware(resolve(sc)[0])
    assert (hw.decode_coeff, hw.verifier_workers) == (coeff, default_catalog().rl["verifier_workers_per_gpu"])
    assert (hw.bf16_dense_tflops, hw.hbm_tb_s, hw.nvlink_busbw_gb_s, hw.inter_busbw_gb_s) == (989.0, 3.35, 470.0, 47.0)


def test_colocated_sync_by_hand():
    t = times(shape())
    # rollout: max(4,096,000 / (16 × 11,964.29) = 21.397 s, 2,000 / 60 = 33.333 s): the straggler
    assert t["rollout"] == pytest.approx(2000 / 60)
    # scoring: reference 2 × 7e9 × T / (16 × 989e12 × 0.35) = 13.00449 s + verifier 2048 × 0.05 / (16 × 8) = 0.8 s
    assert t["scoring"] == pytest.approx(13.004489 + 0.8, rel=1e-7)
    # update: 6 × 7e9 × T / (16 × 989e12 × 0.35) = 39.01347 s + 4 × ring all-reduce of 14 GB over 16 GPUs
    # across nodes at 47 GB/s: 2 × 15/16 × 14e9 / 47e9 = 0.558511 s each
    assert t["update"] == pytest.approx(39.013468 + 4 * 0.5585106, rel=1e-7)
    assert t["sync"] == 0.0
    assert t["total"] == pytest.approx(2000 / 60 + 13.804489 + 41.247511, rel=1e-7)


def test_disaggregated_sync_by_hand():
    t = times(shape(rollout_gpus=8, train_gpus=8, disaggregated=True))
    # rollout on 8 GPUs: 4,096,000 / (8 × 11,964.29) = 42.794 s beats the 33.3 s straggler
    assert t["rollout"] == pytest.approx(42.794030, rel=1e-7)
    # scoring on the 8 training GPUs: 26.008979 + 2048 × 0.05 / 64 = 1.6
    assert t["scoring"] == pytest.approx(26.008979 + 1.6, rel=1e-7)
    # update on 8 GPUs in one node: 78.026936 s + 4 × 2 × 7/8 × 14e9 / 470e9 = 4 × 0.0521277 s over NVLink
    assert t["update"] == pytest.approx(78.026936 + 4 * 0.0521277, rel=1e-7)
    # weight sync: 14 GB at 47 GB/s
    assert t["sync"] == pytest.approx(14 / 47, rel=1e-9)
    assert t["total"] == pytest.approx(t["rollout"] + t["scoring"] + t["update"] + t["sync"])


def test_async_by_hand():
    t = times(shape(rollout_gpus=8, train_gpus=8, disaggregated=True, asynchronous=True, staleness=1))
    # rollout may span 2 iterations: max(42.794, 2000 / 120 = 16.7); overlapped with scoring + update
    assert t["rollout"] == pytest.approx(42.794030, rel=1e-7)
    assert t["total"] == pytest.approx(max(42.794030, 27.608979 + 78.235447) + 14 / 47, rel=1e-7)


def test_reward_model_replaces_the_verifier():
    t = times(shape(reward_model_params_b=70.0, reference_model=False))
    # one 70B forward pass over T tokens: 2 × 70e9 × T / (16 × 989e12 × 0.35) = 130.04489 s
    assert t["scoring"] == pytest.approx(130.044894, rel=1e-7)


def test_straggler_raises_sync_rollout_at_the_same_mean():
    from costsim.sampling import length_draws

    rng = np.random.default_rng(0)
    means = []
    for cv in (0.0, 0.5, 1.0, 2.0):
        s, m, _ = length_draws(rng, N, 2000, cv, 16384, 400)
        means.append(float(rl.phase_times(shape(), H100, s, m).rollout.mean()))
    assert means == sorted(means) and means[-1] > 5 * means[0]


def heavy_tailed(sh, iterations=400, seed=1):
    from costsim.sampling import length_draws

    s, m, _ = length_draws(np.random.default_rng(seed), N, 2000, 1.0, 16384, iterations)
    return rl.phase_times(sh, H100, s, m)


def test_async_speedup_in_reported_range():
    # DESIGN defaults (7B, 2,000-token mean responses with cv 1, 16k cap) on 16 GPUs.
    sync_col = heavy_tailed(shape()).total.mean()
    sync_dis = heavy_tailed(shape(rollout_gpus=8, train_gpus=8, disaggregated=True)).total.mean()
    asyn = heavy_tailed(shape(rollout_gpus=8, train_gpus=8, disaggregated=True, asynchronous=True)).total.mean()
    assert 1.5 <= sync_col / asyn <= 3.0 and 1.5 <= sync_dis / asyn <= 3.0


@given(st.floats(0, 1), st.integers(1, 4), st.floats(1e5, 1e8), st.floats(10, 16384))
def test_async_never_slower_than_sync(frac, staleness, len_sum, len_max):
    sh = dict(rollout_gpus=8, train_gpus=8, disaggregated=True, staleness=staleness)
    s = times(shape(**sh), len_sum, len_max)["total"]
    a = times(shape(**sh, asynchronous=True), len_sum, len_max)["total"]
    assert a <= s + 1e-9


def test_generation_share_of_long_reasoning_defaults():
    pt = heavy_tailed(shape())
    share = pt.rollout.mean() / pt.total.mean()
    assert 0.6 <= share <= 0.9  # public RL systems: 60–90 % of step time in generation


def test_allreduce_nvlink_inside_a_node_fabric_across():
    nbytes = 14e9
    inside = network.ring_allreduce_s(nbytes, 8, network.allreduce_busbw_gb_s(8, 8, 470, 47))
    across = network.ring_allreduce_s(nbytes, 16, network.allreduce_busbw_gb_s(16, 8, 470, 47))
    assert inside == pytest.approx(2 * 7 / 8 * 14 / 470)
    assert across == pytest.approx(2 * 15 / 16 * 14 / 47)
    assert network.ring_allreduce_s(nbytes, 1, 470) == 0.0


def test_roce_is_slower_by_its_efficiency():
    ib = network.inter_node_busbw_gb_s(8, 47, 8, 1.0)
    roce = network.inter_node_busbw_gb_s(8, 47, 8, 0.92)
    t_ib = network.ring_allreduce_s(140e9, 64, ib)
    t_roce = network.ring_allreduce_s(140e9, 64, roce)
    assert t_roce / t_ib == pytest.approx(1 / 0.92)


def test_doubling_gpus_shortens_update_by_less_than_half():
    hw = H100
    for g in (16, 32, 64):
        one = rl.update_s(70, T, g, hw, 1, 16, 0.35)
        two = rl.update_s(70, T, 2 * g, hw, 1, 16, 0.35)
        assert one / 2 < two < one  # compute halves, the all-reduce does not


@given(st.floats(1e4, 1e8), st.floats(1, 16384), st.floats(1, 400), st.sampled_from([1, 8, 16, 64]))
def test_iteration_time_properties(len_sum, len_max, params, gpus):
    sh = shape(params_b=params, gpus=gpus, rollout_gpus=gpus, train_gpus=gpus)
    t = times(sh, len_sum, len_max)
    assert t["total"] > 0
    assert t["rollout"] >= len_sum / (gpus * rl.decode_tokens_per_s(3.35, params)) * (1 - 1e-12)  # throughput bound
    assert times(sh, len_sum * 1.5, len_max)["total"] >= t["total"]
    assert times(sh, len_sum, len_max * 1.5)["total"] >= t["total"]
    assert times(shape(params_b=params * 1.5, gpus=gpus, rollout_gpus=gpus, train_gpus=gpus), len_sum, len_max)["total"] >= t["total"]
