"""RL iteration time, model v3 (DESIGN.md section 3): pure, vectorised over iterations. v2's
structure below, with v3's terms from their own modules: prompt prefill (``prefill``), training
fixed costs, FSDP traffic and the rank holding a step's longest sequence (``training``), weight
sync by method (``weight_sync``), MoE (``moe``), FP8 and engine constants (``rl_shape.Hardware``),
one-step off-policy pipelining and partial rollout (``phase_times``).

Symbols: P policy parameters (billions), β bytes per parameter (2, bf16), W = β·P·1e9 weight
bytes, F peak dense FLOP/s of a GPU, B HBM bytes/s, M HBM bytes, η the memory efficiency and
t_floor the per-step latency floor of decode (catalog ``rl.*``), kv the KV-cache bytes per token,
n = prompts × samples, Lp prompt tokens, L_i response lengths (capped), T = Σ (Lp + L_i).

*Rollout* runs on R = G_r ÷ g replicas of g GPUs (tensor parallel, across NVLink domains too: a
lone token reads its shard on all g GPUs at once, as the full batch's steps do,
``decode.lone_token_step_s``). A decode step of a replica reads the weights
once and the KV cache of every active sequence, all-reduces twice a layer across the NICs when
its tensor parallelism spans NVLink domains (vLLM across nodes; ``decode.tp_comm_s``), and takes
at least t_floor:
``t_step = max(t_floor, max((W + kv · Σ context) / (g·B·η), 2·P·1e9·batch / (g·F·mfu)) + t_ar)``.

- sync drain: ``max(max L · t_1, max L · (W / (g·B·η) + t_ar) + kv · Σ (Lp·L_i + L_i²/2) / (R·g·B·η))``:
  the longest response alone at ``t_1 = max(t_floor, W / (g·B·η) + t_ar)`` a token (``t_ar`` the
  all-reduces of one token across domains), or its weight reads plus the KV traffic shared by all replicas,
  whichever binds (a step is the larger of the floor and its memory time). When the KV memory
  holds only a share f of a replica's sequences, the rest are admitted in waves and the longest
  response starts on average (1 − f) × the full-batch time ÷ 2 late;
- full batch: ``Σ L`` tokens at the steady rate of replicas whose batch fills the KV memory
  left after the weights (``g·M·f − W``, f the engine's memory fraction), with a sequence's mean context
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
| log-probs (``recompute_logprobs``) | 2·P_active·1e9·T / (G_t·F·mfu), stretched by the rank holding the longest sequence, + micro-batch costs, FSDP gathers, MoE all-to-alls |
| scoring | reference as log-probs; reward model 2·P_x·1e9·T / (G_t·F·mfu) + its fixed costs; or verifier n·s / (G_t·w) |
| update | 6·P_active·1e9·T·epochs / (G_t·F·mfu) ÷ (1 − bubble), stretched by a step's longest sequence, + step and micro-batch costs, FSDP traffic or minibatches·epochs·all-reduce(β·P·1e9 / (TP·PP), DP), MoE all-to-alls forward and backward |
| sync | the refit by method (``sync_s``: latency per transfer, gather, the path at the method's share, reload), across the NICs when disaggregated beyond an NVLink domain, over NVLink otherwise |
| overhead | async: re-prefill of the in-flight context on the rollout GPUs, at the prefill MFU; the prompts' prefill |

Iteration: colocated and disaggregated sync = rollout + log-probs + scoring + update + sync;
async = max(rollout + overhead, log-probs + scoring + update) + sync.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from costsim.models import moe, network, prefill, training, weight_sync
from costsim.models.decode import decode_step_s, lone_token_step_s, tp_comm_s
from costsim.models.rl_shape import (
    KV_REFERENCE,
    MOE_KV_REFERENCE,
    OPTIMIZER_BYTES_PER_PARAM,
    PRECISION_BYTES,
    TRAIN_BYTES_PER_PARAM,
    TRAIN_SHARE,
    WEIGHT_SHARE,
    Hardware,
    Layout,
    PhaseTimes,
    Shape,
    default_expert_parallel,
    default_kv_bytes_per_token,
    default_rollout_tp,
    default_train_parallel,
    fit_problem,
    kv_capacity_tokens,
    layout,
    weight_bytes,
)

__all__ = [
    "KV_REFERENCE", "MOE_KV_REFERENCE", "OPTIMIZER_BYTES_PER_PARAM", "PRECISION_BYTES", "TRAIN_BYTES_PER_PARAM", "TRAIN_SHARE",
    "WEIGHT_SHARE", "Hardware", "Layout", "PhaseTimes", "Shape", "decode_step_s", "default_expert_parallel",
    "default_kv_bytes_per_token", "default_rollout_tp", "default_train_parallel", "drain_s", "drain_terms",
    "fit_problem", "forward_s", "kv_capacity_tokens", "layout", "logprobs_s", "mean_context", "phase_times",
    "refit_inside_nvlink", "sync_path_gb_s", "sync_s", "tp_comm_s", "train_busbw_gb_s", "update_s", "verifier_s",
    "weight_bytes",
]
MAX_STALENESS_SEARCH = 256  # async: staleness values tried per iteration (beyond, the pool no longer grows)


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


def train_busbw_gb_s(shape: Shape, hw: Hardware, members_per_domain: int) -> float:
    """GB/s a training collective sees with ``members_per_domain`` of its GPUs in each NVLink domain:
    NVLink in one domain, across domains each GPU's NIC (FSDP's traffic, the gradient all-reduce)."""
    return network.group_busbw_gb_s(members_per_domain, hw.nvlink_gpus, hw.nvlink_busbw_gb_s, hw.nic_gb_s,
                                    across_domains=shape.train_gpus > hw.nvlink_gpus)


def _alltoall(shape: Shape, lay: Layout, hw: Hardware, tokens, passes: float):
    """Expert-parallel all-to-all of a pass over ``tokens`` (per GPU share), on NVLink when the EP
    group fits one NVLink domain, else over each GPU's own NIC."""
    ep = lay.expert_parallel
    per_gpu = hw.nvlink_busbw_gb_s if ep <= hw.nvlink_gpus else hw.nic_gb_s
    return moe.alltoall_s(np.asarray(tokens) / shape.train_gpus, shape.active_b, shape.experts_per_token, ep,
                          PRECISION_BYTES[shape.train_precision], per_gpu, passes, shape.layers)


def _pass_fixed(shape: Shape, lay: Layout, tokens, hw: Hardware, steps: int, backward: bool,
                params_b: float | None = None):
    """A training pass's fixed costs: per micro-batch t_mb0 (and per optimizer step t_step0 with a
    backward pass), plus FSDP's parameter traffic when the weights (of ``params_b``, default the
    policy's total) are sharded over the data-parallel ranks (no tensor or pipeline parallelism)."""
    # A data-parallel rank of TP·PP GPUs packs a micro-batch TP·PP GPUs wide. Where every iteration
    # fits one micro-batch a step (most settings) the count is the number 1, not an array.
    width = hw.microbatch_tokens * lay.train_tp * lay.train_pp
    fits = len(np.atleast_1d(tokens)) == 0 or float(np.max(tokens)) <= max(steps, 1) * lay.data_parallel * width
    micro = 1.0 if fits else training.microbatches_per_step(tokens, steps, lay.data_parallel, width)
    per_micro = hw.microbatch_s
    if lay.train_tp * lay.train_pp == 1 and lay.data_parallel > 1:
        w = weight_bytes(shape.params_b if params_b is None else params_b, shape.bytes_per_param)
        busbw = train_busbw_gb_s(shape, hw, hw.nvlink_gpus)
        per_micro += float(training.fsdp_traffic_s(w, lay.data_parallel, busbw, 1.0, backward))
    # One pass over the arrays (millions of iterations): the per-micro-batch costs summed first.
    return training.fixed_s(steps, micro, hw.optimizer_step_s if backward else 0.0, per_micro)


def logprobs_s(shape: Shape, lay: Layout, tokens, hw: Hardware, params_b: float | None = None, longest=None):
    """A forward pass over the iteration's tokens on the training GPUs (log-probs, reference or
    reward model): FLOPs of the active parameters, at least those of the rank holding the
    ``longest`` sequence (tokens, prompt included; None: balanced), per-micro-batch costs and FSDP
    gathers, and the MoE all-to-alls."""
    p = shape.active_b if params_b is None else params_b
    compute = forward_s(p, tokens, shape.train_gpus, hw.tflops(shape.train_precision), shape.mfu)
    if longest is not None:
        compute = compute * training.imbalance(np.asarray(tokens) / lay.data_parallel, longest)
    # A reward model's own weights are gathered, not the policy's.
    fixed = _pass_fixed(shape, lay, tokens, hw, 1, backward=False, params_b=params_b)
    return compute + fixed + (_alltoall(shape, lay, hw, tokens, 1.0) if params_b is None else 0.0)


def update_s(shape: Shape, lay: Layout, tokens, hw: Hardware, longest=None):
    """Training: 6 · P_active · tokens · epochs FLOPs stretched by the pipeline bubble and by the
    rank holding an optimizer step's ``longest`` sequence (tokens, prompt included; None:
    balanced; ``training.imbalance``), the fixed
    costs of each optimizer step and micro-batch, FSDP's parameter traffic or, with tensor or
    pipeline parallelism, one gradient all-reduce per optimizer step over the data-parallel group
    (β·P / (TP·PP) bytes per GPU), and the MoE all-to-alls forward and backward."""
    mp = lay.train_tp * lay.train_pp
    micro = max(math.ceil(shape.samples / (shape.minibatches * lay.data_parallel)), 1)
    bubble = network.pipeline_bubble(lay.train_pp, micro)
    compute = (6.0 * shape.active_b * 1e9 * np.asarray(tokens) * shape.epochs
               / (shape.train_gpus * hw.tflops(shape.train_precision) * 1e12 * shape.mfu) / (1.0 - bubble))
    if longest is not None:
        per_rank_step = np.asarray(tokens) / (shape.minibatches * lay.data_parallel)
        compute = compute * training.imbalance(per_rank_step, longest)
    steps = shape.minibatches * shape.epochs
    fixed = _pass_fixed(shape, lay, np.asarray(tokens) * shape.epochs, hw, steps, backward=True)
    grads = 0.0
    if mp > 1:
        busbw = train_busbw_gb_s(shape, hw, hw.nvlink_gpus // mp)
        grads = steps * network.allreduce_s(weight_bytes(shape.params_b, shape.bytes_per_param) / mp,
                                           lay.data_parallel, busbw)
    # Two all-to-alls a MoE layer forward (dispatch, combine) and their two gradients backward.
    return compute + fixed + grads + _alltoall(shape, lay, hw, np.asarray(tokens) * shape.epochs, 2.0)


def refit_inside_nvlink(shape: Shape, hw: Hardware) -> bool:
    """Whether a refit stays inside one NVLink domain: colocated, or the class's trainers and
    rollout engines together in one (a node, or an NVL72 rack)."""
    return not (shape.disaggregated and shape.gpus > hw.nvlink_gpus)


def sync_path_gb_s(shape: Shape, hw: Hardware) -> float:
    """GB/s of the link a refit crosses between the training and the rollout GPUs: NVLink when
    colocated or inside one NVLink domain, else one GPU's NIC (a broadcast leaves the training
    side through one rank's NIC), or the NVLink domain's NICs for a packed broadcast
    (``weight_sync.broadcast_link_gb_s``)."""
    return weight_sync.broadcast_link_gb_s(shape.sync_method, inside_domain=refit_inside_nvlink(shape, hw),
                                           nvlink_gb_s=hw.nvlink_busbw_gb_s, nic_gb_s=hw.nic_gb_s,
                                           domain_nics_gb_s=hw.inter_busbw_gb_s)


def sync_s(shape: Shape, hw: Hardware, path_gb_s: float | None = None) -> float:
    """Weights to the rollout engines (seconds): gathered from the training layout, sent over the
    slowest link between the pools (``sync_path_gb_s``, or ``path_gb_s`` when the rollout engines are
    elsewhere, e.g. a rented pool behind a dedicated link) and reloaded by the engines
    (``weight_sync.weight_sync_s``); colocated, a reshard over NVLink. NIXL moves shards point to
    point (``weight_sync.point_to_point_s``); a checkpoint engine does so inside an NVLink domain
    when that beats its broadcast (few replicas; many replicas of few trainers broadcast)."""
    lay = layout(shape, hw)
    w = weight_bytes(shape.params_b, shape.rollout_bytes_per_param)
    # A packed refit sends its expert tensors inside its buffers, not one transfer each.
    packed = shape.sync_method in weight_sync.PACKED
    experts = moe.expert_tensors(shape.active_b, shape.experts, shape.layers) if shape.is_moe and not packed else 0
    # A packed refit's buckets are its refit buffers, sized from the GPU's memory.
    method = weight_sync.for_gpu(shape.sync_method, hw.sync_method(shape.sync_method), hw.memory_gb)
    inside = refit_inside_nvlink(shape, hw)
    p2p = None
    if path_gb_s is None and shape.sync_method in (weight_sync.IN_DOMAIN_POINT_TO_POINT if inside
                                                   else weight_sync.POINT_TO_POINT):
        p2p = weight_sync.point_to_point_s(w, link_gb_s=sync_path_gb_s(shape, hw), method=method, rollout_tp=lay.rollout_tp,
                                           replicas=lay.replicas, senders=shape.train_gpus, expert_tensors=experts)
        if shape.sync_method in weight_sync.POINT_TO_POINT:
            return p2p
    path = sync_path_gb_s(shape, hw) if path_gb_s is None else path_gb_s
    mp = lay.train_tp * lay.train_pp * lay.expert_parallel
    shards = mp if mp > 1 else lay.data_parallel
    gather_bw = hw.nvlink_busbw_gb_s if shards <= hw.nvlink_gpus else min(hw.inter_busbw_gb_s, hw.nvlink_busbw_gb_s)
    broadcast = weight_sync.weight_sync_s(w, path_gb_s=path, method=method,
                                          gather=weight_sync.gather_s(w, shards, gather_bw),
                                          rollout_tp=lay.rollout_tp, expert_tensors=experts)
    return broadcast if p2p is None else min(p2p, broadcast)


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
             single: float, spread: float = 1.0, partial: bool = False) -> _Rollout:
    """Rollout with at most ``pool`` sequences available (n synchronous; (s+1)·n async, ``spread``
    = s+1 iterations sharing a drain's worth of work). ``alone`` and ``memory`` are the drain's
    totals (``drain_terms``); with a given full-batch rate the memory total scales with it. When the
    KV memory holds only a share f of the replica's sequences the rest are admitted as others
    finish: the longest response starts on average (1 − f) × the full batch ÷ 2 late. (The KV reads
    done before it starts stay in the memory total: against step-by-step continuous batching this
    overstates one replica's drain by up to a quarter at f ≈ 0.1 and understates 64 replicas'
    by 7–9 % at f ≈ 0.4, where the slowest replica sets the pace; it keeps the drain monotone in
    the KV cache.) With ``partial`` rollout the responses in flight continue under the next
    weights, so no drain holds the iteration: only the throughput bounds it."""
    tp, r = lay.rollout_tp, lay.replicas
    batch = np.minimum(lay.kv_capacity_tokens / context, pool / r)  # sequences per replica
    beta = shape.rollout_bytes_per_param
    # A dense model reads all its weights every step: a number, not an array as long as the iterations.
    touched = (moe.decode_weight_params_b(shape.params_b, shape.active_b, shape.experts, shape.experts_per_token, batch)
               if shape.is_moe else shape.params_b)
    w = beta * 1e9 * touched
    f_r = hw.tflops(shape.rollout_precision)
    step = decode_step_s(w, lay.kv_bytes_per_token * batch * context, batch, tp, replace(hw, bf16_dense_tflops=f_r),
                         2.0 * shape.active_b * 1e9, shape.mfu, tp_comm_s(shape, lay, hw, batch))
    rate = batch / step
    if shape.decode_tokens_per_s_per_gpu is not None:
        given = shape.decode_tokens_per_s_per_gpu * tp
        memory = memory * rate / given  # the roofline's memory time at the given rate
        rate = np.full_like(batch, given)
    full = len_sum / (r * rate)
    waiting = np.clip(1.0 - batch * r / pool, 0.0, 1.0)
    drain = np.zeros_like(full) if partial else (waiting * full / 2.0 + np.maximum(alone, memory)) / spread
    compute = forward_s(shape.active_b, len_sum, r * tp, f_r, shape.mfu)
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
    hw = hw.for_engine(shape.engine, shape.memory_fraction)
    lay = layout(shape, hw)
    if lay.kv_capacity_tokens < 1:
        # No room for a KV cache beside the weights: no rollout to time (a negative capacity would
        # come out as a fast one). The plans refuse such a class first (plan.checks).
        raise ValueError(f"no rollout fits: {fit_problem(shape, hw)}")
    w = weight_bytes(float(moe.decode_weight_params_b(shape.params_b, shape.active_b, shape.experts,
                                                shape.experts_per_token, 1.0)), shape.rollout_bytes_per_param)
    tp = lay.rollout_tp
    # One sequence's token reads its shard of the weights on every GPU of the replica at once, as the
    # full batch's steps do, and, across NVLink domains, waits for every layer's all-reduces.
    weight_step = lone_token_step_s(w, tp, hw, float(tp_comm_s(shape, lay, hw, 1.0)))
    if shape.sequence_tokens_per_s is not None:
        # The given pace of one sequence alone also bounds its weight reads per token.
        single = 1.0 / shape.sequence_tokens_per_s
        weight_step = min(weight_step, single)
    else:
        single = max(hw.step_floor_s, weight_step)
    alone, memory = drain_terms(len_max, len_sum, len_sq, shape.prompt_tokens, lay.kv_bytes_per_token, lay.replicas,
                                tp, hw, single, weight_step)

    tokens = shape.samples * shape.prompt_tokens + len_sum
    zero = np.zeros_like(len_sum)
    # The longest sequence a data-parallel rank must hold whole: the iteration's in a forward pass,
    # an optimizer step's in the update. Skipped (None) where even the longest response cannot
    # outweigh a rank's share of the tokens, as in most settings: the arrays are millions long.
    few = float(np.min(tokens)) / lay.data_parallel if len(tokens) else math.inf
    bound = shape.prompt_tokens + (float(np.max(len_max)) if len(len_max) else 0.0)
    whole = shape.prompt_tokens + len_max if bound > few else None
    in_step = None
    if bound > few / shape.minibatches:
        in_step = shape.prompt_tokens + training.longest_per_step(len_sum, len_sq, len_max, shape.samples,
                                                                  shape.minibatches)
    logprobs = logprobs_s(shape, lay, tokens, hw, longest=whole) if shape.recompute_logprobs else zero
    scoring = zero
    if shape.reference_model:
        scoring = scoring + logprobs_s(shape, lay, tokens, hw, longest=whole)
    if shape.reward_model_params_b is not None:
        scoring = scoring + logprobs_s(shape, lay, tokens, hw, params_b=shape.reward_model_params_b, longest=whole)
    else:
        scoring = scoring + verifier_s(shape.samples, shape.verifier_seconds_per_sample, shape.train_gpus,
                                       hw.verifier_workers)
    update = update_s(shape, lay, tokens, hw, longest=in_step)
    sync = np.full_like(len_sum, sync_s(shape, hw))
    train = logprobs + scoring + update
    f_r = hw.tflops(shape.rollout_precision)
    prompts = prefill.prefill_s(shape.active_b, prefill.rollout_prefill_tokens(shape.samples, shape.prompt_tokens),
                                shape.rollout_gpus, f_r, hw.prefill_mfu)

    context = mean_context(shape.prompt_tokens, len_sum, len_sq)
    ro = _rollout(shape, lay, hw, len_sum, len_max, context, float(shape.samples), alone, memory, single)
    sync_rollout = ro.time + prompts
    if not shape.asynchronous:
        return PhaseTimes(sync_rollout, logprobs, scoring, update, sync, zero, sync_rollout + train + sync,
                          ro.straggler)

    # The engine can always wait as a synchronous one does (s' = 0: no sequence in flight at the
    # update, no re-prefill), or run up to s iterations ahead.
    best = (sync_rollout, zero, sync_rollout + train + sync, ro.straggler)
    if shape.staleness >= 1:
        # One-step off-policy: the next batch is generated whole under the current weights while
        # the trainers train on this one (NeMo RL's async GRPO with trajectory age 1): nothing is in
        # flight when the weights change, so no re-prefill; the prompts' prefill stays rollout work.
        whole = (ro.time, prompts, np.maximum(sync_rollout, train) + sync, ro.straggler)
        better = whole[2] < best[2]
        best = tuple(np.where(better, new, old) for new, old in zip(whole, best, strict=True))
    for s in _staleness_candidates(shape, lay, context):
        ro = _rollout(shape, lay, hw, len_sum, len_max, context, shape.samples * (s + 1.0), alone, memory,
                      single, spread=s + 1.0, partial=shape.partial_rollout)
        # Re-prefilling what is in flight when the weights change occupies the rollout GPUs, not
        # the trainers: it delays the next batch of samples only. Partial rollout keeps the KV cache
        # of the responses in flight (they continue under the new weights): no re-prefill.
        reprefill = zero if shape.partial_rollout else prefill.prefill_s(shape.active_b, ro.inflight_tokens,
                                                                          shape.rollout_gpus, f_r, hw.prefill_mfu)
        overhead = reprefill + prompts
        total = np.maximum(ro.time + overhead, train) + sync
        better = total < best[2]
        best = tuple(np.where(better, new, old) for new, old in zip((ro.time, overhead, total, ro.straggler), best,
                                                                    strict=True))
    return PhaseTimes(best[0], logprobs, scoring, update, sync, best[1], best[2], best[3])


def _staleness_candidates(shape: Shape, lay: Layout, context) -> list[float]:
    """Staleness values s' ≤ s worth trying: every whole one while the sequence pool (s'+1)·n still
    limits the batch somewhere (capped at ``MAX_STALENESS_SEARCH``), and s itself (fractional or
    not) — beyond the point where the KV memory, not the pool, limits the batch, more staleness
    only shortens the drain."""
    s = shape.staleness
    useful = lay.kv_capacity_tokens * lay.replicas / (shape.samples * float(np.min(context))) if len(context) else 1.0
    last = int(min(s, max(math.ceil(useful), 1), MAX_STALENESS_SEARCH))
    return sorted({float(k) for k in range(1, last + 1) if k <= s} | {float(s)})
