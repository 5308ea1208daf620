"""Metamorphic and invariant properties of the RL iteration model v2 (issue #10, "How it is
shown"): changes that can only make a job's work heavier or its hardware weaker never make it
faster, staleness helps until a plateau, and every phase is a finite, non-negative time.

Settings are drawn over model sizes, GPU splits, batch shapes and length distributions, with
the lengths themselves drawn by ``costsim.models.sampling.length_draws`` (so Σ L, max L and Σ L² are
consistent with each other). Settings the fit check refuses are skipped."""

import math
from dataclasses import replace

import numpy as np
from helpers import drawn_lengths
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from costsim.models import network, rl

H100 = rl.Hardware(bf16_dense_tflops=989.0, hbm_tb_s=3.35, memory_gb=80.0, nvlink_gpus=8, nvlink_busbw_gb_s=470.0,
                   inter_busbw_gb_s=376.0, nic_gb_s=47.0, mem_efficiency=0.55, step_floor_s=0.008, kv_memory_fraction=0.8,
                   verifier_workers=8)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
TOL = 1e-9  # relative: the same arithmetic in a different order


@st.composite
def settings_(draw, asynchronous=None):
    """A class on H100s and four iterations of length draws: (shape, (Σ L, max L, Σ L²))."""
    params = draw(st.sampled_from([0.5, 1.5, 3.0, 7.0, 14.0, 32.0, 70.0]))
    rollout = draw(st.sampled_from([1, 2, 4, 8, 12, 16, 32, 64]))
    train = draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
    asyn = draw(st.booleans()) if asynchronous is None else asynchronous
    disagg = asyn or draw(st.booleans())
    if not disagg:
        train = rollout
    n = draw(st.sampled_from([8, 32, 100, 512, 2048, 8192]))
    mean = draw(st.floats(50, 20_000))
    cv = draw(st.sampled_from([0.0, 0.3, 1.0, 2.0]))
    cap = draw(st.sampled_from([1024.0, 4096.0, 16384.0, 32768.0]))
    sh = rl.Shape(params_b=params, gpus=rollout + train if disagg else rollout, rollout_gpus=rollout,
                  train_gpus=train, disaggregated=disagg, asynchronous=asyn, staleness=draw(st.integers(1, 16)),
                  samples=n, prompt_tokens=draw(st.sampled_from([64.0, 512.0, 2048.0, 8192.0])),
                  reference_model=draw(st.booleans()),
                  reward_model_params_b=draw(st.sampled_from([None, None, 7.0])),
                  verifier_seconds_per_sample=0.05, epochs=draw(st.integers(1, 2)),
                  minibatches=draw(st.sampled_from([1, 4, 16])), mfu=draw(st.sampled_from([0.2, 0.35, 0.5])),
                  recompute_logprobs=draw(st.booleans()))
    assume(rl.fit_problem(sh, H100) is None)
    return sh, drawn_lengths(draw(st.integers(0, 2**16)), n, mean, cv, cap)


def run(sh, draws, hw=H100):
    return rl.phase_times(sh, hw, *draws)


def no_faster(slow, fast):
    """Elementwise slow ≥ fast up to rounding."""
    return bool(np.all(np.asarray(slow) >= np.asarray(fast) * (1 - TOL)))


def heavier_no_faster(sh, heavy, light, iteration: bool = True) -> bool:
    """The heavier case's rollout and (``iteration``) whole iteration are no faster. Async picks, per
    iteration, how far the rollout runs ahead (s' ≤ s) for the shortest iteration, trading rollout
    time for re-prefill, so its rollout alone may move either way: there the rollout compared is the
    same split's synchronous one, and the async iteration is compared as a whole."""
    plain = replace(sh, asynchronous=False)
    ok = no_faster(heavy(plain).rollout, light(plain).rollout)
    return ok and (not iteration or no_faster(heavy(sh).total, light(sh).total))


# Async re-prefills every sequence its KV cache holds at each weight change (R · batch · context
# tokens, the batch filling the KV memory), even when the rollout is done long before training and
# nothing is in flight. Found by hypothesis: a 0.5B model, 2,048 samples of 50 tokens after
# 2,048-token prompts, 1 rollout + 1 training GPU — the rollout takes 1.4 s, training 78 s, and the
# re-prefill of 5.1M tokens 25.9 s, so async (103.9 s) is slower than sync on the same split
# (79.8 s), and doubling the KV bytes per token halves the re-prefill and speeds async up (90.9 s).
# Letting the engine not run ahead (s' = 0, the sync timing) fixes the first; the second also needs
# the re-prefill to count only what is in flight, which a KV-full batch overstates.
# Rollout 1.4 s waits on 78 s of training: async once paid a 25.9 s re-prefill of a full batch here.
IDLE_ROLLOUT = (rl.Shape(params_b=0.5, gpus=2, rollout_gpus=1, train_gpus=1, disaggregated=True, asynchronous=True,
                         staleness=1, samples=2048, prompt_tokens=2048.0, reference_model=False,
                         reward_model_params_b=None, verifier_seconds_per_sample=0.05, epochs=1, minibatches=1,
                         mfu=0.2, recompute_logprobs=False),
                (np.full(4, 2048 * 50.0), np.full(4, 50.0), np.full(4, 2048 * 50.0**2)))


@FAST
@given(settings_(), st.floats(1.0, 8.0))
def test_more_kv_per_token_never_speeds_rollout(case, factor):
    sh, draws = case
    kv = rl.default_kv_bytes_per_token(sh.params_b)
    assume(rl.fit_problem(replace(sh, kv_bytes_per_token=kv * factor), H100) is None)
    # the async iteration: test_more_kv_per_token_never_speeds_an_async_iteration
    assert heavier_no_faster(sh, lambda x: run(replace(x, kv_bytes_per_token=kv * factor), draws),
                             lambda x: run(replace(x, kv_bytes_per_token=kv), draws), iteration=not sh.asynchronous)


@FAST
@given(settings_(), st.floats(0.0, 8192.0))
def test_longer_prompts_never_speed_rollout(case, extra):
    sh, draws = case
    assert heavier_no_faster(sh, lambda x: run(replace(x, prompt_tokens=x.prompt_tokens + extra), draws),
                             lambda x: run(x, draws))


@FAST
@given(settings_(), st.floats(1.0, 4.0))
def test_longer_responses_never_speed_rollout(case, factor):
    # Every response × f: Σ L × f, max L × f, Σ L² × f².
    sh, (s, m, q) = case
    assert heavier_no_faster(sh, lambda x: run(x, (s * factor, m * factor, q * factor**2)), lambda x: run(x, (s, m, q)))


@FAST
@given(st.integers(1, 16), st.integers(0, 16), st.floats(10.0, 100.0), st.floats(0.5, 1.0), st.floats(1e6, 1e12),
       st.integers(2, 4096))
def test_more_nics_never_slow_an_allreduce(nics, more, nic_gb_s, efficiency, nbytes, gpus):
    few = network.inter_node_busbw_gb_s(nics, nic_gb_s, 470.0, efficiency)
    many = network.inter_node_busbw_gb_s(nics + more, nic_gb_s, 470.0, efficiency)
    assert many >= few
    assert network.allreduce_s(nbytes, gpus, many) <= network.allreduce_s(nbytes, gpus, few)


@FAST
@given(settings_(), st.integers(1, 8), st.integers(1, 8))
def test_more_nics_never_slow_an_iteration(case, nics, more):
    sh, draws = case
    few = replace(H100, inter_busbw_gb_s=network.inter_node_busbw_gb_s(nics, 47.0, 470.0, 1.0))
    many = replace(H100, inter_busbw_gb_s=network.inter_node_busbw_gb_s(nics + more, 47.0, 470.0, 1.0))
    assert no_faster(run(sh, draws, few).update, run(sh, draws, many).update)
    assert no_faster(run(sh, draws, few).total, run(sh, draws, many).total)


@FAST
@given(settings_(asynchronous=True), st.integers(1, 999))
def test_staleness_never_slows_async(case, s):
    sh, draws = case
    assert no_faster(run(replace(sh, staleness=s), draws).total, run(replace(sh, staleness=s + 1), draws).total)


def plateau_staleness(sh, draws):
    """A staleness beyond which more cannot help, from the model's bounds (not its code path):
    (a) the pool (s + 1)·n fills every replica's KV capacity, R · cap / c per iteration, so the
    full-batch time no longer falls; and (b) the drain ÷ (s + 1) is under the full-batch time. The
    KV part of the drain is at most the full-batch time and its straggler part max L · t₁ is at most
    max L · R · (cap / c) / Σ L of it (a full-batch step is never under t₁), so (b) holds once
    s ≥ max L · R · (cap / c) / Σ L."""
    s, m, q = (np.asarray(x, dtype=float) for x in draws)
    lay = rl.layout(sh, H100)
    context = sh.prompt_tokens + q / (2 * s)
    held = lay.replicas * lay.kv_capacity_tokens / context  # sequences the fleet's KV holds
    return int(math.ceil(max((held / sh.samples).max(), (m * held / s).max()))) + 1


@FAST
@given(settings_(asynchronous=True))
def test_staleness_stops_helping_past_the_plateau(case):
    sh, draws = case
    p = plateau_staleness(sh, draws)
    assume(p <= 500)
    at = run(replace(sh, staleness=p), draws).total
    for beyond in (p + 1, 2 * p, 1000):
        np.testing.assert_allclose(run(replace(sh, staleness=beyond), draws).total, at, rtol=1e-12)


@FAST
@given(settings_(asynchronous=False), st.integers(1, 64))
def test_colocated_rollout_never_faster_than_with_extra_rollout_gpus(case, extra):
    sh, draws = case
    g = sh.rollout_gpus
    colocated = replace(sh, disaggregated=False, gpus=g, train_gpus=g)
    assume(rl.fit_problem(colocated, H100) is None)
    more = replace(colocated, gpus=g + extra, rollout_gpus=g + extra)
    slow, fast = run(colocated, draws), run(more, draws)
    assert no_faster(slow.rollout, fast.rollout)
    assert no_faster(slow.total, fast.total)  # the training side and the reshard are unchanged


@FAST
@given(st.floats(0.5, 10.0), st.floats(1.0, 4.0), st.floats(0.0, 1e11), st.floats(1.0, 4096.0),
       st.sampled_from([1, 2, 4, 8]))
def test_more_hbm_bandwidth_never_slows_a_decode_step(hbm, factor, kv_read, batch, tp):
    slow, fast = replace(H100, hbm_tb_s=hbm), replace(H100, hbm_tb_s=hbm * factor)
    assert rl.decode_step_s(14e9, kv_read, batch, tp, slow, 1.4e10, 0.35) >= rl.decode_step_s(
        14e9, kv_read, batch, tp, fast, 1.4e10, 0.35)


@FAST
@given(settings_(), st.floats(1.0, 4.0))
def test_more_hbm_bandwidth_never_slows_rollout(case, factor):
    sh, draws = case
    fast = replace(H100, hbm_tb_s=H100.hbm_tb_s * factor)
    assert heavier_no_faster(sh, lambda x: run(x, draws), lambda x: run(x, draws, fast))


@FAST
@given(settings_(), st.sampled_from([None, 20.0, 200.0]), st.sampled_from([None, 500.0, 5000.0]))
def test_phases_are_finite_non_negative_and_the_straggler_share_is_a_share(case, seq_speed, decode_speed):
    sh, draws = case
    sh = replace(sh, sequence_tokens_per_s=seq_speed, decode_tokens_per_s_per_gpu=decode_speed)
    pt = run(sh, draws)
    for name in rl.PhaseTimes.__dataclass_fields__:
        x = getattr(pt, name)
        assert x.shape == draws[0].shape and np.all(np.isfinite(x)) and np.all(x >= 0), name
    assert np.all(pt.rollout > 0) and np.all(pt.total > 0)
    share = pt.straggler / pt.rollout
    assert np.all((share >= 0) & (share <= 1 + TOL))


@FAST
@given(settings_(asynchronous=True))
@example(case=IDLE_ROLLOUT)
def test_async_never_slower_than_sync_on_the_same_split(case):
    # An async engine may always wait for the update, as sync does: it is never slower.
    sh, draws = case
    assert no_faster(run(replace(sh, asynchronous=False), draws).total, run(sh, draws).total)
