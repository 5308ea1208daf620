"""Why the v3 rows the one set of constants does not carry are not carried: a reason a row, shown
in docs/validation.md beside its ratio ("Not yet carried": out of sample, not asserted).

A reason's numbers are what the model gives for the row's own setting (the row's ``rl.Shape``,
hardware, length draws and published figure). The functions at the end compute them; the reasons
quote them as the constants below, since the table is built without a catalog; and
tests/calibration/test_published_validation.py pins each constant to its function and each
function to a calculation by hand, so a change to the model that moves a number fails there until
the reason says what the model now does.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np

from costsim.calibration import validation_v3 as v3
from costsim.models import network, rl, training

TP_ACROSS_NODES = ("vLLM runs tensor parallel {tp} across {nodes} nodes: every decode step all-reduces twice a "
                   "layer ({ars} all-reduces of {layers} layers) over InfiniBand. The model charges them "
                   "(decode.tp_comm_s) at the latency NCCL's own tuning model gives a small all-reduce of 8 GPUs a "
                   "node (tree, LL protocol: 6.8 + 2 × (7 × 0.6 + ⌊log2(nodes)⌋ × 5.0) µs, src/graph/tuning.cc; 25 µs "
                   "on 2 nodes, as its log prints for 2 × 8 H100 in NVIDIA/nccl#1453, 35 µs on 4) with the bytes at "
                   "the full bus bandwidth: a lower bound, since a batched step's all-reduce (every sequence's hidden "
                   "state, hundreds of KB to MBs) is in the range where NCCL picks its LL128 or Simple protocol, "
                   "whose latency is higher. That is ≈ {ms} ms of latency a step ({ars} × {lat:.1f} µs) before the bytes, and adds {gain} s to the "
                   "step ({ratio} of the figure with it); carrying this row would take ≈ {need} µs an all-reduce "
                   "(at any number of nodes), where the other rows across nodes take {others}: no one latency "
                   "carries them, so what slows vLLM's generation across nodes is more than the all-reduce's latency, "
                   "and nothing more is sourced.")
# What the model gives each row across nodes (``across_numbers``, pinned by
# tests/calibration/test_published_validation.py): ms of latency a step, seconds the latency adds,
# simulated ÷ published, and the one all-reduce latency (µs) that brings the row to its band.
ACROSS = {"nemo_235b_on": ("4.7", "27", "0.53", "114"),
          "nemo_dsv3_on": ("4.3", "3", "0.31", "484"),
          "nemo_dsv3_off": ("4.3", "2", "0.47", "384")}
ACROSS_NAMES = {"nemo_235b_on": "Qwen3-235B-A22B", "nemo_dsv3_on": "DeepSeek-V3 on-policy",
                "nemo_dsv3_off": "DeepSeek-V3 off-policy"}
# NCCL's tuning-model latency the reasons quote (µs): rl.tp_allreduce_* over 2, 4 and 8 nodes.
NCCL_LATENCY_US = {2: 25.2, 4: 35.2, 8: 45.2}


def across_nodes(key: str) -> str:
    """Why a row whose vLLM runs tensor parallel across nodes is not carried."""
    run = v3.nemo_run(key)
    ms, gain, ratio, need = ACROSS[key]
    layers = run.policy.layers or 0
    nodes = run.gen_tp // 8
    others = " and ".join(f"≈ {ACROSS[k][3]} µs ({ACROSS_NAMES[k]})" for k in ACROSS if k != key)
    return TP_ACROSS_NODES.format(tp=run.gen_tp, nodes=nodes, ars=2 * layers, layers=layers, ms=ms,
                                  lat=NCCL_LATENCY_US[nodes], gain=gain, ratio=ratio, need=need, others=others)


# What the model gives the verl generation row on 32 H20 (``verl_gen_32_figures``): tokens/s a GPU
# at the published time, % of the BF16 peak, % of the memory roofline, the engine's η (%) it reads
# at, sequences a GPU, GB of KV cache they hold at the mean context, GB the engine leaves for it.
VERL_GEN_32 = ("790", "8", "8", "35", "256", "19", "62")


def verl_gen_32() -> str:
    """Why verl's generation on 32 H20 is not carried."""
    tok, peak, roof, eta, batch, kv, room = VERL_GEN_32
    return (f"At 32 H20 the published {v3.VERL_GEN_32_S:.0f} s is about {tok} tokens/s a GPU at the [A] lengths: "
            f"{peak} % of the H20's BF16 peak and {roof} % of its memory roofline at {batch} sequences a GPU (the "
            f"weights and the KV cache read each decode step at vLLM's {eta} % of HBM bandwidth), whose KV cache "
            f"(≈ {kv} GB at the mean context) fits the {room} GB the engine leaves it, so no wave forms; the model "
            "is bound by the longest response at 32 as at 128 GPUs. Nor does a limit of verl's engine cap those 256 "
            "sequences: its rollout default max_num_seqs was 1,024 a replica then (256 from 2026-01-24), and its "
            "default memory fraction 0.5 (0.8 in its fully-async scripts) still leaves the KV cache room. And the "
            f"same table's 64-GPU colocated run generates in {v3.VERL_GEN_64_S:g} s, faster than the 128-GPU run's "
            f"{v3.VERL_GEN_128_S:g} s and {v3.VERL_GEN_32_S / v3.VERL_GEN_64_S:.2f}× faster than the 32-GPU run with "
            "twice its GPUs, more than twice the GPUs can give: the runs differ in more than their GPUs (responses "
            "whose lengths evolve over 400 steps, engine settings the doc does not give), so no term in the GPUs "
            "would carry the three runs together, and none is added.")


# What the model gives NeMo RL's 8B one step off-policy (``nemo_8b_off_figures``): millions of
# tokens a step, seconds of training compute at the class MFU, the MFU the published step needs at
# least, seconds of FSDP gathers, the steps (s) of this row and of Qwen3-30B-A3B on-policy were
# Megatron's distributed optimizer charged instead (``megatron_step_s``), and this row's step were its
# verifier charged beside generation (``verifier_beside_generation_s``).
NEMO_8B_OFF = ("2.57", "74", "0.40", "3", "80", "148", "81.02")


def nemo_8b_off() -> str:
    """Why NeMo RL's Llama-3.1-8B one step off-policy is not carried."""
    tokens, compute, need, gathers, step_8b, step_30b, verifier_moved = NEMO_8B_OFF
    run, moe_run = v3.nemo_run("nemo_8b_off"), v3.nemo_run("nemo_30b_on")
    mfu = v3.nemo_shape(run).mfu
    return (f"Training-bound: at the class default MFU {mfu:g} the log-probs, the reference log-probs and the "
            f"update of {tokens}M tokens on the {run.gpus - (run.rollout or 0)} training H100 take {compute} s of "
            f"compute, more than the published {run.published:g} s step, which bounds NeMo's training (one step "
            f"off-policy: max(generation, training) + refit), so NeMo's Megatron runs this 8B at {need} MFU or more; "
            "the model also charges a pure data-parallel layout FSDP's gathers each micro-batch "
            f"({gathers} s), which Megatron's distributed optimizer pays once a step. NeMo's trainer does every "
            "pass the model charges (its async loop recomputes the old policy's log-probs and the reference's, "
            "nemo_rl/algorithms/grpo.py), packs sequences (micro-batches of 4,096 tokens, 8,192 for log-probs) and "
            "recomputes activations (the recipe's activation_checkpointing: a forward pass more than the model "
            "charges); only the verifier runs elsewhere, with the trajectories on the generation side, and charging "
            f"it there gives {verifier_moved} s, still over the band's {run.published * (1 + v3.STEP_BAND):.1f}. "
            "The default MFU is the "
            "conservative end of the published 35–46 % (row mfu_default) and sets every scenario's training, so it "
            "is not moved for one row. (The table's layout for this row is PP1; PP2 is the on-policy row's.) "
            "Charging NeMo's Megatron backend its distributed optimizer instead of FSDP's gathers (full weights on "
            f"every data-parallel rank, one gradient all-reduce a step) would bring this row to ≈ {step_8b} s, inside "
            f"its band, but would take Qwen3-30B-A3B on-policy, pure data parallel in training too (TP1 EP8), to "
            f"≈ {step_30b} s, under its band's {moe_run.published * (1 - v3.STEP_BAND):g}, so that is not done for "
            "one row either.")


NOT_CARRIED: dict[str, str] = {
    "verl_gen_32": verl_gen_32(),
    "nemo_8b_off": nemo_8b_off(),
    "nemo_235b_on": across_nodes("nemo_235b_on"),
    "nemo_dsv3_on": across_nodes("nemo_dsv3_on") + " Its training is short too: the off-policy row's 64.9 s less its 14 s refit "
    "puts max(generation, training) near 51 s, and this row's 134 s puts generation + training near 129 s, so "
    "each takes ≈ 50 s, where the model's log-probs, reference and update at MFU 0.35 take 8 s, which no decode "
    "term would mend.",
    "nemo_dsv3_off": across_nodes("nemo_dsv3_off") + " Its refit is carried (NCCL's packed broadcast, the "
    "weight-sync row: 13.1 s against 14.2), so the step is max(generation, training) + refit with the "
    "generation of 17 s too fast by the same cross-node gap.",
    "nemo_dsv3_dapo": "The run (the recipe as its test-suite script runs it: 64 prompts × 8, batch_multiplier 3, so "
    "192 prompts × 8 generated a round, up to 10 rounds until 64 prompts with a learning signal remain) trains "
    "512 samples a step; the step time is the corrected 458 s (the v0.5.0 table's 974 s repeated the mean "
    "generated length). How many generation rounds a step took is not published, and vLLM runs tensor parallel "
    "64 across 8 nodes with enforce_eager (no CUDA graphs): with its all-reduces at NCCL's latency (45 µs on 8 "
    "nodes) the model gives 31 s for one round of the trained batch, 43 s for one round of 1,536, and even ten "
    "rounds of 1,536 (≈ 331 s) stay below the band, so both the rounds and eager decoding across nodes would be "
    "needed, and neither is sourced.",
}


def allreduce_latency_to_carry(run: v3.NemoRun, hw: rl.Hardware) -> float:
    """The one all-reduce latency (seconds, the same at any number of NVLink domains) that brings a
    row whose rollout is tensor parallel across nodes to its band's lower end (bisection)."""
    lo_s, hi_s, target = 0.0, 0.01, run.published * (1 - v3.STEP_BAND)
    for _ in range(30):
        mid = (lo_s + hi_s) / 2.0
        hw_mid = dataclasses.replace(hw, tp_allreduce_latency_s=mid, tp_allreduce_doubling_s=0.0)
        lo_s, hi_s = (mid, hi_s) if float(v3.nemo_times(run, hw_mid).total.mean()) < target else (lo_s, mid)
    return (lo_s + hi_s) / 2.0


def across_numbers(run: v3.NemoRun, hw: rl.Hardware) -> tuple[str, str, str, str]:
    """What a row across nodes' reason quotes (``ACROSS``): ms of all-reduce latency a decode step
    (2 × layers × NCCL's latency at its nodes), seconds that latency adds to the step, simulated ÷
    published, and µs an all-reduce would need to carry it (``allreduce_latency_to_carry``)."""
    layers = run.policy.layers or 0
    latency = network.small_allreduce_latency_s(run.gen_tp // hw.nvlink_gpus, hw.tp_allreduce_latency_s,
                                                hw.tp_allreduce_doubling_s)
    with_it = float(v3.nemo_times(run, hw).total.mean())
    without = float(v3.nemo_times(run, dataclasses.replace(hw, tp_allreduce_latency_s=0.0,
                                                           tp_allreduce_doubling_s=0.0)).total.mean())
    return (f"{2 * layers * latency * 1e3:.1f}", f"{with_it - without:.0f}", f"{with_it / run.published:.2f}",
            f"{allreduce_latency_to_carry(run, hw) * 1e6:.0f}")


class VerlGen32(NamedTuple):
    """What the verl generation row on 32 H20 quotes (``verl_gen_32_figures``)."""

    tokens_s_gpu: float  # generated tokens a second a GPU at the published generation time
    peak_share: float  # the FLOP/s those tokens take (2·P a token) ÷ the GPU's BF16 peak
    roofline_share: float  # tokens_s_gpu ÷ the memory roofline's tokens/s a GPU at ``batch``
    eta: float  # the engine's share of HBM bandwidth the roofline reads at
    batch: float  # sequences a GPU: the step's samples over the rollout GPUs, as the KV cache holds them all
    kv_gb: float  # GB of KV cache a GPU's ``batch`` holds at the mean context
    room_gb: float  # GB a GPU's engine leaves for KV cache beside the weights


def verl_gen_32_figures(hw: rl.Hardware) -> VerlGen32:
    """verl's generation on 32 H20 (``hw``) as the row computes it (its class, its length draws):
    the published time as tokens/s a GPU, as a share of the BF16 peak, and as a share of the memory
    roofline, the decode step of ``decode.decode_step_s`` with its compute and floor left out: the
    weights and the batch's KV cache at the mean context (``rl.mean_context``) read once a step at
    the engine's η of HBM bandwidth."""
    sh, d = v3.verl_shape(32), v3.verl_draws()
    engine = hw.for_engine(sh.engine, sh.memory_fraction)
    lay = rl.layout(sh, hw)
    tokens_s_gpu = float(d.length_sum.mean()) / (v3.VERL_GEN_32_S * sh.rollout_gpus)
    # Seconds the published tokens take at the full BF16 peak, over the seconds they took.
    peak_share = float(rl.forward_s(sh.params_b, tokens_s_gpu, 1, engine.tflops(sh.rollout_precision), 1.0))
    context = float(rl.mean_context(sh.prompt_tokens, d.length_sum, d.length_sq_sum).mean())
    batch = min(lay.kv_capacity_tokens / context, sh.samples / lay.replicas)  # sequences a replica, as the rollout takes them
    kv_read = lay.kv_bytes_per_token * batch * context
    memory_s = float(rl.decode_step_s(rl.weight_bytes(sh.params_b, sh.rollout_bytes_per_param), kv_read, batch,
                                      lay.rollout_tp, dataclasses.replace(engine, step_floor_s=0.0), 0.0, 1.0))
    roofline = batch / memory_s / lay.rollout_tp
    return VerlGen32(tokens_s_gpu, peak_share, tokens_s_gpu / roofline, engine.mem_efficiency,
                     batch / lay.rollout_tp, kv_read / lay.rollout_tp / 1e9,
                     lay.kv_capacity_tokens * lay.kv_bytes_per_token / lay.rollout_tp / 1e9)


def verl_gen_32_quoted(f: VerlGen32) -> tuple[str, ...]:
    """``VerlGen32`` as the reason quotes it (``VERL_GEN_32``): tokens/s to the nearest ten, shares
    and η in whole per cent, GB whole."""
    return (f"{round(f.tokens_s_gpu, -1):,.0f}", f"{100 * f.peak_share:.0f}", f"{100 * f.roofline_share:.0f}",
            f"{100 * f.eta:.0f}", f"{f.batch:.0f}", f"{f.kv_gb:.0f}", f"{f.room_gb:.0f}")


def nemo_tokens(run: v3.NemoRun) -> np.ndarray:
    """Tokens a NeMo RL row trains on, per iteration: every sample's prompt and response."""
    sh = v3.nemo_shape(run)
    return sh.samples * sh.prompt_tokens + v3.nemo_draws(run).length_sum


def training_compute_s(run: v3.NemoRun, hw: rl.Hardware) -> np.ndarray:
    """Seconds of FLOPs alone in a NeMo RL row's training, per iteration, at the class MFU: a
    forward pass (``rl.forward_s``, 2·P·T) for the log-probs and one for the reference, three (6·P·T)
    an epoch for the update; no fixed costs, gathers or imbalance."""
    sh = v3.nemo_shape(run)
    passes = int(sh.recompute_logprobs) + int(sh.reference_model) + 3 * sh.epochs
    return passes * rl.forward_s(sh.active_b, nemo_tokens(run), sh.train_gpus, hw.tflops(sh.train_precision), sh.mfu)


def fsdp_gathers_s(run: v3.NemoRun, hw: rl.Hardware) -> np.ndarray:
    """Seconds of FSDP parameter traffic the model charges a NeMo RL row's training, per iteration
    (zero unless its training layout is pure data parallel): an all-gather of the policy's weights
    before each micro-batch's forward in the log-probs and the reference, and two all-gathers and a
    reduce-scatter each micro-batch of the update (``training.fsdp_traffic_s``), with the
    micro-batches ``training.microbatches_per_step`` gives."""
    sh, tokens = v3.nemo_shape(run), nemo_tokens(run)
    lay = rl.layout(sh, hw)
    if lay.train_tp * lay.train_pp > 1 or lay.data_parallel <= 1:
        return np.zeros_like(tokens)
    w, ranks = rl.weight_bytes(sh.params_b, sh.bytes_per_param), lay.data_parallel
    busbw = rl.train_busbw_gb_s(sh, hw, hw.nvlink_gpus)
    width, steps = hw.microbatch_tokens, sh.minibatches * sh.epochs
    forwards = (int(sh.recompute_logprobs) + int(sh.reference_model)) * training.fsdp_traffic_s(
        w, ranks, busbw, training.microbatches_per_step(tokens, 1, ranks, width), backward=False)
    update = training.fsdp_traffic_s(
        w, ranks, busbw, steps * training.microbatches_per_step(tokens * sh.epochs, steps, ranks, width), backward=True)
    return forwards + update


def megatron_step_s(run: v3.NemoRun, hw: rl.Hardware) -> float:
    """A NeMo RL row's step (seconds, mean over iterations) were its pure data-parallel training
    charged as Megatron's distributed optimizer runs it, not as FSDP: full weights on every
    data-parallel rank, so no gathers (``fsdp_gathers_s``), and one all-reduce of the gradients an
    optimizer step, as ``rl.update_s`` charges a tensor or pipeline parallel layout. The model has
    no such layout: its phase times with that swap, the schedule kept (colocated: in series;
    one step off-policy: max(generation, training) + refit)."""
    sh, t = v3.nemo_shape(run), v3.nemo_times(run, hw)
    lay = rl.layout(sh, hw)
    grads = sh.minibatches * sh.epochs * network.allreduce_s(rl.weight_bytes(sh.params_b, sh.bytes_per_param),
                                                             lay.data_parallel, rl.train_busbw_gb_s(sh, hw, hw.nvlink_gpus))
    train = t.logprobs + t.scoring + t.update - fsdp_gathers_s(run, hw) + grads
    generation = t.rollout + t.overhead
    total = (np.maximum(generation, train) if sh.asynchronous else generation + train) + t.sync
    return float(np.mean(total))


def verifier_beside_generation_s(run: v3.NemoRun, hw: rl.Hardware) -> float:
    """A one step off-policy NeMo RL row's step (seconds, mean over iterations) were its verifier run
    with the trajectories on the generation side, as NeMo's async trainer reads the rewards its
    trajectory collector computed, instead of beside training: max(generation + the verifier on the
    generating GPUs' workers, training less it on the training GPUs') + refit."""
    sh, t = v3.nemo_shape(run), v3.nemo_times(run, hw)
    beside_training = rl.verifier_s(sh.samples, sh.verifier_seconds_per_sample, sh.train_gpus, hw.verifier_workers)
    beside_generation = rl.verifier_s(sh.samples, sh.verifier_seconds_per_sample, sh.rollout_gpus,
                                      hw.verifier_workers)
    train = t.logprobs + t.scoring + t.update - beside_training
    return float(np.mean(np.maximum(t.rollout + t.overhead + beside_generation, train) + t.sync))


def mfu_to_fit(run: v3.NemoRun, hw: rl.Hardware) -> float:
    """The least MFU at which a one-step off-policy NeMo RL row's training compute
    (``training_compute_s``) fits its published step less the model's refit, floored to the
    hundredth (a lower bound, quoted as "or more": at the floored value itself it does not quite
    fit), since the step is at least training + refit."""
    need = v3.nemo_shape(run).mfu * float(training_compute_s(run, hw).mean())
    need /= run.published - float(v3.nemo_times(run, hw).sync.mean())
    return math.floor(need * 100.0) / 100.0


def nemo_8b_off_quoted(hw: rl.Hardware) -> tuple[str, ...]:
    """What NeMo RL's 8B one step off-policy reason quotes (``NEMO_8B_OFF``) on ``hw`` (H100)."""
    run = v3.nemo_run("nemo_8b_off")
    return (f"{float(nemo_tokens(run).mean()) / 1e6:.2f}", f"{float(training_compute_s(run, hw).mean()):.0f}",
            f"{mfu_to_fit(run, hw):.2f}", f"{float(fsdp_gathers_s(run, hw).mean()):.0f}",
            f"{megatron_step_s(run, hw):.0f}", f"{megatron_step_s(v3.nemo_run('nemo_30b_on'), hw):.0f}",
            f"{verifier_beside_generation_s(run, hw):.2f}")
