"""RL job classes (DESIGN.md section 3): arrivals, job shape and the phases of an iteration.

Fields that apply only to one placement, mode or reward (``rollout_gpu_fraction``,
``max_staleness``, ``reward_model_params_b``, ``verifier_seconds_per_sample``)
are ``null`` by default, take their documented default where they apply, and are an error where
they do not: a setting that would be ignored is refused.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import Field, ValidationInfo, field_validator, model_validator

from costsim.scenario.base import Name, StrictModel
from costsim.scenario.bounds import (
    CV,
    MAX_GPUS,
    MAX_HOURS,
    MAX_TOKENS,
    Count,
    Days,
    GPUCount,
    GPUType,
    GrowthPerYear,
    Minutes,
    ParamsB,
    Priority,
    Tokens,
    float_bounds,
    int_bounds,
    span,
)

DEFAULT_ROLLOUT_GPU_FRACTION = 0.5
DEFAULT_MAX_STALENESS = 1
DEFAULT_VERIFIER_SECONDS = 0.05

# Ranges of the RL fields: wide enough for any run today, narrow enough that an iteration's time
# stays finite (a decode rate or MFU near zero would make it infinite).
ArrivalsPerDay: TypeAlias = Annotated[float, *float_bounds(gt=0, le=10_000)]
Prompts: TypeAlias = Annotated[int, *int_bounds(ge=1, le=1_000_000)]
SamplesPerPrompt: TypeAlias = Annotated[int, *int_bounds(ge=1, le=10_000)]
PromptTokens: TypeAlias = Annotated[float, *float_bounds(ge=0, le=MAX_TOKENS)]
TokensPerS: TypeAlias = Annotated[float, *float_bounds(ge=1, le=10_000_000)]
VerifierSeconds: TypeAlias = Annotated[float, *float_bounds(ge=0, le=3600)]
Epochs: TypeAlias = Annotated[int, *int_bounds(ge=1, le=1000)]
Minibatches: TypeAlias = Annotated[int, *int_bounds(ge=1, le=10_000)]
Mfu: TypeAlias = Annotated[float, *float_bounds(ge=0.01, le=1)]
# Fractional staleness: a share of a batch may be generated under older weights (verl's 0.5).
Staleness: TypeAlias = Annotated[float, *float_bounds(gt=0, le=1000)]
MemoryFraction: TypeAlias = Annotated[float, *float_bounds(gt=0, le=1)]
ExpertCount: TypeAlias = Annotated[int, *int_bounds(ge=2, le=100_000)]
TopK: TypeAlias = Annotated[int, *int_bounds(ge=1, le=100_000)]
Layers: TypeAlias = Annotated[int, *int_bounds(ge=1, le=10_000)]
MicrobatchTokens: TypeAlias = Annotated[float, *float_bounds(ge=1, le=MAX_TOKENS)]
Precision: TypeAlias = Literal["bf16", "fp8"]
RolloutShare: TypeAlias = Annotated[float, *float_bounds(gt=0, lt=1)]
SpreadMean: TypeAlias = Annotated[float, *float_bounds(ge=1, le=10_000_000)]  # iterations per job or tokens per response
KVBytes: TypeAlias = Annotated[float, *float_bounds(ge=1, le=100_000_000)]  # a 405B model has ~0.5 MB per token
Parallel: TypeAlias = Annotated[int, *int_bounds(ge=1, le=4096)]
Score: TypeAlias = Annotated[float, *float_bounds(ge=-1e9, le=1e9)]  # a score in the user's units: accuracy, pass rate, reward
Steepness: TypeAlias = Annotated[float, *float_bounds(gt=0, le=100)]
CurveGPUHours: TypeAlias = Annotated[float, *float_bounds(gt=0, le=MAX_GPUS * MAX_HOURS)]  # any GPU-hours a run could receive


class Spread(StrictModel):
    """A positive quantity drawn from a lognormal with this mean and coefficient of variation."""

    mean: SpreadMean = Field(description=f"Mean ({span(SpreadMean)}).")
    cv: CV = Field(0.0, description=f"Coefficient of variation, standard deviation ÷ mean ({span(CV)}); 0: constant.")


class LengthSpread(Spread):
    """Response lengths in tokens: lognormal(mean, cv) truncated at ``max``."""

    max: Tokens = Field(16384, description=f"Longest response in tokens, the generation cap ({span(Tokens)}).")


class Rollout(StrictModel):
    """Sampling: prompts × samples per prompt responses per iteration."""

    prompts: Prompts = Field(256, description=f"Prompts per iteration ({span(Prompts)}).")
    samples_per_prompt: SamplesPerPrompt = Field(
        8, description=f"Responses sampled per prompt ({span(SamplesPerPrompt)})."
    )
    prompt_tokens: PromptTokens = Field(512, description=f"Tokens per prompt ({span(PromptTokens)}).")
    response_tokens: Tokens | LengthSpread = Field(
        default_factory=lambda: LengthSpread(mean=2000, cv=1.0, max=16384),
        description=f"Response length in tokens: a number ({span(Tokens)}), or {{mean, cv, max}} "
        "(lognormal, truncated at max).",
    )
    kv_bytes_per_token: KVBytes | None = Field(
        None,
        description=f"KV-cache bytes per token of the policy, 2 × layers × KV heads × head dim × 2 "
        f"({span(KVBytes)}); null: from the model size (dense: Qwen2.5 / Llama 3.1 configs, `costsim.models.rl.KV_REFERENCE`; "
        "MoE: by total parameters, Qwen3-MoE / GPT-OSS / DeepSeek-V3 configs, `costsim.models.rl.MOE_KV_REFERENCE`).",
    )
    tensor_parallel: Parallel | None = Field(
        None,
        description=f"GPUs per rollout replica (tensor parallel, {span(Parallel)}); null: the fewest (a power "
        "of two) that keep the weights within half of the replica's rollout memory.",
    )
    decode_tokens_per_s_per_gpu: TokensPerS | None = Field(
        None,
        description=f"Override: full-batch decode throughput per GPU, tokens/s ({span(TokensPerS)}); null: "
        "from the decode roofline (model size, KV cache, context, HBM).",
    )
    sequence_tokens_per_s: TokensPerS | None = Field(
        None, description=f"Override: decode speed of one sequence alone, the straggler's pace, tokens/s "
        f"({span(TokensPerS)}); null: from the decode roofline (the larger of the step floor and a weight read).",
    )

    engine: Literal["vllm", "sglang"] = Field(
        "vllm", description="Inference engine: vllm | sglang (its decode step floor and HBM efficiency come from "
        "the catalog, rl.* and rl.sglang_*)."
    )
    memory_fraction: MemoryFraction | None = Field(
        None, description=f"Share of each rollout GPU's HBM the engine takes for weights and KV cache, vLLM's "
        f"gpu_memory_utilization or SGLang's mem_fraction_static ({span(MemoryFraction)}); null: catalog "
        "rl.kv_memory_fraction."
    )
    precision: Precision = Field("bf16", description="Generation precision: bf16 | fp8 (weights' bytes and peak "
                                 "FLOP/s from the catalog).")
    partial: bool = Field(
        False, description="Partial rollout (mode: async only): responses in flight when the weights change "
        "continue under the new weights, with no re-prefill, instead of holding the update."
    )

    @property
    def lengths(self) -> LengthSpread:
        r = self.response_tokens
        return r if isinstance(r, LengthSpread) else LengthSpread(mean=r, cv=0.0, max=max(r, 1.0))

    @property
    def samples(self) -> int:
        return self.prompts * self.samples_per_prompt


class Scoring(StrictModel):
    """Scoring the samples: a verifier (CPU) or a reward model, plus an optional reference model."""

    reward: Literal["verifier", "model"] = Field("verifier", description="verifier | model.")
    reward_model_params_b: ParamsB | None = Field(
        None, description=f"Reward model size in billions of parameters ({span(ParamsB)}; reward: model only)."
    )
    verifier_seconds_per_sample: VerifierSeconds | None = Field(
        None,
        description=f"CPU seconds to verify one sample, 8 workers per GPU ({span(VerifierSeconds)}; "
        "reward: verifier only; null: 0.05).",
    )
    reference_model: bool = Field(True, description="Score with a frozen reference model (KL penalty).")

    @model_validator(mode="after")
    def _consistent(self) -> Scoring:
        if self.reward == "model" and self.reward_model_params_b is None:
            raise ValueError("reward: model needs reward_model_params_b")
        if self.reward == "verifier" and self.reward_model_params_b is not None:
            raise ValueError("reward_model_params_b applies to reward: model only")
        if self.reward == "model" and self.verifier_seconds_per_sample is not None:
            raise ValueError("verifier_seconds_per_sample applies to reward: verifier only")
        return self

    @property
    def verifier_seconds(self) -> float:
        v = self.verifier_seconds_per_sample
        return DEFAULT_VERIFIER_SECONDS if v is None else v


class Update(StrictModel):
    """The policy update: FLOPs at a model FLOP utilisation, plus gradient all-reduce per minibatch."""

    epochs: Epochs = Field(1, description=f"Passes over the iteration's samples ({span(Epochs)}).")
    minibatches: Minibatches = Field(
        4, description=f"Optimizer steps per epoch, one gradient all-reduce each ({span(Minibatches)})."
    )
    mfu: Mfu = Field(0.35, description=f"Model FLOP utilisation of training and scoring ({span(Mfu)}).")
    recompute_logprobs: bool = Field(
        True, description="Recompute the old policy's log-probabilities with a forward pass before the update "
        "(PPO/GRPO importance ratios)."
    )
    precision: Precision = Field("bf16", description="Training and scoring precision: bf16 | fp8 (peak FLOP/s "
                                 "from the catalog).")


class Parallelism(StrictModel):
    """The training layout: tensor parallel × pipeline parallel × data parallel over the training GPUs."""

    tp: Parallel | None = Field(None, description=f"Tensor-parallel size, at most one NVLink domain ({span(Parallel)}); null: 1.")
    pp: Parallel | None = Field(None, description=f"Pipeline-parallel stages ({span(Parallel)}); null: 1.")
    ep: Parallel | None = Field(None, description=f"Expert-parallel size of an MoE model ({span(Parallel)}); null: "
                                "the largest power of two dividing the experts within the data-parallel ranks "
                                "and one NVLink domain.")


class Model(StrictModel):
    """The policy's parameters when it is a mixture of experts: it computes with the active ones and
    holds, checkpoints and syncs all of them."""

    total_params_b: ParamsB = Field(description=f"All parameters, billions ({span(ParamsB)}).")
    active_params_b: ParamsB = Field(description=f"Parameters a token computes with, billions ({span(ParamsB)}).")
    experts: ExpertCount = Field(description=f"Routed experts per MoE layer ({span(ExpertCount)}).")
    experts_per_token: TopK = Field(description=f"Experts each token is routed to, top-k ({span(TopK)}).")
    layers: Layers | None = Field(
        None, description=f"Transformer layers, the config's num_hidden_layers ({span(Layers)}): the expert tensors a "
        "refit moves and the all-to-all bytes; null: estimated from active_params_b (P ≈ 12 L h², h ≈ 80 L).")

    @model_validator(mode="after")
    def _consistent(self) -> Model:
        if self.active_params_b > self.total_params_b:
            raise ValueError(f"active_params_b ({self.active_params_b:g}) is more than total_params_b "
                             f"({self.total_params_b:g})")
        if self.experts_per_token > self.experts:
            raise ValueError(f"experts_per_token ({self.experts_per_token}) is more than experts ({self.experts})")
        return self


class WeightSync(StrictModel):
    """How the trainers' weights reach the rollout engines each iteration."""

    method: Literal["nccl_broadcast", "nccl_packed", "checkpoint_engine", "nixl"] = Field(
        "nccl_broadcast", description="nccl_broadcast | nccl_packed | checkpoint_engine | nixl (latency, bandwidth "
        "share and reload from the catalog, rl.sync_*; nccl_packed: NCCL's constants, tensors packed into large "
        "buffers, one latency a buffer, through every NIC of the sender's node, as NeMo RL's refit)."
    )


class ClassCheckpoint(StrictModel):
    """Checkpointing of RL jobs: a write of ``write_minutes`` after every ``every_iterations``."""

    every_iterations: Count = Field(50, description=f"Iterations between checkpoints ({span(Count)}).")
    write_minutes: Minutes = Field(5.0, description=f"Minutes a checkpoint write holds the job ({span(Minutes)}).")
    restart_minutes: Minutes = Field(
        15.0, description=f"Minutes to restart from the last checkpoint after a failure or preemption ({span(Minutes)})."
    )


class ScalingCurve(StrictModel):
    """R(C) = r0 + (a − r0) / (1 + (c_mid / C)^b), C in GPU-hours: ScaleRL's A, B, C_mid and R0
    ("The Art of Scaling Reinforcement Learning Compute for LLMs", 2025; ``costsim.models.scaling``)."""

    a: Score = Field(description=f"Asymptote A: the score with unlimited compute, score units ({span(Score)}).")
    b: Steepness = Field(description=f"Steepness B: the curve's slope against ln C ({span(Steepness)}).")
    c_mid_gpu_hours: CurveGPUHours = Field(
        description=f"C_mid: GPU-hours at which half the gain A − R0 is made ({span(CurveGPUHours)})."
    )
    r0: Score = Field(description=f"R0: the score before training, at 0 GPU-hours, score units ({span(Score)}).")

    @model_validator(mode="after")
    def _rises(self) -> ScalingCurve:
        if self.a <= self.r0:
            raise ValueError(f"a ({self.a:g}) must be above r0 ({self.r0:g}): the score rises with compute")
        return self


class Scaling(StrictModel):
    """How a run's score grows with the GPU-hours it receives, and the score it must reach. The curve
    applies per job: each job of the class is one training run, from r0 at its first GPU-hour."""

    curve: ScalingCurve | None = Field(None, description="The curve's parameters {a, b, c_mid_gpu_hours, r0}; "
                                       "null: fitted to `fit`.")
    fit: str | None = Field(
        None, min_length=1, description="CSV of measured points `gpu_hours,score`, relative to the scenario file, "
        "the curve fitted to them; null: `curve` given."
    )
    target: Score = Field(description=f"The score to reach, score units ({span(Score)}); below the asymptote a.")
    reference_option: Name | None = Field(
        None, description="The owned or cloud option whose GPU-hours the curve counts: a run's compute is the share of "
        "it done × its GPU-hours there, so slower GPUs reach the target later for the same work (the system the "
        "curve was measured on); null: the first owned or cloud option."
    )

    @field_validator("target")
    @classmethod
    def _reachable(cls, target: float, info: ValidationInfo) -> float:
        c = info.data.get("curve")  # validated before target (declared first); a fit is checked on loading
        if c is not None and target >= c.a:
            raise ValueError(f"target {target:g} is at or above the asymptote a = {c.a:g}: never reached")
        if c is not None and target <= c.r0:
            raise ValueError(f"target {target:g} is at or below r0 = {c.r0:g}: reached before any training")
        return target

    @model_validator(mode="after")
    def _one_source(self) -> Scaling:
        if (self.curve is None) == (self.fit is None):
            raise ValueError("scaling needs exactly one of `curve` (the parameters) or `fit` (a CSV of points)")
        return self


class RLClass(StrictModel):
    """A stream of RL training jobs of one shape."""

    name: Name = Field(description="Class name (job_class in results).")
    arrivals_per_day: ArrivalsPerDay = Field(
        description=f"Poisson arrival rate of jobs per day ({span(ArrivalsPerDay)}); with growth_per_year, the "
        "rate at day 0."
    )
    start_day: Days = Field(0.0, description=f"Day the arrivals start ({span(Days)}).")
    growth_per_year: GrowthPerYear = Field(
        0.0, description=f"Compound growth of the arrival rate, a fraction per year ({span(GrowthPerYear)}; 0.8: "
        "+80 %/yr, −0.3: −30 %/yr; 0: constant): the rate t years after the horizon's start (day 0, not "
        "start_day) is arrivals_per_day × (1 + growth_per_year)^t, continuously."
    )
    count: Count | None = Field(None, description=f"At most this many jobs ({span(Count)}); null: no cap.")
    priority: Priority = Field(
        0, description=f"Scheduling priority, higher first under the priority scheduler ({span(Priority)})."
    )
    gpus: GPUCount = Field(description=f"GPUs per job, a gang ({span(GPUCount)}).")
    gpu_type: GPUType | None = Field(
        None, description="GPU type its jobs run on: every option must have it (an owned option of node_groups: "
        "some group; a hybrid or fleet: every part); null: any.")
    iterations: Count | Spread = Field(
        description=f"Iterations per job: a number ({span(Count)}), or {{mean, cv}} (lognormal, rounded, at least 1)."
    )
    model_params_b: ParamsB = Field(description=f"Policy size in billions of parameters ({span(ParamsB)}); "
                                    "with `model`, its total_params_b (may be left out).")
    model: Model | None = Field(
        None, description="Mixture of experts {total_params_b, active_params_b, experts, experts_per_token}; "
        "null: a dense model of model_params_b."
    )
    sync: WeightSync = Field(default_factory=WeightSync, description="Weight sync to the rollout engines.")
    placement: Literal["colocated", "disaggregated"] = Field(
        "colocated", description="colocated: every phase on all GPUs; disaggregated: rollout and training pools."
    )
    rollout_gpu_fraction: RolloutShare | None = Field(
        None, description=f"Share of the job's GPUs that sample ({span(RolloutShare)}; disaggregated only; null: 0.5)."
    )
    mode: Literal["sync", "async"] = Field(
        "sync", description="sync: sample, then train; async: sample while training (disaggregated only)."
    )
    max_staleness: Staleness | None = Field(
        None, description=f"Iterations a sample may lag the policy ({span(Staleness)}; async only; null: 1)."
    )
    rollout: Rollout = Field(default_factory=Rollout, description="Sampling.")
    scoring: Scoring = Field(default_factory=Scoring, description="Scoring.")
    update: Update = Field(default_factory=Update, description="Policy update.")
    parallelism: Parallelism | None = Field(
        None, description="Training layout {tp, pp}; null: the smallest power-of-two model parallelism whose "
        "weights and gradients fit half a GPU (tensor parallel within a node, pipeline beyond)."
    )
    checkpoint: ClassCheckpoint = Field(default_factory=ClassCheckpoint, description="Checkpointing.")
    scaling: Scaling | None = Field(
        None, description="Score against GPU-hours per job and a target score {curve | fit, target}: the "
        "results' to_target table; null: none."
    )

    @model_validator(mode="before")
    @classmethod
    def _total_from_model(cls, data):
        if isinstance(data, dict) and isinstance(data.get("model"), dict) and data.get("model_params_b") is None:
            total = data["model"].get("total_params_b")
            if total is not None:
                data = {**data, "model_params_b": total}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> RLClass:
        if self.model is not None and self.model.total_params_b != self.model_params_b:
            raise ValueError(f"model_params_b ({self.model_params_b:g}) differs from model.total_params_b "
                             f"({self.model.total_params_b:g}): give one of them")
        if self.rollout.partial and self.mode != "async":
            raise ValueError("rollout.partial applies to mode: async only")
        if self.parallelism is not None and self.parallelism.ep is not None and self.model is None:
            raise ValueError("parallelism.ep applies to a mixture-of-experts model (model: {...}) only")
        if self.placement == "colocated" and self.rollout_gpu_fraction is not None:
            raise ValueError("rollout_gpu_fraction applies to placement: disaggregated only")
        if self.mode == "async" and self.placement != "disaggregated":
            raise ValueError("mode: async needs placement: disaggregated (rollout and training on separate GPUs)")
        if self.mode == "sync" and self.max_staleness is not None:
            raise ValueError("max_staleness applies to mode: async only")
        if self.placement == "disaggregated":
            g_r = self.rollout_gpus
            if not 1 <= g_r <= self.gpus - 1:
                raise ValueError(
                    f"disaggregated placement of {self.gpus} GPUs at rollout_gpu_fraction "
                    f"{self.gpu_fraction} leaves {g_r} for rollout and {self.gpus - g_r} for training; both need at least 1"
                )
        return self

    @property
    def gpu_fraction(self) -> float:
        f = self.rollout_gpu_fraction
        return DEFAULT_ROLLOUT_GPU_FRACTION if f is None else f

    @property
    def rollout_gpus(self) -> int:
        """GPUs that sample: all of them colocated, round(gpus × fraction) disaggregated."""
        return self.gpus if self.placement == "colocated" else int(round(self.gpus * self.gpu_fraction))

    @property
    def train_gpus(self) -> int:
        """GPUs that score and train: all colocated, the rest disaggregated."""
        return self.gpus if self.placement == "colocated" else self.gpus - self.rollout_gpus

    @property
    def staleness(self) -> float:
        s = self.max_staleness
        return DEFAULT_MAX_STALENESS if s is None else s
