"""RL iteration model (costsim.models.rl, v3 terms included) against hand calculations written out here.

Hardware: H100 — 989 TFLOP/s bf16 dense, 3.35 TB/s HBM, 80 GB, 8 GPUs per node, NVLink busbw
470 GB/s, fabric busbw 8 × 47 = 376 GB/s per node (InfiniBand); decode at η_mem = 0.55 of HBM
(1.8425e12 B/s per GPU) with a step floor of 8 ms; 80 % of HBM for weights + KV (64 GB per GPU).
These constants are fixed here (not read from the catalog) so every figure below is a hand
calculation; ``test_hardware_comes_from_the_catalog`` checks the catalog feeds the same fields.
A 7B bf16 model: W = 14e9 bytes, kv = 57,344 bytes per token (Qwen2.5-7B).
"""

import numpy as np
import pytest

from costsim.models import rl
from costsim.models.sampling import length_draws

H100 = rl.Hardware(bf16_dense_tflops=989.0, hbm_tb_s=3.35, memory_gb=80.0, nvlink_gpus=8, nvlink_busbw_gb_s=470.0,
                   inter_busbw_gb_s=376.0, nic_gb_s=47.0, mem_efficiency=0.55, step_floor_s=0.008, kv_memory_fraction=0.8,
                   verifier_workers=8)
ETA_B = 3.35e12 * 0.55  # 1.8425e12 bytes/s of HBM a decode step reads per GPU
FLOPS = 989e12 * 0.35  # 3.4615e14 FLOP/s per GPU at MFU 0.35
W7, KV7 = 14e9, 57_344.0


def shape(**kw):
    base = dict(params_b=7.0, gpus=16, rollout_gpus=16, train_gpus=16, disaggregated=False, asynchronous=False,
                staleness=1, samples=256, prompt_tokens=512, reference_model=True, reward_model_params_b=None,
                verifier_seconds_per_sample=0.05, epochs=1, minibatches=4, mfu=0.35)
    return rl.Shape(**{**base, **kw})


# 256 responses of exactly 2,000 tokens: Σ L = 512,000, max L = 2,000, Σ L² = 256 × 4e6 = 1.024e9.
N, LP, L = 256, 512, 2000.0
CONST = (np.array([N * L]), np.array([L]), np.array([N * L * L]))
T = N * (LP + L)  # 643,072 tokens scored and trained on


def times(sh, hw=H100, draws=CONST):
    pt = rl.phase_times(sh, hw, *draws)
    return {k: float(getattr(pt, k)[0]) for k in rl.PhaseTimes.__dataclass_fields__}


def test_hardware_comes_from_the_catalog():
    from costsim.catalog.load import default_catalog
    from costsim.plan.resolve import resolve
    from costsim.scenario import Scenario
    from costsim.workload.plan import hardware

    consts = default_catalog().rl
    sc = Scenario.model_validate({"name": "x", "horizon_days": 1, "workload": {"trace": "t.csv"},
                                  "options": [{"name": "o", "kind": "owned", "gpu_type": "H100", "gpus": 8}]})
    hw = hardware(resolve(sc)[0])
    assert (hw.bf16_dense_tflops, hw.hbm_tb_s, hw.memory_gb, hw.nvlink_gpus, hw.nvlink_busbw_gb_s) == (
        989.0, 3.35, 80.0, 8, 470.0)
    assert hw.inter_busbw_gb_s == pytest.approx(8 * 47.0 * 1.0)  # 8 NICs × 47 GB/s × InfiniBand 1.0
    assert hw.nic_gb_s == 47.0  # one 400G NIC a GPU
    assert (hw.mem_efficiency, hw.step_floor_s, hw.kv_memory_fraction, hw.verifier_workers) == (
        consts["hbm_efficiency"], consts["decode_step_floor_s"], consts["kv_memory_fraction"],
        consts["verifier_workers_per_gpu"])


# --- the decode step ---------------------------------------------------------------------------

def test_decode_step_floor_bound():
    # A lone 7B sequence: 14e9 / 1.8425e12 = 7.598 ms of weight reads, under the 8 ms floor.
    assert float(rl.decode_step_s(W7, 0.0, 1, 1, H100, 1.4e10, 0.35)) == pytest.approx(0.008)


def test_decode_step_memory_bound():
    # 14 GB of weights + 14 GB of KV cache: 28e9 / 1.8425e12 = 15.1967 ms; on TP 2 half: 7.598 ms → floor.
    assert float(rl.decode_step_s(W7, 14e9, 8, 1, H100, 1.4e10, 0.35)) == pytest.approx(0.0151967, rel=1e-5)
    assert float(rl.decode_step_s(W7, 14e9, 8, 4, H100, 1.4e10, 0.35)) == pytest.approx(0.008)


def test_decode_step_compute_bound():
    # A batch of 1,000: 1.4e10 FLOP/token × 1,000 / 3.4615e14 = 40.445 ms > 7.6 ms of weight reads.
    assert float(rl.decode_step_s(W7, 0.0, 1000, 1, H100, 1.4e10, 0.35)) == pytest.approx(0.0404449, rel=1e-5)


def test_drain_by_hand():
    # Lengths 1,000, 2,000, 3,000, 4,000 after 512-token prompts on 4 replicas of TP 2, kv 57,344:
    # KV reads 57,344 × (512 × 10,000 + 30e6 / 2) = 1.15376e12 B over 4 × 2 × 1.8425e12 B/s = 0.078274 s;
    # weight reads 14e9 / (2 × 1.8425e12) = 3.79919 ms a token, 4,000 × that = 15.19674 s.
    # The floor binds: the straggler's 4,000 steps at 8 ms = 32 s > 15.19674 + 0.078274 s.
    wstep = W7 / (2 * ETA_B)
    args = (np.array([4000.0]), np.array([10_000.0]), np.array([30e6]), 512, KV7, 4, 2)
    assert float(rl.drain_s(*args, H100, 0.008, wstep)[0]) == pytest.approx(32.0, rel=1e-12)
    # With a 1 ms floor, memory binds: 15.19674 + 0.078274 = 15.27501 s.
    assert float(rl.drain_s(*args, H100, max(0.001, wstep), wstep)[0]) == pytest.approx(15.275014, rel=1e-6)


def brute_force_drain(lengths, prompt, kv, tp, hw):
    """One replica decoding every sequence from the same start, step by step: each step reads the
    weights and the KV cache of the sequences still running, and takes at least the floor."""
    lengths = np.sort(np.asarray(lengths, dtype=int))
    total = 0.0
    for k in range(1, int(lengths[-1]) + 1):
        context = (lengths >= k).sum() * (prompt + k)  # tokens of KV the running sequences hold
        total += max(hw.step_floor_s, (W7 + kv * context) / (tp * hw.hbm_tb_s * 1e12 * hw.mem_efficiency))
    return total


@pytest.mark.parametrize("lengths", [[50, 400, 3000], [800] * 64, list(range(10, 2000, 37))])
def test_drain_formula_brackets_the_step_by_step_drain(lengths):
    # The step sum takes, step by step, max(floor, weights + KV); the closed form takes the larger of
    # the two totals, a lower bound (Σ max ≥ max Σ), up to the ½ L rounding of Σ k (Σ k = L(L+1)/2,
    # the formula uses L²/2); the sum of the two totals is an upper bound.
    x = np.asarray(lengths, dtype=float)
    wstep = W7 / ETA_B
    single = max(0.008, wstep)
    closed = float(rl.drain_s(np.array([x.max()]), np.array([x.sum()]), np.array([(x * x).sum()]), 512, KV7, 1, 1,
                              H100, single, wstep)[0])
    exact = brute_force_drain(x, 512, KV7, 1, H100)
    kv_total = KV7 * (512 * x.sum() + (x * x).sum() / 2) / ETA_B
    rounding = KV7 * x.sum() / 2 / ETA_B
    assert closed <= exact + rounding
    assert exact <= x.max() * single + kv_total + rounding


def test_drain_is_exact_when_one_term_binds_throughout():
    # 64 sequences of 800 tokens: KV per step ≥ 64 × 513 × 57,344 B → memory binds at every step, so
    # the step sum is Σ_k (14e9 + 57,344 × 64 × (512 + k)) / 1.8425e12 = the closed form + ½ L rounding.
    x = np.full(64, 800.0)
    wstep = W7 / ETA_B
    closed = float(rl.drain_s(np.array([800.0]), np.array([x.sum()]), np.array([(x * x).sum()]), 512, KV7, 1, 1,
                              H100, max(0.008, wstep), wstep)[0])
    exact = brute_force_drain(x, 512, KV7, 1, H100)
    assert exact == pytest.approx(closed + KV7 * x.sum() / 2 / ETA_B, rel=1e-9)


# --- defaults and layouts ----------------------------------------------------------------------

def test_kv_bytes_exact_at_reference_rows():
    assert rl.default_kv_bytes_per_token(7.0) == pytest.approx(57_344, rel=1e-12)  # 2 × 28 × 4 × 128 × 2
    assert rl.default_kv_bytes_per_token(1.5) == pytest.approx(28_672, rel=1e-12)  # 2 × 28 × 2 × 128 × 2
    assert rl.default_kv_bytes_per_token(405.0) == pytest.approx(516_096, rel=1e-12)  # 2 × 126 × 8 × 128 × 2


def test_kv_bytes_interpolate_log_log():
    # Between 7B (57,344) and 14B (196,608): at 10B, 57,344 × (196,608 / 57,344)^(ln(10/7) / ln 2)
    # = 57,344 × (24/7)^0.514573 = 108,104.3; at the geometric mean √(7 × 14) the geometric mean
    # √(57,344 × 196,608) = 106,180.5.
    assert rl.default_kv_bytes_per_token(10.0) == pytest.approx(108_104.28, rel=1e-6)
    assert rl.default_kv_bytes_per_token(np.sqrt(98.0)) == pytest.approx(106_180.46, rel=1e-6)
    # Held flat beyond the table's ends (0.5B and 405B).
    assert rl.default_kv_bytes_per_token(0.1) == pytest.approx(12_288, rel=1e-12)
    assert rl.default_kv_bytes_per_token(1000.0) == pytest.approx(516_096, rel=1e-12)


def test_kv_capacity_by_hand():
    # 7B on one H100: (80e9 × 0.8 − 14e9) / 57,344 = 50e9 / 57,344 = 871,930.8 tokens.
    assert rl.kv_capacity_tokens(7.0, 1, H100, KV7) == pytest.approx(871_930.8, rel=1e-7)
    # 405B on 8: 8 × 64e9 − 810e9 < 0, no room for any KV cache.
    assert rl.kv_capacity_tokens(405.0, 8, H100, 516_096) < 0


@pytest.mark.parametrize("params, gpus, tp", [
    (1.5, 16, 1),   # 3 GB of weights ≤ half of 64 GB
    (7.0, 16, 1),   # 14 / 32 = 0.44
    (32.0, 16, 2),  # 64 / 32 = 2
    (70.0, 16, 8),  # 140 / 32 = 4.4 → 8
    (405.0, 64, 32),  # 810 / 32 = 25.3 → 32
    (405.0, 12, 8),  # ... but at most the rollout GPUs, a power of two: 8
])
def test_default_rollout_tp(params, gpus, tp):
    assert rl.default_rollout_tp(params, gpus, H100) == tp


@pytest.mark.parametrize("params, gpus, layout", [
    (1.5, 64, (1, 1)),    # 4 B/param × 1.5e9 / 40 GB = 0.15 → 1
    (7.0, 64, (1, 1)),    # 28 / 40 = 0.7 → 1
    (70.0, 64, (8, 1)),   # 280 / 40 = 7 → 8, all tensor parallel within the node
    (405.0, 1024, (8, 8)),  # 1,620 / 40 = 40.5 → 64 = TP 8 (the node) × PP 8
    (405.0, 32, (8, 4)),  # ... at most the 32 training GPUs: TP 8 × PP 4
])
def test_default_train_parallel(params, gpus, layout):
    assert rl.default_train_parallel(params, gpus, H100) == layout


def test_layout_explicit_fields_win():
    lay = rl.layout(shape(params_b=70.0, gpus=64, rollout_gpus=64, train_gpus=64, rollout_tp=4, train_tp=4,
                          train_pp=2, kv_bytes_per_token=300_000.0), H100)
    # 64 / 4 = 16 replicas; DP = 64 / (4 × 2) = 8; capacity (4 × 64e9 − 140e9) / 300,000 = 386,666.7 tokens
    assert (lay.rollout_tp, lay.replicas, lay.train_tp, lay.train_pp, lay.data_parallel) == (4, 16, 4, 2, 8)
    assert lay.kv_capacity_tokens == pytest.approx(386_666.67, rel=1e-7)


# --- update and sync ---------------------------------------------------------------------------

def test_update_compute_with_pipeline_bubble_and_tp8_allreduce():
    # 70B on 64 GPUs, TP 8 × PP 2 → DP 4; 256 samples / (4 minibatches × DP 4) = 16 micro-batches,
    # bubble 1/17. Compute 6 × 70e9 × 1e6 / (64 × 989e12 × 0.4) = 16.58873 s ÷ (16/17) = 17.62552 s.
    # Gradients 140e9 / 16 = 8.75e9 B per GPU over DP 4 with one NIC per group (376 / 8 = 47 GB/s):
    # 2 × 3/4 × 8.75e9 / 47e9 = 0.279255 s, × 4 minibatches = 1.117021 s.
    sh = shape(params_b=70.0, gpus=64, rollout_gpus=64, train_gpus=64, train_tp=8, train_pp=2, mfu=0.4)
    got = float(rl.update_s(sh, rl.layout(sh, H100), np.array([1e6]), H100)[0])
    assert got == pytest.approx(17.625521 + 1.117021, rel=1e-6)


def test_update_data_parallel_across_nodes_uses_the_whole_fabric():
    # 7B, pure DP over 16 GPUs on 2 nodes shards its weights (FSDP): 6 × 7e9 × T / (16 × 3.4615e14)
    # = 4.876684 s; per optimizer step one micro-batch, whose all-gather (forward), all-gather
    # (backward) and reduce-scatter each move 15/16 × 14e9 / 376e9 = 0.0349069 s over the whole
    # node's fabric (v1: ÷ 8 GPUs per node, 8× slower): 4 × 3 × 0.0349069 s.
    sh = shape()
    micro = np.ceil(T / (4 * 16 * H100.microbatch_tokens))
    got = float(rl.update_s(sh, rl.layout(sh, H100), np.array([T]), H100)[0])
    assert got == pytest.approx(6 * 7e9 * T / (16 * FLOPS) + 4 * micro * 3 * 0.03490692, rel=1e-6)
    assert 6 * 7e9 * T / (16 * FLOPS) == pytest.approx(4.876684, rel=1e-6)


def test_update_within_a_node_uses_nvlink():
    # 8 training GPUs in one node shard the weights (FSDP): per optimizer step ⌈643,072 / (4 × 8 ×
    # 16,384)⌉ = 2 micro-batches, each with 3 collectives of 7/8 × 14e9 / 470e9 = 0.0260638 s over
    # NVLink: 4 × 2 × 3 × 0.0260638 = 0.6255319 s.
    sh = shape(gpus=8, rollout_gpus=8, train_gpus=8)
    got = float(rl.update_s(sh, rl.layout(sh, H100), np.array([T]), H100)[0])
    assert got == pytest.approx(6 * 7e9 * T / (8 * FLOPS) + 4 * 2 * 3 * 0.02606383, rel=1e-6)


def test_faster_fabric_shortens_the_update():
    roce = rl.Hardware(**{**H100.__dict__, "inter_busbw_gb_s": 376.0 * 0.92, "nic_gb_s": 47.0 * 0.92})
    sh = shape(params_b=70.0, gpus=64, rollout_gpus=64, train_gpus=64)
    lay = rl.layout(sh, H100)
    # Only the all-reduce changes: its part grows by 1 / 0.92.
    ib, ro = (float(rl.update_s(sh, lay, np.array([T]), hw)[0]) for hw in (H100, roce))
    compute = 6 * 70e9 * T / (64 * FLOPS)
    assert ro > ib and (ro - compute) / (ib - compute) == pytest.approx(1 / 0.92, rel=1e-9)


def test_doubling_gpus_shortens_update_by_less_than_half():
    for g in (16, 32, 64):
        one, two = (shape(params_b=70.0, gpus=k, rollout_gpus=k, train_gpus=k) for k in (g, 2 * g))
        t1 = float(rl.update_s(one, rl.layout(one, H100), np.array([T]), H100)[0])
        t2 = float(rl.update_s(two, rl.layout(two, H100), np.array([T]), H100)[0])
        assert t1 / 2 < t2 < t1  # compute halves, the all-reduce does not


def test_sync_fabric_when_disaggregated_nvlink_reshard_when_colocated():
    # No method constants in H100 here: no latency, the path's full bandwidth, instant reload.
    # Disaggregated 8 + 8 on two nodes: gather the FSDP shards of the 8 trainers over NVLink,
    # 7/8 × 14e9 / 470e9 = 0.0260638 s, then 14 GB over the fabric, 14e9 / 47e9 = 0.2978723 s
    # (a broadcast leaves through one rank's NIC).
    assert rl.sync_s(shape(disaggregated=True, rollout_gpus=8, train_gpus=8), H100) == pytest.approx(
        7 / 8 * 14 / 470 + 14 / 47)
    # Colocated on 16 GPUs: gather 16 shards across the fabric, 15/16 × 14 / 376, reshard in the node, 14 / 470.
    assert rl.sync_s(shape(), H100) == pytest.approx(15 / 16 * 14 / 376 + 14 / 470)
    # disaggregated inside one 8-GPU node: NVLink for both, 3/4 × 14 / 470 + 14 / 470
    assert rl.sync_s(shape(gpus=8, rollout_gpus=4, train_gpus=4, disaggregated=True), H100) == pytest.approx(
        3 / 4 * 14 / 470 + 14 / 470)


# --- phase times -------------------------------------------------------------------------------
# Shared hand figures for 256 × 2,000 tokens: logprobs on G_t GPUs 2 × 7e9 × 643,072 / (G_t × 3.4615e14),
# i.e. 1.625561 s on 16, 3.251122 s on 8; the reference model the same; update 3× that. Pure data
# parallel (7B) shards the weights (FSDP): a forward pass has ⌈643,072 / (G_t × 16,384)⌉ micro-batches
# (3 on 16 GPUs, 5 on 8), each one all-gather; the update ⌈643,072 / (4 × G_t × 16,384)⌉ per optimizer
# step (1 on 16, 2 on 8), each 3 collectives. A collective moves 15/16 × 14e9 / 376e9 = 0.0349069 s
# on 16 GPUs (two nodes: the fabric), 7/8 × 14e9 / 470e9 = 0.0260638 s on 8 (NVLink). Prompt prefill
# on the rollout GPUs: 2 × 7e9 × 256 × 512 / (G_r × 989e12 × 0.5) = 0.2319272 s on 16, 0.4638544 s on 8.
G16, G8 = 15 / 16 * 14 / 376, 7 / 8 * 14 / 470
PRE16, PRE8 = 2 * 7e9 * 256 * 512 / (16 * 989e12 * 0.5), 2 * 7e9 * 256 * 512 / (8 * 989e12 * 0.5)

def test_colocated_sync_by_hand():
    t = times(shape())
    # drain: max(2,000 × 8 ms = 16 s, 2,000 × 7.59837 ms of weight reads + 57,344 × (512 × 512,000 +
    # 1.024e9 / 2) / (16 × 1.8425e12) = 15.19674 + 1.505852 = 16.702592 s);
    # full batch: context 512 + 1.024e9 / (2 × 512,000) = 1,512, batch min(871,931 / 1,512, 256 / 16) = 16,
    # step (14e9 + 57,344 × 16 × 1,512) / 1.8425e12 = 8.3513 ms, 512,000 × 8.3513 ms / (16 × 16) = 16.7026 s
    # — with equal lengths the drain's memory term is the full batch; compute 2 × 7e9 × 512,000 /
    # (16 × 3.4615e14) = 1.2942 s.
    # Prompt prefill adds PRE16 to the rollout.
    assert t["rollout"] == pytest.approx(16.702594 + PRE16, rel=1e-6)
    assert t["straggler"] in (0.0, 16.0)
    assert t["logprobs"] == pytest.approx(1.625561 + 3 * G16, rel=1e-6)
    assert t["scoring"] == pytest.approx(1.625561 + 3 * G16 + 256 * 0.05 / (16 * 8), rel=1e-6)  # + verifier 0.1 s
    assert t["update"] == pytest.approx(3 * 1.625561 + 4 * 1 * 3 * G16, rel=1e-6)
    sync = G16 + 14 / 470  # gather the 16 shards across the fabric, reshard in the node
    assert t["sync"] == pytest.approx(sync)
    assert t["overhead"] == 0.0
    assert t["total"] == pytest.approx(16.702594 + PRE16 + 5 * 1.625561 + 0.1 + 18 * G16 + sync, rel=1e-6)


def test_disaggregated_sync_by_hand():
    t = times(shape(rollout_gpus=8, train_gpus=8, disaggregated=True))
    # drain on 8 replicas: max(16, 15.19674 + 57,344 × 7.74144e8 / (8 × 1.8425e12) = 15.19674 + 3.011704
    # = 18.208444 s); full batch 32 per replica: step (14e9 + 57,344 × 32 × 1,512) / 1.8425e12 = 9.1043 ms
    # → 512,000 × 9.1043 ms / 256 = 18.2086 s (the same, lengths being equal).
    assert t["rollout"] == pytest.approx(18.208445 + PRE8, rel=1e-6)
    assert t["logprobs"] == pytest.approx(3.251122 + 5 * G8, rel=1e-6)
    assert t["scoring"] == pytest.approx(3.451122 + 5 * G8, rel=1e-6)  # verifier 256 × 0.05 / 64 = 0.2 s
    assert t["update"] == pytest.approx(3 * 3.251122 + 4 * 2 * 3 * G8, rel=1e-6)  # 8 training GPUs: NVLink
    sync = G8 + 14 / 47  # gather in the trainers' node, then one NIC across the fabric
    assert t["sync"] == pytest.approx(sync)
    train = 5 * 3.251122 + 0.2 + 34 * G8
    assert t["total"] == pytest.approx(18.208445 + PRE8 + train + sync, rel=1e-6)


def test_async_by_hand():
    t = times(shape(rollout_gpus=8, train_gpus=8, disaggregated=True, asynchronous=True, staleness=1))
    # 512 sequences in flight over 8 replicas: batch 64 (KV holds 576.7 at context 1,512);
    # step (14e9 + 57,344 × 64 × 1,512) / 1.8425e12 = 10.6101 ms; full 512,000 × 10.6101 ms / (8 × 64)
    # = 10.610076 s exceeds drain / 2 = 9.104222 s: no straggler. Re-prefill of 8 × 64 × 1,512 = 774,144
    # tokens on the rollout GPUs at the prefill MFU: 2 × 7e9 × 774,144 / (8 × 989e12 × 0.5) = 2.739640 s,
    # plus the prompts' prefill PRE8; rollout + overhead 13.81 s < training 5 × 3.251122 + 0.2 + 34 × G8
    # = 17.341784 s, which sets the pace.
    assert t["rollout"] == pytest.approx(10.610076, rel=1e-6)
    assert t["straggler"] == 0.0
    assert t["overhead"] == pytest.approx(2.739640 + PRE8, rel=1e-6)
    assert t["total"] == pytest.approx(5 * 3.251122 + 0.2 + 34 * G8 + G8 + 14 / 47, rel=1e-6)


def test_async_total_is_max_of_rollout_plus_overhead_and_training_plus_sync():
    d = length_draws(np.random.default_rng(3), N, 2000, 1.0, 16384, 200)
    for s in (1, 2, 8):
        pt = rl.phase_times(shape(rollout_gpus=8, train_gpus=8, disaggregated=True, asynchronous=True, staleness=s),
                            H100, d.length_sum, d.length_max, d.length_sq_sum)
        expect = np.maximum(pt.rollout + pt.overhead, pt.logprobs + pt.scoring + pt.update) + pt.sync
        np.testing.assert_allclose(pt.total, expect, rtol=1e-12)


def test_sequence_speed_override_sets_the_straggler():
    # 50 tokens/s alone: the straggler takes 2,000 / 50 = 40 s, more than weights + KV (16.702592 s);
    # the prompts' prefill comes first.
    t = times(shape(sequence_tokens_per_s=50.0))
    assert t["straggler"] == pytest.approx(40.0) and t["rollout"] == pytest.approx(40.0 + PRE16, rel=1e-12)


def test_decode_throughput_override_sets_the_full_batch_rate():
    # 1,000 tokens/s per GPU on 16 GPUs: 512,000 / 16,000 = 32 s, the drain scaled to the same rate;
    # the given rate is decode's, prefill comes on top.
    t = times(shape(decode_tokens_per_s_per_gpu=1000.0))
    assert t["rollout"] == pytest.approx(32.0 + PRE16) and t["straggler"] == 0.0


def test_reward_model_replaces_the_verifier_and_logprobs_can_be_skipped():
    t = times(shape(reward_model_params_b=70.0, reference_model=False, recompute_logprobs=False))
    # one 70B forward pass over T: 2 × 70e9 × 643,072 / (16 × 3.4615e14) = 16.25561 s, and its own
    # 140 GB of weights all-gathered (FSDP) for each of 3 micro-batches: 3 × 15/16 × 140e9 / 376e9.
    assert t["scoring"] == pytest.approx(16.25561 + 3 * 15 / 16 * 140 / 376, rel=1e-6)
    assert t["logprobs"] == 0.0


# --- fit checks --------------------------------------------------------------------------------

def test_fit_problems_say_why():
    assert rl.fit_problem(shape(), H100) is None
    big = dict(params_b=405.0, gpus=64, rollout_gpus=64, train_gpus=64)
    assert "more than its 16 rollout GPUs" in rl.fit_problem(shape(**{**big, "rollout_gpus": 16}, rollout_tp=32), H100)
    # 8 × 64 GB < 810 GB of weights
    assert "no room for a KV cache" in rl.fit_problem(shape(**big, rollout_tp=8), H100)
    assert "tp × pp = 32 is more than its 16 training GPUs" in rl.fit_problem(
        shape(**{**big, "train_gpus": 16}, train_tp=8, train_pp=4), H100)
    assert "spans more than one 8-GPU NVLink domain" in rl.fit_problem(shape(**big, train_tp=16), H100)
    # default TP 8 × PP 2 on 16 GPUs: 4 × 405e9 / 16 + 12 × 405e9 / 16 = 405 GB per GPU > 80 GB
    assert "needs 405 GB per GPU at tp × pp = 16" in rl.fit_problem(shape(**{**big, "train_gpus": 16}), H100)


# --- effects public systems report -------------------------------------------------------------

def defaults(**kw):
    """DESIGN's default class: 7B, 256 prompts × 8 samples of lognormal(2,000, cv 1) capped at 16,384."""
    return shape(samples=2048, **kw)


def heavy_tailed(sh, iterations=300, seed=1):
    d = length_draws(np.random.default_rng(seed), 2048, 2000, 1.0, 16384, iterations)
    return rl.phase_times(sh, H100, d.length_sum, d.length_max, d.length_sq_sum)


def test_generation_share_of_long_reasoning_defaults():
    pt = heavy_tailed(defaults())
    assert 0.6 <= pt.rollout.mean() / pt.total.mean() <= 0.8  # DESIGN section 13: 60–80 %


def test_async_beats_both_sync_placements_on_the_defaults():
    split = dict(rollout_gpus=8, train_gpus=8, disaggregated=True)
    asyn = heavy_tailed(defaults(**split, asynchronous=True)).total.mean()
    assert asyn < heavy_tailed(defaults()).total.mean() and asyn < heavy_tailed(defaults(**split)).total.mean()


def test_straggler_raises_sync_rollout_at_the_same_mean():
    rng = np.random.default_rng(0)
    means = []
    for cv in (0.0, 0.5, 1.0, 2.0):
        d = length_draws(rng, 2048, 2000, cv, 16384, 200)
        means.append(float(rl.phase_times(defaults(), H100, d.length_sum, d.length_max, d.length_sq_sum).rollout.mean()))
    assert means == sorted(means) and means[-1] > 3 * means[0]


# --- after the second review: waves, pipelined replicas, NIC shares, optimizer memory ----------

def test_kv_waves_delay_the_straggler_by_hand():
    # 1,024 responses of 2,000 tokens on one GPU: its KV holds (64e9 − 14e9) / 57,344 = 871,930.8
    # tokens, at context 512 + 1,000 = 1,512 that is 576.674 sequences, a share f = 0.563158 of
    # them. Full batch: step (14e9 + 50e9) / 1.8425e12 = 34.7354 ms, 576.674 / 34.7354 ms = 16,601.9
    # tok/s, 2,048,000 tokens in 123.35939 s. The longest starts (1 − f) × 123.35939 / 2 = 26.94428 s
    # late, then max(2,000 × 8 ms, 2,000 × 7.59837 ms + 57,344 × (512 × 2.048e6 + 2.048e9) /
    # 1.8425e12 = 111.57126 s): rollout 26.94428 + 111.57126 = 138.51554 s, above the full batch; the
    # prompts' prefill before it, 2 × 7e9 × 1,024 × 512 / (989e12 × 0.5) = 14.843398 s.
    n = 1024
    draws = (np.array([n * L]), np.array([L]), np.array([n * L * L]))
    t = times(shape(gpus=1, rollout_gpus=1, train_gpus=1, samples=n), draws=draws)
    assert t["rollout"] == pytest.approx(26.94428 + 111.57126 + 14.843398, rel=1e-6)
    # With every sequence resident (256 of them) there is no delay: test_colocated_sync_by_hand.


def test_a_replica_beyond_a_node_reads_its_weights_on_all_its_gpus():
    # 70B on replicas of 16 GPUs (8-GPU nodes): tensor parallel 16 across two nodes. A lone token
    # reads its shard on all 16 GPUs at once, as the full batch's steps do: 140e9 / (16 × 1.8425e12)
    # = 4.74898 ms a token (not 9.50 ms, as if the nodes were pipeline stages read in turn).
    # Its tensor parallelism spans the two nodes, so each token also all-reduces twice a layer over the
    # NICs: this hardware has no latency constants, so only the bytes, 2 × 15/16 × h × 2 B / 376e9 with
    # L = (70e9 / (12 × 6,400))^(1/3) = 96.957 layers of h = 80 L: 2 L of them, 15.0 µs a token. The
    # two, 4.764 ms, are under the 8 ms floor, which paces the lone token.
    sh = shape(params_b=70.0, gpus=32, rollout_gpus=32, train_gpus=32, rollout_tp=16)
    lay = rl.layout(sh, H100)
    assert (lay.rollout_tp, lay.rollout_tensor, lay.replicas) == (16, 8, 2)
    layers = (70e9 / (12 * 6400)) ** (1 / 3)
    comm = 2 * layers * 2 * 15 / 16 * 80 * layers * 2 / 376e9
    assert comm == pytest.approx(15.0e-6, rel=1e-3)
    assert float(rl.tp_comm_s(sh, lay, H100, 1.0)) == pytest.approx(comm, rel=1e-9)
    assert rl.lone_token_step_s(140e9, 16, H100, comm) == pytest.approx(140e9 / (16 * ETA_B) + comm, rel=1e-12)
    assert 140e9 / (16 * ETA_B) == pytest.approx(4.74898e-3, rel=1e-5)
    t = times(sh)
    assert t["straggler"] in (0.0, pytest.approx(2000 * 0.008, rel=1e-9))
    alone, memory = rl.drain_terms(np.array([L]), np.array([N * L]), np.array([N * L * L]), LP,
                                   rl.default_kv_bytes_per_token(70.0), 2, 16, H100, 0.008,
                                   140e9 / (16 * ETA_B) + comm)
    assert float(alone[0]) == pytest.approx(2000 * 0.008, rel=1e-12)


def test_a_lone_token_across_nodes_reads_at_every_gpus_bandwidth_plus_its_all_reduces():
    # 405B (810e9 B) on replicas of 16 H100 across two nodes, one sequence a replica (2 samples of
    # exactly 2,000 tokens after 512 of prompt): every step reads the weights and the sequence's KV
    # (516,096 B a token × its mean context 512 + 1,000 = 780.337e6 B) on 16 GPUs at once,
    # (810e9 + 780.337e6) / (16 × 1.8425e12) = 27.50273 ms, plus the all-reduces' bytes (no latency
    # constants here): L = (405e9 / 76,800)^(1/3) = 174.04 layers, h = 80 L, 2 L × 2 × 15/16 × h × 2 B /
    # 376e9 = 48.35 µs; 27.55107 ms > the 8 ms floor. 2,000 steps = 55.1021 s, + the prompts' prefill
    # 2 × 405e9 × 1,024 / (32 × 989e12 × 0.5) = 0.052417 s: 55.1546 s (reading over one node's 8 GPUs
    # in turn, as before, gave ≈ 110 s).
    sh = shape(params_b=405.0, gpus=32, rollout_gpus=32, train_gpus=32, rollout_tp=16, samples=2)
    lay = rl.layout(sh, H100)
    assert (lay.rollout_tp, lay.rollout_tensor, lay.replicas) == (16, 8, 2)
    kv = rl.default_kv_bytes_per_token(405.0)
    assert kv == pytest.approx(516_096, rel=1e-9)
    layers = (405e9 / 76_800) ** (1 / 3)
    comm = 2 * layers * 2 * 15 / 16 * 80 * layers * 2 / 376e9
    assert comm == pytest.approx(48.35e-6, rel=1e-3)
    step = (810e9 + kv * 1512) / (16 * ETA_B) + comm
    assert step == pytest.approx(27.55107e-3, rel=1e-6)
    draws = (np.array([2 * L]), np.array([L]), np.array([2 * L * L]))
    prompts = 2 * 405e9 * 1024 / (32 * 989e12 * 0.5)
    assert times(sh, draws=draws)["rollout"] == pytest.approx(2000 * step + prompts, rel=1e-9)
    assert 2000 * step + prompts == pytest.approx(55.1546, rel=1e-5)


def test_a_smaller_instance_has_its_share_of_the_nodes_nics():
    # An H100 node has 8 NICs of 47 GB/s; a 2-GPU instance has 2 of them: 94 GB/s, a 1-GPU one 47.
    from costsim.plan.resolve import resolve
    from costsim.scenario import Scenario
    from costsim.workload.plan import hardware

    for gpi, busbw in ((8, 376.0), (2, 94.0), (1, 47.0)):
        sc = Scenario.model_validate({"name": "x", "horizon_days": 1, "workload": {"trace": "t.csv"}, "options": [
            {"name": "c", "kind": "cloud", "gpu_type": "H100", "gpus_per_instance": gpi}]})
        assert hardware(resolve(sc)[0]).inter_busbw_gb_s == pytest.approx(busbw)
    # An A100 node has 4 NICs of 24 GB/s for 8 GPUs: a 1-GPU instance has half a NIC, 12 GB/s.
    sc = Scenario.model_validate({"name": "x", "horizon_days": 1, "workload": {"trace": "t.csv"}, "options": [
        {"name": "c", "kind": "cloud", "gpu_type": "A100", "gpus_per_instance": 1}]})
    assert hardware(resolve(sc)[0]).inter_busbw_gb_s == pytest.approx(12.0)


def test_default_training_layout_counts_optimizer_memory():
    # 20B on 4 GPUs: weights + gradients 80 GB; at TP 2 that is 40 GB (half of 80: allowed) but the
    # optimizer's 12 B/param sharded over 4 GPUs adds 60 GB: 100 GB > 80 GB, so TP 4: 20 + 60 = 80 GB.
    assert rl.default_train_parallel(20.0, 4, H100) == (4, 1)
    # On 8 GPUs the optimizer shard is 30 GB: TP 2 holds 40 + 30 = 70 GB.
    assert rl.default_train_parallel(20.0, 8, H100) == (2, 1)
    # 70B on 16 GPUs: TP 8 would hold 35 + 52.5 = 87.5 GB; TP 8 × PP 2: 17.5 + 52.5 = 70 GB.
    assert rl.default_train_parallel(70.0, 16, H100) == (8, 2)


def test_a_faster_given_decode_rate_speeds_the_rollout():
    # Without an override the rollout is 16.70 s (test_colocated_sync_by_hand); at 50,000 tok/s per
    # GPU the roofline's memory time scales with the rate: the drain falls to the 16 s straggler alone
    # (after the prompts' prefill).
    fast = times(shape(decode_tokens_per_s_per_gpu=50_000.0))
    assert fast["rollout"] == pytest.approx(16.0 + PRE16, rel=1e-9)
    assert fast["rollout"] < times(shape())["rollout"]
