"""RL iteration time, model v2 (DESIGN.md section 3): pure, vectorised over iterations.

Symbols: P policy parameters (billions), β bytes per parameter (2, bf16), W = β·P·1e9 weight
bytes, F peak dense FLOP/s of a GPU, B HBM bytes/s, M HBM bytes, η the memory efficiency and
t_floor the per-step latency floor of decode (catalog ``rl.*``), kv the KV-cache bytes per token,
n = prompts × samples, Lp prompt tokens, L_i response lengths (capped), T = Σ (Lp + L_i).

*Rollout* runs on R = G_r ÷ g replicas of g GPUs (tensor parallel within a node, TP = min(g,
GPUs per node); pipeline stages across nodes beyond). A decode step of a replica reads the weights
once and the KV cache of every active sequence, and takes at least t_floor:
``t_step = max(t_floor, (W + kv · Σ context) / (g·B·η), 2·P·1e9·batch / (g·F·mfu))``.

- sync drain: ``max(max L · t_1, max L · W / (TP·B·η) + kv · Σ (Lp·L_i + L_i²/2) / (R·g·B·η))``:
  the longest response alone at ``t_1 = max(t_floor, W / (TP·B·η))`` a token (one token passes
  every pipeline stage in turn), or its weight reads plus the KV traffic shared by all replicas,
  whichever binds (a step is the larger of the floor and its memory time). When the KV memory
  holds only a share f of a replica's sequences, the rest are admitted in waves and the longest
  response starts on average (1 − f) × the full-batch time ÷ 2 late;
- full batch: ``Σ L`` tokens at the steady rate of replicas whose batch fills the KV memory
  left after the weights (``g·M·kv_memory_fraction − W``), with a sequence's mean context
  ``c = Lp + Σ L² / (2 Σ L)`` (an active sequence is met in proportion to its length);
- compute: ``2·P·1e9·Σ L / (G_r·F·mfu)``.

Sync rollout = max(drain, full batch with the n sequences, compute). Async with staleness s:
max(full batch with up to (s+1)·n sequences in flight, drain ÷ (s+1), compute), plus, per
iteration, the re-prefill of the sequences in flight when the weights change, on the rollout
GPUs (so it delays generation, not training). The rollout engine runs ahead only as far as it
pays (the best staleness 0 ≤ s' ≤ s per iteration, 0 being a synchronous rollout with nothing in
flight), so more staleness is never slower, async is never slower than sync on the same GPUs,
and the speed-up levels off at the throughput bound. (A larger KV cache per token never speeds a
rollout; in async mode it shrinks the batch in flight and so the re-prefill with it, which can
make an async iteration marginally faster.)

| phase | seconds |
|---|---|
| log-probs (``recompute_logprobs``) | 2·P·1e9·T / (G_t·F·mfu) |
| scoring | reference 2·P·1e9·T / (G_t·F·mfu); reward model 2·P_x·1e9·T / (G_t·F·mfu); or verifier n·s / (G_t·w) |
| update | 6·P·1e9·T·epochs / (G_t·F·mfu) ÷ (1 − bubble) + minibatches·epochs·all-reduce(β·P·1e9 / (TP·PP), DP) |
| sync | weight sync W / busbw across the fabric (disaggregated), reshard W / NVLink busbw (colocated) |
| overhead | async: re-prefill of the in-flight context on the rollout GPUs, 2·P·1e9·tokens / (G_r·F·mfu) |

Iteration: colocated and disaggregated sync = rollout + log-probs + scoring + update + sync;
async = max(rollout + overhead, log-probs + scoring + update) + sync.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from costsim.models import network

# KV-cache bytes per token of common grouped-query-attention models, 2 · layers · kv_heads ·
# head_dim · 2 bytes (bf16), from their config.json: (params B, bytes, model). Defaults for other
# sizes are interpolated log-log between neighbours.
KV_REFERENCE = (
    (0.5, 12_288, "Qwen2.5-0.5B: 24 layers, 2 KV heads, head dim 64"),
    (1.5, 28_672, "Qwen2.5-1.5B: 28 layers, 2 KV heads, head dim 128"),
    (3.0, 36_864, "Qwen2.5-3B: 36 layers, 2 KV heads, head dim 128"),
    (7.0, 57_344, "Qwen2.5-7B: 28 layers, 4 KV heads, head dim 128"),
    (14.0, 196_608, "Qwen2.5-14B: 48 layers, 8 KV heads, head dim 128"),
    (32.0, 262_144, "Qwen2.5-32B: 64 layers, 8 KV heads, head dim 128"),
    (72.0, 327_680, "Qwen2.5-72B: 80 layers, 8 KV heads, head dim 128"),
    (405.0, 516_096, "Llama-3.1-405B: 126 layers, 8 KV heads, head dim 128"),
)
# Default parallel layouts [A]: the smallest tensor-parallel (TP, TP·PP) degree at which the weights
# take at most half the memory, leaving the rest to the KV cache (rollout) or activations (training);
# vLLM's and Megatron's own sizing guides pick TP the same way. A scenario's class fields override it.
WEIGHT_SHARE = 0.5  # default rollout TP: the weights take at most half the replica's rollout memory
TRAIN_BYTES_PER_PARAM = 4.0  # bf16 weights + gradients per model-parallel rank
OPTIMIZER_BYTES_PER_PARAM = 12.0  # fp32 master weights and Adam moments, sharded over every training GPU
TRAIN_SHARE = 0.5  # default TP·PP: weights and gradients take at most half a GPU's memory
MAX_STALENESS_SEARCH = 256  # async: staleness values tried per iteration (beyond, the pool no longer grows)


@dataclass(frozen=True)
class Hardware:
    """What an option's GPUs and fabric contribute to an iteration. Units in the names;
    ``inter_busbw_gb_s`` is a whole node's busbw across the fabric (``network.inter_node_busbw_gb_s``)."""

    bf16_dense_tflops: float
    hbm_tb_s: float
    memory_gb: float
    gpus_per_node: int  # the NVLink domain: a node, or a cloud instance
    nvlink_busbw_gb_s: float
    inter_busbw_gb_s: float
    mem_efficiency: float  # η_mem: share of HBM bandwidth decode achieves
    step_floor_s: float  # t_floor: a decode step's latency floor
    kv_memory_fraction: float  # share of HBM a rollout engine gives weights and KV cache
    verifier_workers: int  # CPU verifier workers per GPU (catalog ``verifier_workers_per_gpu``)


@dataclass(frozen=True)
class Shape:
    """A job class's iteration in the model's symbols (plain numbers; ``None``: the default rule)."""

    params_b: float
    gpus: int
    rollout_gpus: int
    train_gpus: int
    disaggregated: bool
    asynchronous: bool
    staleness: int
    samples: int
    prompt_tokens: float
    reference_model: bool
    reward_model_params_b: float | None  # None: verifier
    verifier_seconds_per_sample: float
    epochs: int
    minibatches: int
    mfu: float
    kv_bytes_per_token: float | None = None
    rollout_tp: int | None = None
    train_tp: int | None = None
    train_pp: int | None = None
    recompute_logprobs: bool = True
    decode_tokens_per_s_per_gpu: float | None = None  # override of the full-batch rate
    sequence_tokens_per_s: float | None = None  # override of the straggler's pace
    bytes_per_param: float = 2.0


@dataclass(frozen=True)
class Layout:
    """How a class runs on one option's GPUs: rollout replicas and the training layout."""

    rollout_tp: int  # GPUs per rollout replica: tensor parallel within a node, pipeline stages beyond
    replicas: int
    train_tp: int
    train_pp: int
    data_parallel: int
    kv_bytes_per_token: float
    kv_capacity_tokens: float  # per replica
    rollout_tensor: int = 1  # the replica's tensor-parallel width, at most an NVLink domain


@dataclass(frozen=True)
class PhaseTimes:
    """Seconds per iteration, one entry per iteration. ``straggler`` is the part of ``rollout``
    spent on the longest response alone (not a phase of its own); ``total`` is the iteration."""

    rollout: np.ndarray
    logprobs: np.ndarray
    scoring: np.ndarray
    update: np.ndarray
    sync: np.ndarray
    overhead: np.ndarray
    total: np.ndarray
    straggler: np.ndarray


def weight_bytes(params_b: float, bytes_per_param: float = 2.0) -> float:
    """Bytes of a model's weights."""
    return bytes_per_param * params_b * 1e9


def default_kv_bytes_per_token(params_b: float) -> float:
    """KV-cache bytes per token for a model of this size: ``KV_REFERENCE``, interpolated log-log
    (held flat beyond its ends)."""
    p = np.log([r[0] for r in KV_REFERENCE])
    kv = np.log([r[1] for r in KV_REFERENCE])
    return float(np.exp(np.interp(math.log(params_b), p, kv)))


def _pow2_at_most(n: int) -> int:
    return 1 << (max(int(n), 1).bit_length() - 1)


def kv_capacity_tokens(params_b: float, tp: int, hw: Hardware, kv_bytes: float, bytes_per_param: float = 2.0) -> float:
    """Tokens of KV cache a replica of ``tp`` GPUs holds beside the weights (≤ 0: it does not fit)."""
    return (tp * hw.memory_gb * 1e9 * hw.kv_memory_fraction - weight_bytes(params_b, bytes_per_param)) / kv_bytes


def default_rollout_tp(params_b: float, rollout_gpus: int, hw: Hardware, bytes_per_param: float = 2.0) -> int:
    """Smallest power of two whose replica keeps the weights within ``WEIGHT_SHARE`` of its rollout
    memory, at most the rollout GPUs."""
    need = weight_bytes(params_b, bytes_per_param) / (WEIGHT_SHARE * hw.memory_gb * 1e9 * hw.kv_memory_fraction)
    tp = 1 << max(math.ceil(math.log2(max(need, 1.0))), 0)
    return min(tp, _pow2_at_most(rollout_gpus))


def default_train_parallel(params_b: float, train_gpus: int, hw: Hardware) -> tuple[int, int]:
    """(TP, PP): the smallest power-of-two model-parallel degree whose rank holds the bf16 weights
    and gradients in ``TRAIN_SHARE`` of a GPU's memory and, with the optimizer states sharded over
    every training GPU, fits the GPU; tensor parallel up to the NVLink domain, pipeline beyond; at
    most the training GPUs."""
    p, mem = params_b * 1e9, hw.memory_gb * 1e9
    top = _pow2_at_most(train_gpus)
    mp = 1
    while mp < top and (TRAIN_BYTES_PER_PARAM * p / mp > TRAIN_SHARE * mem
                        or TRAIN_BYTES_PER_PARAM * p / mp + OPTIMIZER_BYTES_PER_PARAM * p / train_gpus > mem):
        mp *= 2
    tp = min(mp, _pow2_at_most(hw.gpus_per_node))
    return tp, mp // tp


def layout(shape: Shape, hw: Hardware) -> Layout:
    """The class's layout on this hardware: explicit fields, or the default rules."""
    kv = shape.kv_bytes_per_token or default_kv_bytes_per_token(shape.params_b)
    tp = shape.rollout_tp or default_rollout_tp(shape.params_b, shape.rollout_gpus, hw, shape.bytes_per_param)
    if shape.train_tp is not None or shape.train_pp is not None:
        ttp, tpp = shape.train_tp or 1, shape.train_pp or 1
    else:
        ttp, tpp = default_train_parallel(shape.params_b, shape.train_gpus, hw)
    return Layout(
        rollout_tp=tp, replicas=max(shape.rollout_gpus // tp, 1), train_tp=ttp, train_pp=tpp,
        data_parallel=max(shape.train_gpus // (ttp * tpp), 1), kv_bytes_per_token=kv,
        kv_capacity_tokens=kv_capacity_tokens(shape.params_b, tp, hw, kv, shape.bytes_per_param),
        rollout_tensor=min(tp, hw.gpus_per_node),
    )


def fit_problem(shape: Shape, hw: Hardware) -> str | None:
    """Why this class cannot run on this hardware (a sentence), or None."""
    lay = layout(shape, hw)
    w_gb = weight_bytes(shape.params_b, shape.bytes_per_param) / 1e9
    if lay.rollout_tp > shape.rollout_gpus:
        return f"rollout tensor parallel {lay.rollout_tp} is more than its {shape.rollout_gpus} rollout GPUs"
    if lay.kv_capacity_tokens < 1:
        return (f"the {shape.params_b:g}B model's {w_gb:,.0f} GB of weights leave no room for a KV cache on "
                f"{lay.rollout_tp} GPU(s) of {hw.memory_gb:g} GB per rollout replica: raise rollout.tensor_parallel")
    mp = lay.train_tp * lay.train_pp
    if mp > shape.train_gpus:
        return f"training parallelism tp × pp = {mp} is more than its {shape.train_gpus} training GPUs"
    if lay.train_tp > hw.gpus_per_node:
        return f"training tensor parallel {lay.train_tp} spans more than one {hw.gpus_per_node}-GPU node"
    per_gpu = (TRAIN_BYTES_PER_PARAM * shape.params_b * 1e9 / mp
               + OPTIMIZER_BYTES_PER_PARAM * shape.params_b * 1e9 / shape.train_gpus)
    if per_gpu > hw.memory_gb * 1e9:
        return (f"training the {shape.params_b:g}B model needs {per_gpu / 1e9:,.0f} GB per GPU at tp × pp = {mp} "
                f"on {shape.train_gpus} GPUs, more than the {hw.memory_gb:g} GB a GPU has")
    return None


def decode_step_s(weight_b: float, kv_read_bytes, batch, tp: int, hw: Hardware, flops_per_token: float, mfu: float):
    """One decode step of a replica of ``tp`` GPUs: the weights and ``kv_read_bytes`` of KV cache
    read at η of HBM bandwidth, at least the floor, at least the compute of ``batch`` tokens."""
    memory = (weight_b + np.asarray(kv_read_bytes)) / (tp * hw.hbm_tb_s * 1e12 * hw.mem_efficiency)
    compute = flops_per_token * np.asarray(batch) / (tp * hw.bf16_dense_tflops * 1e12 * mfu)
    return np.maximum(np.maximum(hw.step_floor_s, memory), compute)


def drain_terms(len_max, len_sum, len_sq_sum, prompt_tokens: float, kv_bytes: float, replicas: int, gpus: int,
                hw: Hardware, single_step_s: float, weight_step_s: float):
    """The two totals a draining synchronous rollout is bounded by (seconds): the longest response
    alone at ``single_step_s`` a token, and its weight reads (``weight_step_s`` a token) plus the
    KV-cache reads of all sequences shared over the replicas."""
    kv_reads = kv_bytes * (prompt_tokens * np.asarray(len_sum) + np.asarray(len_sq_sum) / 2.0)
    memory = np.asarray(len_max) * weight_step_s + kv_reads / (replicas * gpus * hw.hbm_tb_s * 1e12 * hw.mem_efficiency)
    return np.asarray(len_max) * single_step_s, memory


def drain_s(len_max, len_sum, len_sq_sum, prompt_tokens: float, kv_bytes: float, replicas: int, gpus: int,
            hw: Hardware, single_step_s: float, weight_step_s: float):
    """A synchronous rollout that starts every sequence together and drains (seconds): the larger of
    ``drain_terms``. A step takes the larger of the floor and its memory time, so the sum of steps
    lies between the larger and the sum of the two totals; it equals the larger when one of them
    binds at every step (the floor for small models, memory for large ones)."""
    return np.maximum(*drain_terms(len_max, len_sum, len_sq_sum, prompt_tokens, kv_bytes, replicas, gpus, hw,
                                   single_step_s, weight_step_s))


def forward_s(params_b: float, tokens, gpus: int, tflops: float, mfu: float):
    """One forward pass over ``tokens``: 2 · P · tokens FLOPs."""
    return 2.0 * params_b * 1e9 * np.asarray(tokens) / (gpus * tflops * 1e12 * mfu)


def verifier_s(samples: int, seconds_per_sample: float, gpus: int, workers_per_gpu: int) -> float:
    """Verifying every sample on the CPU workers beside the scoring GPUs."""
    return samples * seconds_per_sample / (gpus * workers_per_gpu)


def update_s(shape: Shape, lay: Layout, tokens, hw: Hardware):
    """Training: 6 · P · tokens · epochs FLOPs stretched by the pipeline bubble, plus one gradient
    all-reduce per optimizer step over the data-parallel group (β·P / (TP·PP) bytes per GPU)."""
    mp = lay.train_tp * lay.train_pp
    micro = max(math.ceil(shape.samples / (shape.minibatches * lay.data_parallel)), 1)
    bubble = network.pipeline_bubble(lay.train_pp, micro)
    compute = (6.0 * shape.params_b * 1e9 * np.asarray(tokens) * shape.epochs
               / (shape.train_gpus * hw.bf16_dense_tflops * 1e12 * shape.mfu) / (1.0 - bubble))
    busbw = network.group_busbw_gb_s(hw.gpus_per_node // mp, hw.gpus_per_node, hw.nvlink_busbw_gb_s,
                                     hw.inter_busbw_gb_s, across_nodes=shape.train_gpus > hw.gpus_per_node)
    grads = weight_bytes(shape.params_b, shape.bytes_per_param) / mp
    return compute + shape.minibatches * shape.epochs * network.allreduce_s(grads, lay.data_parallel, busbw)


def sync_s(shape: Shape, hw: Hardware) -> float:
    """Weights to the rollout engines: across the fabric when disaggregated over several nodes,
    a reshard inside the node when colocated."""
    w = weight_bytes(shape.params_b, shape.bytes_per_param)
    if shape.disaggregated and shape.gpus > hw.gpus_per_node:
        return network.transfer_s(w, min(hw.inter_busbw_gb_s, hw.nvlink_busbw_gb_s))
    return network.transfer_s(w, hw.nvlink_busbw_gb_s)


@dataclass(frozen=True)
class _Rollout:
    time: np.ndarray
    straggler: np.ndarray
    inflight_tokens: np.ndarray  # context held in KV when the weights change


def mean_context(prompt_tokens: float, len_sum, len_sq):
    """Tokens of context an active sequence holds on average, per iteration: Lp + Σ L² / (2 Σ L)
    (an active sequence is met in proportion to its length, and is half way through it)."""
    return prompt_tokens + len_sq / (2.0 * np.maximum(len_sum, 1e-12))


def _rollout(shape: Shape, lay: Layout, hw: Hardware, len_sum, len_max, context, pool: float, alone, memory,
             single: float, spread: int = 1) -> _Rollout:
    """Rollout with at most ``pool`` sequences available (n synchronous; (s+1)·n async, ``spread``
    = s+1 iterations sharing a drain's worth of work). ``alone`` and ``memory`` are the drain's
    totals (``drain_terms``); with a given full-batch rate the memory total scales with it. When the
    KV memory holds only a share f of the replica's sequences the rest are admitted as others
    finish: the longest response starts on average (1 − f) × the full batch ÷ 2 late. (The KV reads
    done before it starts stay in the memory total: against step-by-step continuous batching this
    overstates one replica's drain by up to a quarter at f ≈ 0.1 and understates 64 replicas'
    by 7–9 % at f ≈ 0.4, where the slowest replica sets the pace; it keeps the drain monotone in
    the KV cache.)"""
    tp, r = lay.rollout_tp, lay.replicas
    batch = np.minimum(lay.kv_capacity_tokens / context, pool / r)  # sequences per replica
    w = weight_bytes(shape.params_b, shape.bytes_per_param)
    step = decode_step_s(w, lay.kv_bytes_per_token * batch * context, batch, tp, hw, 2.0 * shape.params_b * 1e9, shape.mfu)
    rate = batch / step
    if shape.decode_tokens_per_s_per_gpu is not None:
        given = shape.decode_tokens_per_s_per_gpu * tp
        memory = memory * rate / given  # the roofline's memory time at the given rate
        rate = np.full_like(batch, given)
    full = len_sum / (r * rate)
    waiting = np.clip(1.0 - batch * r / pool, 0.0, 1.0)
    drain = (waiting * full / 2.0 + np.maximum(alone, memory)) / spread
    compute = forward_s(shape.params_b, len_sum, r * tp, hw.bf16_dense_tflops, shape.mfu)
    time = np.maximum(np.maximum(full, drain), compute)
    # The straggler holds the rollout only where the drain is strictly the longest bound (with equal
    # lengths the drain's memory total and the full batch are the same number).
    straggler = np.where(drain > np.maximum(full, compute) * (1.0 + 1e-9), len_max * single / spread, 0.0)
    return _Rollout(time, straggler, r * batch * context)


def phase_times(shape: Shape, hw: Hardware, len_sum, len_max, len_sq_sum) -> PhaseTimes:
    """Every phase's seconds for each iteration, given each iteration's Σ L, max L and Σ L² (tokens)."""
    len_sum = np.asarray(len_sum, dtype=float)
    len_max = np.asarray(len_max, dtype=float)
    len_sq = np.asarray(len_sq_sum, dtype=float)
    lay = layout(shape, hw)
    w = weight_bytes(shape.params_b, shape.bytes_per_param)
    tp = lay.rollout_tp
    # One sequence's token passes every pipeline stage in turn: it reads the weights at the
    # bandwidth of one stage's tensor-parallel GPUs.
    weight_step = w / (lay.rollout_tensor * hw.hbm_tb_s * 1e12 * hw.mem_efficiency)
    if shape.sequence_tokens_per_s is not None:
        # The given pace of one sequence alone also bounds its weight reads per token.
        single = 1.0 / shape.sequence_tokens_per_s
        weight_step = min(weight_step, single)
    else:
        single = max(hw.step_floor_s, weight_step)
    alone, memory = drain_terms(len_max, len_sum, len_sq, shape.prompt_tokens, lay.kv_bytes_per_token, lay.replicas,
                                tp, hw, single, weight_step)

    tokens = shape.samples * shape.prompt_tokens + len_sum
    g_t = shape.train_gpus
    zero = np.zeros_like(len_sum)
    logprobs = forward_s(shape.params_b, tokens, g_t, hw.bf16_dense_tflops, shape.mfu) if shape.recompute_logprobs else zero
    scoring = zero
    if shape.reference_model:
        scoring = scoring + forward_s(shape.params_b, tokens, g_t, hw.bf16_dense_tflops, shape.mfu)
    if shape.reward_model_params_b is not None:
        scoring = scoring + forward_s(shape.reward_model_params_b, tokens, g_t, hw.bf16_dense_tflops, shape.mfu)
    else:
        scoring = scoring + verifier_s(shape.samples, shape.verifier_seconds_per_sample, g_t, hw.verifier_workers)
    update = update_s(shape, lay, tokens, hw)
    sync = np.full_like(len_sum, sync_s(shape, hw))
    train = logprobs + scoring + update

    context = mean_context(shape.prompt_tokens, len_sum, len_sq)
    ro = _rollout(shape, lay, hw, len_sum, len_max, context, float(shape.samples), alone, memory, single)
    if not shape.asynchronous:
        return PhaseTimes(ro.time, logprobs, scoring, update, sync, zero, ro.time + train + sync, ro.straggler)

    # The engine can always wait as a synchronous one does (s' = 0: no sequence in flight at the
    # update, no re-prefill), or run up to s iterations ahead.
    best = (ro.time, zero, ro.time + train + sync, ro.straggler)
    for s in _staleness_candidates(shape, lay, context):
        ro = _rollout(shape, lay, hw, len_sum, len_max, context, float(shape.samples * (s + 1)), alone, memory,
                      single, spread=s + 1)
        # Re-prefilling what is in flight when the weights change occupies the rollout GPUs, not
        # the trainers: it delays the next batch of samples only.
        overhead = forward_s(shape.params_b, ro.inflight_tokens, shape.rollout_gpus, hw.bf16_dense_tflops, shape.mfu)
        total = np.maximum(ro.time + overhead, train) + sync
        better = total < best[2]
        best = tuple(np.where(better, new, old) for new, old in zip((ro.time, overhead, total, ro.straggler), best,
                                                                    strict=True))
    return PhaseTimes(best[0], logprobs, scoring, update, sync, best[1], best[2], best[3])


def _staleness_candidates(shape: Shape, lay: Layout, context) -> list[int]:
    """Staleness values s' ≤ s worth trying: every one while the sequence pool (s'+1)·n still
    limits the batch somewhere (capped at ``MAX_STALENESS_SEARCH``), and s itself — beyond the
    point where the KV memory, not the pool, limits the batch, more staleness only shortens the drain."""
    s = shape.staleness
    useful = lay.kv_capacity_tokens * lay.replicas / (shape.samples * float(np.min(context))) if len(context) else 1.0
    last = int(min(s, max(math.ceil(useful), 1), MAX_STALENESS_SEARCH))
    return sorted(set(range(1, last + 1)) | {s})
