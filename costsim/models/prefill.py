"""Prompt prefill in a rollout engine (DESIGN.md section 3, v3): pure functions, seconds.

Before a sequence decodes its first token the engine runs its prompt through the model once: a
forward pass of ``2 · P_active · 1e9`` FLOPs a token, compute-bound (a prefill batch is thousands
of tokens, so the weights are read once for all of them). The same cost recurs when sequences in
flight are re-prefilled under new weights (async without partial rollout).
"""

from __future__ import annotations

import numpy as np


def prefill_s(active_params_b: float, tokens, gpus: int, tflops: float, mfu: float):
    """Prefill of ``tokens`` prompt (or context) tokens on ``gpus`` GPUs of ``tflops`` peak dense
    TFLOP/s at model FLOP utilisation ``mfu``: ``2 · P_active · 1e9 · tokens / (gpus · F · mfu)``."""
    return 2.0 * active_params_b * 1e9 * np.asarray(tokens, dtype=float) / (gpus * tflops * 1e12 * mfu)


def rollout_prefill_tokens(samples: int, prompt_tokens: float) -> float:
    """Prompt tokens an iteration prefills: every sample's prompt (``n · Lp``). Engines share a
    prompt's prefix between its samples only with prefix caching, which RL rollouts rarely rely
    on across the samples of a batch (the prompts differ); the bound stays the plain count."""
    return float(samples) * float(prompt_tokens)
