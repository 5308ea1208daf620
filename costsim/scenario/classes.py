"""RL job classes (DESIGN.md section 3): arrivals, job shape and the phases of an iteration.

Fields that apply only to one placement, mode or reward (``rollout_gpu_fraction``,
``max_staleness``, ``reward_model_params_b``, ``verifier_seconds_per_sample``) are ``null`` by
default, take their documented default where they apply, and are an error where they do not:
a setting that would be ignored is refused.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from costsim.units import GPUCount, NonNegative, Positive

from .base import Name, StrictModel

DEFAULT_ROLLOUT_GPU_FRACTION = 0.5
DEFAULT_MAX_STALENESS = 1
DEFAULT_VERIFIER_SECONDS = 0.05


class Spread(StrictModel):
    """A positive quantity drawn from a lognormal with this mean and coefficient of variation."""

    mean: Positive = Field(description="Mean.")
    cv: NonNegative = Field(0.0, description="Coefficient of variation (standard deviation ÷ mean); 0: constant.")


class LengthSpread(Spread):
    """Response lengths in tokens: lognormal(mean, cv) truncated at ``max``."""

    max: Positive = Field(16384, description="Longest response in tokens (generation cap).")


class Rollout(StrictModel):
    """Sampling: prompts × samples per prompt responses per iteration."""

    prompts: GPUCount = Field(256, description="Prompts per iteration.")
    samples_per_prompt: GPUCount = Field(8, description="Responses sampled per prompt.")
    prompt_tokens: NonNegative = Field(512, description="Tokens per prompt.")
    response_tokens: Annotated[float, Field(gt=0)] | LengthSpread = Field(
        default_factory=lambda: LengthSpread(mean=2000, cv=1.0, max=16384),
        description="Response length in tokens: a number, or {mean, cv, max} (lognormal, truncated at max).",
    )
    decode_tokens_per_s_per_gpu: Positive | None = Field(
        None, description="Decode throughput per GPU under batching; null: 25,000 × HBM TB/s ÷ params (B)."
    )
    sequence_tokens_per_s: Positive = Field(60, description="Decode speed of one sequence (the straggler's pace).")

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
    reward_model_params_b: Positive | None = Field(
        None, description="Reward model size in billions of parameters (reward: model only)."
    )
    verifier_seconds_per_sample: NonNegative | None = Field(
        None, description="CPU seconds to verify one sample, 8 workers per GPU (reward: verifier only; null: 0.05)."
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

    epochs: GPUCount = Field(1, description="Passes over the iteration's samples.")
    minibatches: GPUCount = Field(4, description="Optimizer steps per epoch (one gradient all-reduce each).")
    mfu: Annotated[float, Field(gt=0, le=1)] = Field(0.35, description="Model FLOP utilisation of training and scoring.")


class ClassCheckpoint(StrictModel):
    """Checkpointing of RL jobs: a write of ``write_minutes`` after every ``every_iterations``."""

    every_iterations: GPUCount = Field(50, description="Iterations between checkpoints.")
    write_minutes: NonNegative = Field(5.0, description="Minutes a checkpoint write holds the job.")
    restart_minutes: NonNegative = Field(
        15.0, description="Minutes to restart from the last checkpoint after a failure or preemption."
    )


class RLClass(StrictModel):
    """A stream of RL training jobs of one shape."""

    name: Name = Field(description="Class name (job_class in results).")
    arrivals_per_day: Positive = Field(description="Poisson arrival rate of jobs.")
    start_day: NonNegative = Field(0.0, description="Day the arrivals start.")
    count: GPUCount | None = Field(None, description="At most this many jobs; null: no cap.")
    priority: int = Field(0, description="Scheduling priority (higher first, priority scheduler).")
    gpus: GPUCount = Field(description="GPUs per job (gang).")
    iterations: Annotated[int, Field(ge=1)] | Spread = Field(
        description="Iterations per job: a number, or {mean, cv} (lognormal, rounded, at least 1)."
    )
    model_params_b: Positive = Field(description="Policy size in billions of parameters.")
    placement: Literal["colocated", "disaggregated"] = Field(
        "colocated", description="colocated: every phase on all GPUs; disaggregated: rollout and training pools."
    )
    rollout_gpu_fraction: Annotated[float, Field(gt=0, lt=1)] | None = Field(
        None, description="Share of the job's GPUs that sample (disaggregated only; null: 0.5)."
    )
    mode: Literal["sync", "async"] = Field(
        "sync", description="sync: sample, then train; async: sample while training (disaggregated only)."
    )
    max_staleness: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Iterations a sample may lag the policy (async only; null: 1)."
    )
    rollout: Rollout = Field(default_factory=Rollout, description="Sampling.")
    scoring: Scoring = Field(default_factory=Scoring, description="Scoring.")
    update: Update = Field(default_factory=Update, description="Policy update.")
    checkpoint: ClassCheckpoint = Field(default_factory=ClassCheckpoint, description="Checkpointing.")

    @model_validator(mode="after")
    def _consistent(self) -> RLClass:
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
    def staleness(self) -> int:
        s = self.max_staleness
        return DEFAULT_MAX_STALENESS if s is None else s
