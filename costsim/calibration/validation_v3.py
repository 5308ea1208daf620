"""Validation rows of the v3 RL model (DESIGN.md section 13): NeMo RL, verl and refit figures.

Each function returns ``validation.Row``s computed with the model's own pure functions on catalog
hardware. A row's setting says what the source publishes (its table, its recipe files) and then,
each marked [A], what the row assumes where the source is silent: the spread of response lengths,
prompt lengths, how a published layout maps onto the model's fields. Bands: step times,
generation times and speed-ups ± 25 %, weight sync ×/÷ 1.5.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from costsim.catalog.load import Catalog
from costsim.models import rl, sampling
from costsim.scenario.classes import DEFAULT_VERIFIER_SECONDS, Update

SEED, ITERATIONS = 2026, 50
NEMO = "NeMo RL v0.5.0 docs/about/performance-summary.md (H100 BF16 table; recipes in examples/configs/recipes/llm/performance)"
VERL = "verl docs/advance/fully_async.md, 7B DAPO on H20 (vLLM + FSDP2)"
VERL_CE = "verl docs/advance/fully_async.md, checkpoint-engine ablation (H20, Megatron)"
NEMO_REFIT = "NeMo RL docs/guides/checkpoint-engine-refit.md (DeepSeek-V3 benchmark)"
# The DAPO row's step time as corrected after the release, and the prompts × generations its run used.
NEMO_DAPO = (NEMO + "; step time as corrected in commit 9dbd9ad (#1890, 2026-02-06: 974 → 458 s); prompts × "
             "generations as tests/test_suites/llm/performance/dapo-deepseek-v3-64n8g.sh runs the recipe")
STEP_BAND, SYNC_BAND = 0.25, 1.5
# [A] NeMo RL's math prompts: the v0.4 table's tokens/s/GPU × step × GPUs ÷ samples exceeds the mean
# generated length by about 130 tokens (1,562 × 97.7 × 16 ÷ 2,048 = 1,192 vs 1,060).
NEMO_PROMPT, NEMO_CV = 130.0, 0.8
VERL_PROMPT, VERL_CAP, VERL_MEAN, VERL_CV = 200.0, 28_672.0, 1_100.0, 1.0  # [A] prompt, lengths (cap published)
VERL_SAMPLES = 8192  # 512 prompts × 16
VERL_GEN_32_S = 357.41  # generation a step on 32 H20 colocated, as published (s)
VERL_GEN_64_S, VERL_GEN_128_S = 150.72, 177.85  # generation a step on 64 and 128 H20 colocated, as published (s)


@dataclass(frozen=True)
class Policy:
    """A model as the rows give it: parameters (billions; MoE: total, active, experts, top-k and
    layers from its config.json) and its KV-cache bytes a token, with where they come from."""

    name: str
    total_b: float
    kv_bytes: float
    kv_text: str
    active_b: float | None = None
    experts: int = 0
    top_k: int = 0
    layers: int | None = None
    kv_on_every_rank: bool = False  # the cache is whole on each tensor-parallel rank (MLA in vLLM)

    def fields(self, rollout_tp: int = 1) -> dict[str, Any]:
        """The ``rl.Shape`` fields of the model on replicas of ``rollout_tp`` GPUs."""
        moe = {} if self.active_b is None else {"active_params_b": self.active_b, "experts": self.experts,
                                                "experts_per_token": self.top_k, "layers": self.layers}
        kv = self.kv_bytes * (rollout_tp if self.kv_on_every_rank else 1)
        return {"kv_bytes_per_token": kv, **moe}


LLAMA_8B = Policy("Llama-3.1-8B", 8.0, 131_072.0, "KV 131,072 B a token (32 layers × 8 KV heads × 128)")
QWEN3_32B = Policy("Qwen3-32B", 32.8, 262_144.0, "KV 262,144 B a token (64 layers × 8 KV heads × 128)")
QWEN3_30B = Policy("Qwen3-30B-A3B", 30.5, 98_304.0, "KV 98,304 B a token (48 layers × 4 KV heads × 128)", 3.3, 128,
                   8, 48)
QWEN3_235B = Policy("Qwen3-235B-A22B", 235.0, 192_512.0, "KV 192,512 B a token (94 layers × 4 KV heads × 128)",
                    22.0, 128, 8, 94)
# vLLM keeps DeepSeek-V3's compressed MLA cache (512 + 64 values a layer) whole on every
# tensor-parallel rank: a TP-32 replica holds it 32 times.
DSV3 = Policy("DeepSeek-V3", 671.0, 70_272.0, "KV 61 layers × 576 × 2 B = 70,272 B a token on every rank of a "
              "replica (vLLM holds the MLA latent whole on each)", 37.0, 256, 8, 61, kv_on_every_rank=True)


@dataclass(frozen=True)
class NemoRun:
    """One row of NeMo RL's H100 BF16 table with its recipe: GPUs (colocated, or ``rollout`` of
    them generating one step off-policy), the mean generated length, the step time, generation
    [TP], training [TP, CP, EP, PP], prompts × generations, the maximum sequence and the optimizer
    steps (G-GBS ÷ T-GBS)."""

    key: str
    policy: Policy
    gpus: int
    rollout: int | None
    mean: float
    published: float
    gen_tp: int
    train: tuple[int, int, int, int]
    prompts: int
    per_prompt: int
    max_seq: float
    steps: int


NEMO_RUNS = (
    NemoRun("nemo_8b_on", LLAMA_8B, 16, None, 1019.0, 92.8, 1, (1, 1, 1, 2), 64, 32, 4096.0, 4),
    NemoRun("nemo_8b_off", LLAMA_8B, 16, 8, 1123.0, 64.8, 1, (1, 1, 1, 1), 64, 32, 4096.0, 4),
    NemoRun("nemo_32b_on", QWEN3_32B, 32, None, 3251.0, 376.0, 4, (4, 1, 1, 4), 64, 32, 4096.0, 4),
    NemoRun("nemo_32b_off", QWEN3_32B, 64, 32, 3252.0, 200.0, 4, (4, 1, 1, 4), 64, 32, 4096.0, 4),
    NemoRun("nemo_30b_on", QWEN3_30B, 32, None, 3196.0, 198.0, 2, (1, 1, 8, 1), 64, 32, 4096.0, 4),
    NemoRun("nemo_30b_off", QWEN3_30B, 32, 16, 3201.0, 154.0, 2, (1, 1, 8, 2), 64, 32, 4096.0, 4),
    NemoRun("nemo_235b_on", QWEN3_235B, 128, None, 5700.0, 431.0, 16, (2, 2, 16, 8), 16, 32, 8192.0, 1),
    NemoRun("nemo_235b_off", QWEN3_235B, 256, 128, 5707.0, 203.0, 8, (4, 1, 16, 8), 16, 32, 8192.0, 1),
    NemoRun("nemo_dsv3_on", DSV3, 256, None, 744.0, 134.0, 32, (1, 1, 16, 16), 32, 16, 1536.0, 1),
    NemoRun("nemo_dsv3_off", DSV3, 512, 256, 738.0, 64.9, 32, (1, 1, 16, 16), 32, 16, 1536.0, 1),
    # DAPO with dynamic sampling: the trained batch is simulated as one generation round (see
    # validation_gaps.NOT_CARRIED).
    # The v0.5.0 table's 974 s repeated the row's mean generated length; upstream corrected it to 458 s,
    # which its own tokens/s/GPU column confirms (2.45 × 458 s × 512 GPUs = 512 samples of ≈ 1,120 tokens).
    NemoRun("nemo_dsv3_dapo", DSV3, 512, None, 974.0, 458.0, 64, (8, 4, 32, 8), 64, 8, 1536.0, 1),
)


def nemo_run(key: str) -> NemoRun:
    """The NeMo RL row ``key`` of ``NEMO_RUNS``."""
    return next(r for r in NEMO_RUNS if r.key == key)


@functools.cache
def draws(samples: int, mean: float, cv: float, cap: float) -> sampling.LengthDraws:
    """Per-iteration Σ L, max L and Σ L² of ``samples`` capped lognormal lengths, fixed seed."""
    return sampling.length_draws(np.random.default_rng(SEED), samples, mean, cv, cap, ITERATIONS)


def nemo_draws(run: NemoRun, samples: int | None = None) -> sampling.LengthDraws:
    """A NeMo RL row's response lengths (tokens; ``samples`` a step instead of the run's): capped
    at the maximum sequence less the prompt, averaging the published mean generated length."""
    cap = run.max_seq - NEMO_PROMPT
    return draws(samples or run.prompts * run.per_prompt, capped_mean_input(run.mean, NEMO_CV, cap), NEMO_CV, cap)


def nemo_times(run: NemoRun, hw: rl.Hardware, samples: int | None = None) -> rl.PhaseTimes:
    """A NeMo RL row's phase times on ``hw`` (``samples`` responses a step instead of the run's)."""
    sh = nemo_shape(run) if samples is None else dataclasses.replace(nemo_shape(run), samples=samples)
    return times(sh, hw, nemo_draws(run, samples))


@functools.cache
def capped_mean_input(target: float, cv: float, cap: float) -> float:
    """The uncapped lognormal mean whose lengths, capped at ``cap``, average ``target`` (bisection
    on the draws): sources publish the mean generated length, which the cap has already shortened."""
    lo, hi = target, target * 4.0
    for _ in range(40):
        mid = (lo + hi) / 2.0
        d = sampling.length_draws(np.random.default_rng(SEED), 4096, mid, cv, cap, 4)
        lo, hi = (mid, hi) if d.length_sum.mean() / 4096 < target else (lo, mid)
    return (lo + hi) / 2.0


def shape(params_b: float, samples: int, prompt: float, *, gpus: int, rollout_gpus: int | None = None,
          staleness: float = 1.0, minibatches: int, reference: bool, **kw) -> rl.Shape:
    """A GRPO/DAPO class: colocated synchronous on ``gpus``, or disaggregated asynchronous with
    ``rollout_gpus`` generating; verifier reward, 1 epoch, the class default MFU."""
    asynchronous = rollout_gpus is not None
    return rl.Shape(params_b=params_b, gpus=gpus, rollout_gpus=rollout_gpus or gpus,
                    train_gpus=gpus - rollout_gpus if rollout_gpus else gpus, disaggregated=asynchronous,
                    asynchronous=asynchronous, staleness=staleness, samples=samples, prompt_tokens=prompt,
                    reference_model=reference, reward_model_params_b=None,
                    verifier_seconds_per_sample=DEFAULT_VERIFIER_SECONDS, epochs=1, minibatches=minibatches,
                    mfu=Update.model_fields["mfu"].default, **kw)


def times(sh: rl.Shape, hw: rl.Hardware, d: sampling.LengthDraws) -> rl.PhaseTimes:
    return rl.phase_times(sh, hw, d.length_sum, d.length_max, d.length_sq_sum)


def setting(published: str, *assumed: str) -> str:
    """A row's setting: what the source publishes, then each assumption marked [A]."""
    return "; ".join([published, *(a if a.startswith("[A]") else f"[A] {a}" for a in assumed)])


def default_layout(sh: rl.Shape, hw: rl.Hardware) -> str:
    """The assumption a row makes when its source gives no layout: the model's default rules'."""
    lay = rl.layout(sh, hw)
    return (f"rollout tensor parallel {lay.rollout_tp}, training TP{lay.train_tp} PP{lay.train_pp} (the default "
            "rules: the fewest GPUs whose weights take at most half their memory)")


def nemo_shape(run: NemoRun) -> rl.Shape:
    """A NeMo RL run as the model's class: the table's layouts (context parallel counted as tensor
    parallel), the recipe's memory fraction (0.6 colocated, 0.8 for a separate generation pool)
    and refit transport (ZMQ + CUDA IPC colocated, NCCL's packed broadcast between pools)."""
    tp, cp, ep, pp = run.train
    p = run.policy
    return shape(p.total_b, run.prompts * run.per_prompt, NEMO_PROMPT, gpus=run.gpus, rollout_gpus=run.rollout,
                 minibatches=run.steps, reference="dapo" not in run.key, rollout_tp=run.gen_tp, train_tp=tp * cp, train_pp=pp,
                 expert_parallel=ep if ep > 1 else None, memory_fraction=0.6 if run.rollout is None else 0.8,
                 sync_method="checkpoint_engine" if run.rollout is None else "nccl_packed",
                 **p.fields(run.gen_tp))


def nemo_rows(hw: rl.Hardware, row) -> list:
    """NeMo RL GRPO steps on H100, dense and MoE, on-policy and 1-step off-policy."""
    out = []
    for run in NEMO_RUNS:
        cap = run.max_seq - NEMO_PROMPT
        tp, cp, ep, pp = run.train
        where = (f"on-policy, colocated on {run.gpus} H100" if run.rollout is None
                 else f"1-step off-policy, {run.rollout} generating + {run.gpus - run.rollout} training")
        dapo = "dapo" in run.key
        algo = ("DAPO (dynamic sampling: batch_multiplier 3, 3 × the prompts generated a round, up to 10 rounds, "
                "until the prompts with a learning signal fill the batch; vLLM enforce_eager)") if dapo else "GRPO"
        reference = "no reference model (KL 0)" if dapo else "reference model (KL 0.01)"
        text = setting(
            f"{run.policy.name} {algo}, {where}; {run.prompts} prompts × {run.per_prompt}, vLLM TP{run.gen_tp}, "
            f"training TP{tp} CP{cp} EP{ep} PP{pp}, {reference}, {run.steps} optimizer step"
            f"{'s' if run.steps > 1 else ''} (G-GBS ÷ T-GBS); mean generated {run.mean:,.0f} tokens, "
            f"{run.max_seq:,.0f} max sequence; vLLM gpu_memory_utilization {0.6 if run.rollout is None else 0.8}",
            f"prompts {NEMO_PROMPT:.0f} tokens", f"lengths lognormal cv {NEMO_CV} capped at {cap:,.0f}",
            run.policy.kv_text, *(["context parallel counted as tensor parallel"] if cp > 1 else []),
            "refit as the checkpoint engine in the node (NeMo's colocated ZMQ + CUDA IPC)" if run.rollout is None
            else "refit as NCCL's packed broadcast (NeMo's non-colocated transport: tensors packed into "
            "refit buffers of 2 % of GPU memory, at most 5 GiB: 1.72 GB on an H100)",
            "training at the class default MFU 0.35")
        lo, hi = run.published * (1 - STEP_BAND), run.published * (1 + STEP_BAND)
        out.append(row(run.key, "DAPO step (s)" if dapo else "GRPO step (s)", text, NEMO_DAPO if dapo else NEMO,
                       f"{run.published:g} s", run.published, lo, hi, float(nemo_times(run, hw).total.mean()),
                       "{:.1f}"))
    return out


# Qwen2.5-Math-7B's attention, from its config: 28 layers × 4 KV heads × 128 × (K, V) × 2 B.
VERL_KV_BYTES = 28 * 4 * 128 * 2 * 2.0


def verl_shape(gpus: int, **kw) -> rl.Shape:
    """verl's 7B DAPO class on ``gpus`` H20: 512 prompts × 16, 16 optimizer steps, no reference
    model (``kw``: further ``shape`` fields, e.g. ``rollout_gpus`` for the fully async run)."""
    return shape(7.6, VERL_SAMPLES, VERL_PROMPT, gpus=gpus, minibatches=16, reference=False,
                 kv_bytes_per_token=VERL_KV_BYTES, **kw)


def verl_draws() -> sampling.LengthDraws:
    """verl's [A] response lengths (tokens), one set for every verl row."""
    return draws(VERL_SAMPLES, VERL_MEAN, VERL_CV, VERL_CAP)


def verl_rows(hw: rl.Hardware, row) -> list:
    """verl's 7B DAPO on H20: colocated sync on 128 and 32 GPUs, fully async 64:64, update scaling."""
    d = verl_draws()
    sync128 = times(verl_shape(128), hw, d)
    sync32 = times(verl_shape(32), hw, d)
    fa = times(verl_shape(128, rollout_gpus=64, staleness=0.5, partial_rollout=True, recompute_logprobs=False), hw, d)
    published = ("Qwen2.5-Math-7B DAPO, 512 prompts × 16, 16 optimizer steps (mini-batch 32), no reference "
                 f"model, max response {VERL_CAP:,.0f}")
    assumed = (f"prompts {VERL_PROMPT:.0f} tokens", f"lengths lognormal mean {VERL_MEAN:,.0f} cv {VERL_CV} capped at "
               f"{VERL_CAP:,.0f}", f"KV {VERL_KV_BYTES:,.0f} B a token (28 layers × 4 KV heads × 128)",
               default_layout(verl_shape(32), hw),
               "verifier reward 0.05 s a sample", "training at the class default MFU 0.35")
    rows = []
    for key, fig, where, pub, sim in (
        ("verl_sync_step", "colocated sync step (s)", "128 H20 colocated", 356.3, sync128.total.mean()),
        ("verl_gen_128", "generation per step (s)", "128 H20 colocated", VERL_GEN_128_S, sync128.rollout.mean()),
        ("verl_gen_32", "generation per step (s)", "32 H20 colocated", VERL_GEN_32_S, sync32.rollout.mean()),
        ("verl_fully_async", "fully-async step (s)", "64 generating : 64 training, staleness 0.5, partial rollout, "
         "log-probs from the rollout engine (calculate_log_probs)", 150.63, fa.total.mean()),
        ("verl_async_speedup", "fully-async ÷ colocated sync speed-up", "128 H20", 356.3 / 150.63,
         sync128.total.mean() / fa.total.mean()),
        ("verl_update_scaling", "update_actor 32 ÷ 128 GPUs", "colocated sync", 313.81 / 113.81,
         sync32.update.mean() / sync128.update.mean()),
    ):
        lo, hi = pub * (1 - STEP_BAND), pub * (1 + STEP_BAND)
        fmt = "{:.2f}×" if "÷" in fig else "{:.1f}"
        rows.append(row(key, fig, setting(f"{where}; {published}", *assumed), VERL,
                        f"{pub:.2f}×" if "÷" in fig else f"{pub:g} s", pub, lo, hi, float(sim), fmt, None))
    return rows


def refit_rows(h20: rl.Hardware, h100: rl.Hardware, row) -> list:
    """Weight sync per model, rank count and method: verl's ablation on H20, NeMo RL's DeepSeek-V3."""
    rows = []
    qwen7 = Policy("Qwen2.5-Math-7B", 7.6, 57_344.0, "")
    cases = (  # key, policy, trainers, rollout GPUs, rollout TP, (method, published s), hardware
        ("7b", qwen7, 4, 4, 4, (("nccl_broadcast", 0.12), ("checkpoint_engine", 0.02)), h20),
        ("30b", QWEN3_30B, 16, 16, 8, (("nccl_broadcast", 15.76), ("checkpoint_engine", 4.38)), h20),
        ("235b", QWEN3_235B, 64, 64, 16, (("nccl_broadcast", 58.57), ("checkpoint_engine", 23.70)), h20),
        ("dsv3", DSV3, 256, 32, 32, (("nccl_packed", 14.21), ("nixl", 9.25)), h100),
    )
    for key, policy, train, roll, roll_tp, methods, hw in cases:
        for method, pub in methods:
            kw = policy.fields() if policy.active_b is not None else {}
            sh = dataclasses.replace(shape(policy.total_b, 512, 256.0, gpus=train + roll, rollout_gpus=roll,
                                           minibatches=1, reference=False, **kw),
                                     sync_method=method, rollout_tp=roll_tp)
            if key == "dsv3":
                sh = dataclasses.replace(sh, train_tp=1, train_pp=16, expert_parallel=16)
                how = ("nccl broadcast, tensors packed into refit buffers of 2 % of GPU memory, at most 5 GiB "
                       "(nemo_rl/utils/packed_tensor.py): 1.72 GB on an H100" if method == "nccl_packed" else method)
                assumed = ([f"a packed buffer is one transfer and leaves the root's node through its {hw.nvlink_gpus} "
                            "NICs (NCCL's rings over NVLink), an assumption chosen on this row, so the row is in "
                            "sample for it: the published figure is 94 GB/s from one rank, twice one NIC, but NeMo "
                            "RL's refit group holds one trainer rank and no source shows NCCL reaching its node's "
                            "other NICs from it (NVIDIA/nccl#412: a ring crosses the node through the communicator's "
                            "GPUs); through the root's own NIC the model gives "
                            f"{rl.sync_s(sh, hw, path_gb_s=hw.nic_gb_s):.0f} s"] if method == "nccl_packed"
                           else ["61 layers × 256 experts × 3 matrices = 46,848 expert tensors a receiver loads"])
                where = setting(f"{policy.name} BF16, 32 policy nodes (TP1 PP16 EP16) → 4 rollout nodes (vLLM TP32), "
                                f"{how}; a vLLM rank loads 45,395 tensors, 69.95 GiB", *assumed,
                                "a receiver's shard W ÷ 32 = 42 GB")
            else:
                where = setting(f"{policy.name}, {train} trainer ranks → {roll} rollout ranks, "
                                f"{method.replace('_', ' ')}, bf16",
                                f"rollout tensor parallel {roll_tp}", *([] if policy.layers is None else [
                                    f"{policy.layers} layers × {policy.experts} experts × 3 matrices"]))
            rows.append(row(f"sync_{key}_{method}", "weight sync per step (s)", where,
                            NEMO_REFIT if key == "dsv3" else VERL_CE, f"{pub:g} s", pub, pub / SYNC_BAND,
                            pub * SYNC_BAND, rl.sync_s(sh, hw), "{:.2f}"))
    return rows


def v3_rows(cat: Catalog, gpu_hardware, row) -> list:
    """Every v3 row on the catalog's H100 and H20 (``gpu_hardware``: how an owned option sees a GPU)."""
    h100, h20 = gpu_hardware(cat.gpus["H100"], catalog=cat), gpu_hardware(cat.gpus["H20"], catalog=cat)
    return nemo_rows(h100, row) + verl_rows(h20, row) + refit_rows(h20, h100, row)
