"""The RL iteration model's inputs (DESIGN.md section 3): the hardware an option gives a job, the
shape of a job class, and the parallel layout the class runs with on that hardware. Pure: the
phase times built on them are in ``costsim.models.rl``.

An MoE model (``experts`` > 0) holds, checkpoints and syncs ``params_b`` (its total) and computes
with ``active_params_b``; a dense one has active = total. Precision is per phase: ``bf16`` weights
take 2 bytes a parameter and compute at the GPU's dense BF16 peak, ``fp8`` 1 byte at its FP8 peak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from costsim.models import moe
from costsim.models.weight_sync import SyncMethod

PRECISION_BYTES = {"bf16": 2.0, "fp8": 1.0}
DEFAULT_ENGINE = "vllm"

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
# The same for mixture-of-experts models, by total parameters: their attention is set apart from
# their size (few KV heads, MLA), so their active parameters say nothing of it.
MOE_KV_REFERENCE = (
    (21.0, 49_152, "GPT-OSS-20B: 24 layers, 8 KV heads, head dim 64"),
    (30.5, 98_304, "Qwen3-30B-A3B: 48 layers, 4 KV heads, head dim 128"),
    (117.0, 73_728, "GPT-OSS-120B: 36 layers, 8 KV heads, head dim 64"),
    (235.0, 192_512, "Qwen3-235B-A22B: 94 layers, 4 KV heads, head dim 128"),
    (671.0, 70_272, "DeepSeek-V3: 61 layers of MLA, a 512 + 64 latent (one rank's copy)"),
)
# Default parallel layouts [A]: the smallest tensor-parallel (TP, TP·PP) degree at which the weights
# take at most half the memory, leaving the rest to the KV cache (rollout) or activations (training);
# vLLM's and Megatron's own sizing guides pick TP the same way. A scenario's class fields override it.
WEIGHT_SHARE = 0.5  # default rollout TP: the weights take at most half the replica's rollout memory
TRAIN_BYTES_PER_PARAM = 4.0  # bf16 weights + gradients per model-parallel rank
OPTIMIZER_BYTES_PER_PARAM = 12.0  # fp32 master weights and Adam moments, sharded over every training GPU
TRAIN_SHARE = 0.5  # default TP·PP: weights and gradients take at most half a GPU's memory


@dataclass(frozen=True)
class Hardware:
    """What an option's GPUs and fabric contribute to an iteration. Units in the names. A group of
    GPUs inside one NVLink domain (``nvlink_gpus``: a node, a cloud instance, or an NVL72 rack of
    18 four-GPU nodes) talks over NVLink; across domains over the NICs: ``inter_busbw_gb_s`` is a
    whole domain's busbw for a collective (``network.inter_node_busbw_gb_s``), ``nic_gb_s`` what one
    GPU reaches over its own NIC when it alone sends (a refit, an all-to-all). The node as the unit
    a scheduler allocates and a failure takes out is the plan's, not the model's."""

    bf16_dense_tflops: float
    hbm_tb_s: float
    memory_gb: float
    nvlink_gpus: int  # GPUs one NVLink domain joins
    nvlink_busbw_gb_s: float
    inter_busbw_gb_s: float
    nic_gb_s: float  # one GPU's NIC across domains, the fabric's efficiency applied
    mem_efficiency: float  # η_mem: share of HBM bandwidth decode achieves
    step_floor_s: float  # t_floor: a decode step's latency floor
    kv_memory_fraction: float  # share of HBM a rollout engine gives weights and KV cache
    verifier_workers: int  # CPU verifier workers per GPU (catalog ``verifier_workers_per_gpu``)
    fp8_dense_tflops: float = 0.0  # 0: no FP8 tensor cores, FP8 computes at the BF16 rate
    engines: dict[str, tuple[float, float]] = field(default_factory=dict)  # engine -> (η_mem, t_floor s)
    prefill_mfu: float = 0.5  # model FLOP utilisation of prompt prefill
    optimizer_step_s: float = 0.0  # t_step0: fixed seconds per optimizer step
    microbatch_s: float = 0.0  # t_mb0: fixed seconds per micro-batch pass
    microbatch_tokens: float = 16384.0  # tokens a micro-batch packs per GPU
    sync_methods: dict[str, SyncMethod] = field(default_factory=dict)  # method -> constants; absent: pure bandwidth
    tp_allreduce_latency_s: float = 0.0  # a small all-reduce across two NVLink domains (0: not charged)
    tp_allreduce_doubling_s: float = 0.0  # ... and more each time the domains double

    def tflops(self, precision: str) -> float:
        """Peak dense TFLOP/s a phase computes at in ``precision`` (bf16 | fp8)."""
        return max(self.fp8_dense_tflops, self.bf16_dense_tflops) if precision == "fp8" else self.bf16_dense_tflops

    def for_engine(self, engine: str, memory_fraction: float | None = None) -> Hardware:
        """This hardware with the decode constants of ``engine`` (when the catalog has them) and the
        rollout memory fraction ``memory_fraction`` (None: the catalog's)."""
        eta, floor = self.engines.get(engine, (self.mem_efficiency, self.step_floor_s))
        frac = self.kv_memory_fraction if memory_fraction is None else memory_fraction
        return replace(self, mem_efficiency=eta, step_floor_s=floor, kv_memory_fraction=frac)

    def sync_method(self, name: str) -> SyncMethod:
        """The constants of weight-sync method ``name``; absent: the path's full bandwidth, no latency."""
        return self.sync_methods.get(name, SyncMethod(latency_s=0.0, efficiency=1.0, bucket_gb=1.0, reload_gb_s=math.inf))


@dataclass(frozen=True)
class Shape:
    """A job class's iteration in the model's symbols (plain numbers; ``None``: the default rule)."""

    params_b: float  # total parameters (billions): memory, checkpoints, weight sync
    gpus: int
    rollout_gpus: int
    train_gpus: int
    disaggregated: bool
    asynchronous: bool
    staleness: float  # may be fractional: a share of a batch generated under older weights
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
    bytes_per_param: float = 2.0  # the training weights' bytes (bf16)
    engine: str = DEFAULT_ENGINE  # rollout engine: vllm | sglang
    memory_fraction: float | None = None  # rollout engine's share of HBM for weights + KV; None: catalog
    active_params_b: float | None = None  # MoE: parameters a token computes with; None: dense (= params_b)
    experts: int = 0
    experts_per_token: int = 0
    expert_parallel: int | None = None  # training EP; None: the default rule
    layers: int | None = None  # transformer layers (MoE: all-to-all bytes, expert tensors); None: from active
    rollout_precision: str = "bf16"
    train_precision: str = "bf16"
    sync_method: str = "nccl_broadcast"
    partial_rollout: bool = False  # async: in-flight responses continue across weight versions

    @property
    def active_b(self) -> float:
        """Parameters a token computes with (billions)."""
        return self.params_b if self.active_params_b is None else min(self.active_params_b, self.params_b)

    @property
    def is_moe(self) -> bool:
        """A mixture of experts that computes with fewer parameters than it holds (one whose every
        parameter is active is the dense model)."""
        return self.experts > 0 and self.active_b < self.params_b

    @property
    def rollout_bytes_per_param(self) -> float:
        """Bytes a parameter of the rollout engine's weights takes (fp8 halves bf16's)."""
        return min(PRECISION_BYTES[self.rollout_precision], self.bytes_per_param)


@dataclass(frozen=True)
class Layout:
    """How a class runs on one option's GPUs: rollout replicas and the training layout."""

    rollout_tp: int  # GPUs per rollout replica, tensor parallel (across NVLink domains too, with all-reduces)
    replicas: int
    train_tp: int
    train_pp: int
    data_parallel: int
    kv_bytes_per_token: float
    kv_capacity_tokens: float  # per replica
    rollout_tensor: int = 1  # the replica's GPUs in one NVLink domain (whose NICs its all-reduces cross)
    expert_parallel: int = 1  # training EP group (MoE), within the data-parallel ranks


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


def default_kv_bytes_per_token(params_b: float, moe: bool = False) -> float:
    """KV-cache bytes per token for a model of this size (billions; an MoE's total): ``KV_REFERENCE``
    for a dense model, ``MOE_KV_REFERENCE`` for a mixture of experts, interpolated log-log (held
    flat beyond their ends)."""
    table = MOE_KV_REFERENCE if moe else KV_REFERENCE
    p = np.log([r[0] for r in table])
    kv = np.log([r[1] for r in table])
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
    tp = min(mp, _pow2_at_most(hw.nvlink_gpus))
    return tp, mp // tp


def layout(shape: Shape, hw: Hardware) -> Layout:
    """The class's layout on this hardware: explicit fields, or the default rules. The rollout
    replicas hold what the class's engine leaves them: its memory fraction of HBM
    (``Hardware.for_engine``), whoever asks (the phase times, the fit check, the refit, an
    offloaded pool's samples in flight)."""
    hw = hw.for_engine(shape.engine, shape.memory_fraction)
    kv = shape.kv_bytes_per_token or default_kv_bytes_per_token(shape.params_b, moe=shape.is_moe)
    beta = shape.rollout_bytes_per_param
    tp = shape.rollout_tp or default_rollout_tp(shape.params_b, shape.rollout_gpus, hw, beta)
    if shape.train_tp is not None or shape.train_pp is not None:
        ttp, tpp = shape.train_tp or 1, shape.train_pp or 1
    else:
        ttp, tpp = default_train_parallel(shape.params_b, shape.train_gpus, hw)
    dp = max(shape.train_gpus // (ttp * tpp), 1)
    return Layout(
        rollout_tp=tp, replicas=max(shape.rollout_gpus // tp, 1), train_tp=ttp, train_pp=tpp,
        data_parallel=dp, kv_bytes_per_token=kv,
        kv_capacity_tokens=kv_capacity_tokens(shape.params_b, tp, hw, kv, beta),
        rollout_tensor=min(tp, hw.nvlink_gpus), expert_parallel=default_expert_parallel(shape, dp, hw),
    )


def default_expert_parallel(shape: Shape, data_parallel: int, hw: Hardware) -> int:
    """Training EP of an MoE class: the class's, or [A] the largest power of two that divides the
    experts and fits both the data-parallel ranks and one NVLink domain (all-to-all stays on NVLink
    where it can); 1 for a dense model."""
    if not shape.is_moe:
        return 1
    if shape.expert_parallel is not None:
        return shape.expert_parallel
    ep = 1
    while ep * 2 <= min(data_parallel, hw.nvlink_gpus) and shape.experts % (ep * 2) == 0:
        ep *= 2
    return ep


def fit_problem(shape: Shape, hw: Hardware) -> str | None:
    """Why this class cannot run on this hardware (a sentence), or None."""
    lay = layout(shape, hw)
    w_gb = weight_bytes(shape.params_b, shape.rollout_bytes_per_param) / 1e9
    if lay.rollout_tp > shape.rollout_gpus:
        return f"rollout tensor parallel {lay.rollout_tp} is more than its {shape.rollout_gpus} rollout GPUs"
    if lay.kv_capacity_tokens < 1:
        frac = hw.for_engine(shape.engine, shape.memory_fraction).kv_memory_fraction
        engine_gb = lay.rollout_tp * hw.memory_gb * frac
        return (f"the {shape.params_b:g}B model's {w_gb:,.0f} GB of weights leave no room for a KV cache in the "
                f"{engine_gb:,.0f} GB its rollout engine takes per replica (memory fraction {frac:g} of "
                f"{lay.rollout_tp} GPU(s) of {hw.memory_gb:g} GB): raise rollout.memory_fraction or "
                "rollout.tensor_parallel")
    mp = lay.train_tp * lay.train_pp
    if mp > shape.train_gpus:
        return f"training parallelism tp × pp = {mp} is more than its {shape.train_gpus} training GPUs"
    if lay.train_tp > hw.nvlink_gpus:
        return f"training tensor parallel {lay.train_tp} spans more than one {hw.nvlink_gpus}-GPU NVLink domain"
    # An MoE rank holds its share of the experts over the expert-parallel group too.
    rank_b = moe.rank_params_b(shape.params_b, shape.active_b, shape.experts, shape.experts_per_token, mp,
                               lay.expert_parallel)
    per_gpu = (TRAIN_BYTES_PER_PARAM * rank_b * 1e9
               + OPTIMIZER_BYTES_PER_PARAM * shape.params_b * 1e9 / shape.train_gpus)
    if per_gpu > hw.memory_gb * 1e9:
        ep = f" × ep {lay.expert_parallel}" if lay.expert_parallel > 1 else ""
        return (f"training the {shape.params_b:g}B model needs {per_gpu / 1e9:,.0f} GB per GPU at tp × pp = {mp}{ep} "
                f"on {shape.train_gpus} GPUs, more than the {hw.memory_gb:g} GB a GPU has")
    return None


