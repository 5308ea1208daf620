"""Rollout offload (docs/rollout-offload.md): the ``rollout_pool`` field's checks and the pure model
``costsim.models.offload`` against hand calculations and a seeded Monte Carlo of instances that are
preempted and come back. The engine's use of it: tests/engine/test_rollout_offload_engine.py."""

import math
from dataclasses import replace

import numpy as np
import pytest

from costsim.models import offload, rl, weight_sync
from costsim.scenario import ScenarioError
from costsim.scenario.io import scenario_from_yaml

H100 = rl.Hardware(bf16_dense_tflops=989.0, hbm_tb_s=3.35, memory_gb=80.0, nvlink_gpus=8, nvlink_busbw_gb_s=470.0,
                   inter_busbw_gb_s=376.0, nic_gb_s=47.0, mem_efficiency=0.55, step_floor_s=0.008, kv_memory_fraction=0.8,
                   verifier_workers=8)


def shape(**kw):
    base = dict(params_b=7.0, gpus=16, rollout_gpus=8, train_gpus=8, disaggregated=True, asynchronous=False,
                staleness=1, samples=256, prompt_tokens=512, reference_model=True, reward_model_params_b=None,
                verifier_seconds_per_sample=0.05, epochs=1, minibatches=4, mfu=0.35)
    return rl.Shape(**{**base, **kw})


# --- the schema ---------------------------------------------------------------------------------

SCENARIO = """\
name: t
horizon_days: 10
workload:
  classes:
    - name: flagship
      arrivals_per_day: 1
      gpus: 16
      iterations: 10
      model_params_b: 7
      placement: {placement}
options:
  - {{name: home, kind: owned, gpu_type: H100, gpus: 64, rollout_pool: {pool}}}
  - {{name: spot, kind: cloud, gpu_type: H100, pricing: spot}}
  - {{name: od, kind: cloud, gpu_type: H100, pricing: on_demand}}
  - {{name: res, kind: cloud, gpu_type: H100, pricing: reserved, reserved_gpus: 64}}
  - {{name: mix, kind: hybrid, base: home, burst: od}}
"""


def load(placement="disaggregated", pool="spot", text=SCENARIO):
    return scenario_from_yaml(text.format(placement=placement, pool=pool), "s.yaml", ".")[0]


@pytest.mark.parametrize("pool", ["spot", "od"])
def test_a_spot_or_on_demand_pool_is_accepted(pool):
    assert load(pool=pool).options[0].rollout_pool == pool


def test_a_reserved_option_and_a_hybrid_take_a_pool_too():
    text = (SCENARIO.replace("reserved_gpus: 64}}", "reserved_gpus: 64, rollout_pool: spot}}")
            .replace("burst: od}}", "burst: od, rollout_pool: od, rollout_link_gb_s: 5}}"))
    sc = load(pool="null", text=text)
    assert [o.rollout_pool for o in sc.options] == [None, None, None, "spot", "od"]
    assert sc.options[4].rollout_link_gb_s == 5


@pytest.mark.parametrize("placement, pool, message", [
    ("disaggregated", "nowhere", "'nowhere' is not an option of this scenario (options: home, mix, od, res, spot)"),
    ("disaggregated", "home", "option 'home' is owned; a rollout pool must be a cloud option, on_demand or spot"),
    ("disaggregated", "res", "option 'res' is cloud, pricing reserved; a rollout pool must be"),
    ("disaggregated", "mix", "option 'mix' is hybrid; a rollout pool must be"),
    ("colocated", "spot", "no RL class has placement: disaggregated, so no rollouts can be offloaded"),
])
def test_a_bad_pool_is_named_at_its_field_and_line(placement, pool, message):
    with pytest.raises(ScenarioError) as err:
        load(placement, pool)
    assert len(err.value.problems) == 1
    assert str(err.value).startswith("s.yaml:12:57: options.0.rollout_pool: "), str(err.value)
    assert message in str(err.value)


def test_a_rented_option_has_no_pool_and_a_link_needs_one():
    with pytest.raises(ScenarioError) as err:
        load(pool="null", text=SCENARIO.replace("pricing: on_demand}}", "pricing: on_demand, rollout_pool: spot}}"))
    assert "s.yaml:14:5: options.2: rollout_pool applies to pricing reserved only" in str(err.value)
    with pytest.raises(ScenarioError) as err:
        load(pool="null", text=SCENARIO.replace("gpus: 64, rollout_pool", "gpus: 64, rollout_link_gb_s: 10, rollout_pool"))
    assert "s.yaml:12:5: options.0: rollout_link_gb_s applies with a rollout_pool only" in str(err.value)


def test_no_pool_is_the_default():
    assert load(pool="null").options[0].rollout_pool is None
    assert load("colocated", "null").options[0].rollout_pool is None


# --- availability, weight push, samples in flight ------------------------------------------------

def test_availability_by_hand():
    # 6 preemptions a day = 0.25 an hour, 1 h down each: up 4 h, down 1 h on average -> 0.8.
    assert offload.availability(6.0, 1.0) == pytest.approx(0.8)
    assert offload.availability(0.0, 5.0) == 1.0


def test_weight_push_by_hand():
    # A new instance gets the weights as a refit does, over the 12.5 GB/s link: 7B bf16 from 8 trainers
    # (FSDP shards gathered over NVLink, 7/8 × 14e9 / 470e9 = 0.0260638 s) by NCCL broadcast: 14 buckets
    # × 1 ms + the gather + 14e9 / (12.5e9 × 0.4) = 2.8 s + the engines' reload 14e9 / 400e9 (TP 1) =
    # 2.8750638 s; the bytes over the link alone would be 1.12 s.
    nccl = weight_sync.SyncMethod(latency_s=0.001, efficiency=0.4, bucket_gb=1.0, reload_gb_s=400.0)
    home = replace(H100, sync_methods={"nccl_broadcast": nccl})
    got = offload.weight_push_s(shape(rollout_tp=1), home, 12.5)
    assert got == pytest.approx(0.014 + 7 / 8 * 14e9 / 470e9 + 14e9 / (12.5e9 * 0.4) + 14e9 / 400e9, rel=1e-12)
    assert got == pytest.approx(2.8750638, rel=1e-7)


def test_samples_in_flight_by_hand():
    # One GPU per replica (rollout_tp 1), kv 1e6 bytes/token: (80e9 × 0.8 − 14e9) / 1e6 = 50,000 tokens
    # per replica, 8 replicas: 400,000 tokens. Context 512 + Σ L² / (2 Σ L) = 512 + 488 = 1,000 tokens
    # (1,000 responses of 976 tokens): 400 sequences fit, fewer than 1,000 samples.
    sh = shape(samples=1000, rollout_tp=1, kv_bytes_per_token=1e6)
    got = offload.inflight_samples(sh, H100, [1000 * 976.0], [1000 * 976.0**2])
    assert got[0] == pytest.approx(400.0)
    # Only 256 samples: all of them are in flight.
    assert offload.inflight_samples(shape(rollout_tp=1, kv_bytes_per_token=1e6), H100, [256 * 976.0],
                                    [256 * 976.0**2])[0] == 256.0


# --- the iteration --------------------------------------------------------------------------------

def phases(rollout=100.0, overhead=0.0, logprobs=10.0, scoring=5.0, update=20.0, sync=3.0):
    one = lambda v: np.array([v])  # noqa: E731
    return rl.PhaseTimes(rollout=one(rollout), logprobs=one(logprobs), scoring=one(scoring), update=one(update),
                         sync=one(sync), overhead=one(overhead), total=one(np.nan), straggler=one(0.0))


# 10 samples of 1,000 tokens, all 10 in flight: Σ L = 1e4, Σ L² = 1e7, w = 1e7 / 2e4 = 500 tokens per lost
# sample. 6 preemptions per instance-day (λ = 6 / 86,400 per s), down 0.9 h + a 360 s push = 1 h: a = 0.8,
# λ·d = 0.25. q = λ · I · w / Σ L = 6/86,400 × 10 × 0.05 = 3 / 86,400 per s; R = 100 s: q·R = 300 / 86,400.
LEN_SUM, LEN_SQ, INFLIGHT = [1e4], [1e7], [10.0]
LAM = 6.0 / 86_400
W_HAND = 100.0 / (1.0 - 300.0 / 86_400)  # the rollout's work, 100.3484 pool-seconds
LOST_HAND = LAM * 10.0 * W_HAND  # λ·I·W = 0.0696864 samples
PI4 = {1: 4 * 0.8 * 0.2**3, 2: 6 * 0.8**2 * 0.2**2, 3: 4 * 0.8**3 * 0.2, 4: 0.8**4}  # Binomial(j; 4, 0.8)


def by_hand(work, iteration, gap):
    """The module docstring's steps 1-3 for 4 instances at a = 0.8, λ·d = 0.25, every gap shorter than
    d = 1 h: with j up an iteration takes ``iteration[j]`` and idles the pool ``gap[j]``; an instance up
    when a gap starts is up τ = (1 − e^(−λ·g)) / λ of it, one down (g − τ) / 0.25. Returns the rollout
    and the iteration."""
    weight = {j: PI4[j] / iteration[j] for j in PI4}  # ∝ the chance an iteration has j up
    tau = {j: -math.expm1(-LAM * gap[j]) / LAM for j in PI4}
    up = sum(weight[j] * (j / 4 * tau[j] + (1 - j / 4) * (gap[j] - tau[j]) / 0.25) for j in PI4) / sum(weight.values())
    total = (work + up) / 0.8
    return total - sum(weight[j] * gap[j] for j in PI4) / sum(weight.values()), total


def test_sync_iteration_by_hand():
    got = offload.offloaded(phases(), False, LEN_SUM, LEN_SQ, INFLIGHT, instances=4, preemptions_per_instance_day=6.0,
                            restart_h=0.9, push_s=360.0)
    assert got.availability == pytest.approx(0.8)
    # 38 s between rollouts (10 + 5 + 20 + 3). With j up an iteration takes 4·W/j + 38 s = 439.39, 238.70,
    # 171.80, 138.35 s, the clock spending 0.0256, 0.1536, 0.4096, 0.4096 of its time with j up. τ(38) =
    # 37.9499 s, (38 − τ) / 0.25 = 0.2004 s: an instance is up 31.9472 s of a gap on average, so the iteration
    # is (100.3484 + 31.9472) / 0.8 = 165.3695 s and its rollout 127.3695 s. Left out, the downtime during
    # the gap would give W / a = 125.4355 s.
    rollout, total = by_hand(W_HAND, {j: 4 * W_HAND / j + 38.0 for j in PI4}, {j: 38.0 for j in PI4})
    assert rollout == pytest.approx(127.3695, abs=1e-4) and total == pytest.approx(165.3695, abs=1e-4)
    assert got.rollout_s[0] == pytest.approx(rollout, rel=1e-12)
    assert got.total_s[0] == pytest.approx(total, rel=1e-12)
    assert got.lost_samples[0] == pytest.approx(LOST_HAND, rel=1e-12)
    # The fixed point the work solves: R plus the lost samples' tokens made again.
    assert W_HAND == pytest.approx(100.0 * (1 + got.lost_samples[0] * 500 / 1e4), rel=1e-12)
    # One instance is always up when its rollout ends: (W + τ(38)) / a, exact.
    one = offload.offloaded(phases(), False, LEN_SUM, LEN_SQ, INFLIGHT, 1, 6.0, 0.9, 360.0)
    assert one.total_s[0] == pytest.approx((W_HAND + -math.expm1(-LAM * 38.0) / LAM) / 0.8, rel=1e-12)
    assert one.rollout_s[0] == pytest.approx(one.total_s[0] - 38.0, rel=1e-12)


def test_async_iteration_overlaps_training_by_hand():
    got = offload.offloaded(phases(rollout=20.0, overhead=2.0), True, LEN_SUM, LEN_SQ, INFLIGHT, 4, 6.0, 0.9, 360.0)
    # W = 20 / (1 − 60/86,400) = 20.0139 s. With j up: max(4·W/j + 2 s re-prefill, 35 s training) + 3 s sync
    # = 85.06, 45.03, 38, 38 s, idling the pool the iteration less 4·W/j: 5, 5, 11.31, 17.99 s.
    w = 20.0 / (1.0 - 60.0 / 86_400)
    iteration = {j: max(4 * w / j + 2.0, 35.0) + 3.0 for j in PI4}
    rollout, total = by_hand(w, iteration, {j: iteration[j] - 4 * w / j for j in PI4})
    assert total == pytest.approx(39.5673, abs=1e-4) and rollout == pytest.approx(26.3345, abs=1e-4)
    assert got.rollout_s[0] == pytest.approx(rollout, rel=1e-12) and got.total_s[0] == pytest.approx(total, rel=1e-12)
    # Rollout-bound: 4·W/j + 2 + 3 s whatever j, W = 40 / (1 − 120/86,400); the pool idles 5 s an iteration.
    slow = offload.offloaded(phases(rollout=40.0, overhead=2.0), True, LEN_SUM, LEN_SQ, INFLIGHT, 4, 6.0, 0.9, 360.0)
    w = 40.0 / (1.0 - 120.0 / 86_400)
    rollout, total = by_hand(w, {j: 4 * w / j + 5.0 for j in PI4}, {j: 5.0 for j in PI4})
    assert total == pytest.approx(55.3603, abs=1e-4) and total == pytest.approx(rollout + 5.0, rel=1e-12)
    assert slow.total_s[0] == pytest.approx(total, rel=1e-12)


def test_preemptions_faster_than_progress_never_finish():
    # q·R ≥ 1: 86,400 preemptions a day, 1,000 in flight, half the iteration's tokens lost each.
    got = offload.offloaded(phases(), False, [1e4], [1e8], [1000.0], 4, 86_400.0, 0.0, 0.0)
    assert math.isinf(got.rollout_s[0]) and math.isinf(got.total_s[0])


@pytest.mark.parametrize("asynchronous", [False, True])
def test_zero_preemptions_equal_a_disaggregated_job_with_the_pool_as_rollout_gpus(asynchronous):
    # 8 training GPUs at home and a pool of 16 rollout GPUs: with λ = 0 the iteration is that of a
    # disaggregated job of 24 GPUs, 16 of which sample, whatever the restart delay and push.
    sh = shape(gpus=24, rollout_gpus=16, train_gpus=8, asynchronous=asynchronous, staleness=2)
    rng = np.random.default_rng(7)
    lengths = rng.integers(200, 4000, size=(5, 256)).astype(float)
    draws = (lengths.sum(1), lengths.max(1), (lengths**2).sum(1))
    pt = rl.phase_times(sh, H100, *draws)
    got = offload.offloaded(pt, asynchronous, draws[0], draws[2], offload.inflight_samples(sh, H100, draws[0], draws[2]),
                            instances=2, preemptions_per_instance_day=0.0, restart_h=3.0, push_s=60.0)
    np.testing.assert_allclose(got.total_s, pt.total, rtol=1e-12)
    np.testing.assert_array_equal(got.lost_samples, 0.0)
    # ... and preemptions only ever slow it.
    worse = offload.offloaded(pt, asynchronous, draws[0], draws[2], offload.inflight_samples(sh, H100, draws[0], draws[2]),
                              2, 12.0, 3.0, 60.0)
    assert (worse.total_s >= pt.total).all() and (worse.rollout_s > pt.rollout).all()


def test_instance_hours_by_hand():
    # 4 instances, a = 0.8, one hour: 3.2 instance-hours up; 4 × 0.8 × 0.25 = 0.8 preemptions, each billing
    # 0.1 h of startup and the 0.1 h push: 0.16 more.
    assert offload.instance_hours([3600.0], 4, 6.0, 0.9, 360.0, billed_restart_h=0.1)[0] == pytest.approx(3.36)
    assert offload.instance_hours([3600.0], 4, 0.0, 0.9, 360.0, billed_restart_h=0.1)[0] == pytest.approx(4.0)


# --- against a Monte Carlo of the pool -------------------------------------------------------------

def simulate_pool(instances, per_day, down_h, billed_down_h, inflight_per_instance, horizon_h, seed):
    """Each instance: up for Exp(λ) hours, preempted (losing its samples in flight), down ``down_h``,
    of which ``billed_down_h`` is billed; repeated to the horizon. Returns per instance: hours up,
    samples lost, hours billed."""
    rng = np.random.default_rng(seed)
    rate_h = per_day / 24.0
    up, lost, billed = np.zeros(instances), np.zeros(instances), np.zeros(instances)
    for i in range(instances):
        t = 0.0
        while t < horizon_h:
            life = rng.exponential(1.0 / rate_h)
            if t + life >= horizon_h:
                up[i] += horizon_h - t
                billed[i] += horizon_h - t
                break
            up[i] += life
            billed[i] += life + min(billed_down_h, horizon_h - t - life)
            lost[i] += inflight_per_instance
            t += life + down_h
    return up, lost, billed


def test_lost_samples_and_billed_hours_match_a_monte_carlo_within_its_interval():
    k, per_day, restart_h, push_s, startup_h, per_instance, horizon = 200, 6.0, 0.9, 360.0, 0.1, 25.0, 2000.0
    up, lost, billed = simulate_pool(k, per_day, restart_h + push_s / 3600, startup_h + push_s / 3600, per_instance,
                                     horizon, seed=20261130)
    a = offload.availability(per_day, restart_h + push_s / 3600)
    z = 3.29  # a two-sided 99.9 % interval over the 200 independent instances
    share = up / horizon
    assert abs(share.mean() - a) < z * share.std(ddof=1) / math.sqrt(k)
    # Lost samples per hour of rollout, as the model gives them (λ × a × I, I = 200 × 25 in flight), for a
    # job with no gap between its rollouts: its pool always generates, as the simulated instances do.
    rate = lost.sum(0) / horizon
    gapless = phases(rollout=1.0, logprobs=0.0, scoring=0.0, update=0.0, sync=0.0)
    model = offload.offloaded(gapless, False, LEN_SUM, LEN_SQ, [k * per_instance], k, per_day, restart_h, push_s)
    expected = model.lost_samples[0] / model.rollout_s[0] * 3600.0
    assert expected == pytest.approx(per_day / 24.0 * a * k * per_instance)
    per = lost / horizon
    assert abs(rate - expected) < z * per.std(ddof=1) * math.sqrt(k)
    # Billed instance-hours.
    hours = offload.instance_hours([horizon * 3600.0], k, per_day, restart_h, push_s, billed_restart_h=startup_h)[0]
    assert abs(billed.sum() - hours) < z * billed.std(ddof=1) * math.sqrt(k)


def test_the_editor_shows_the_fields_only_where_they_apply():
    from costsim.dashboard import editor_schema

    pool = next(f for f in editor_schema.fields("CloudOption") if f.name == "rollout_pool")
    assert pool.nullable and "on_demand or spot" in pool.help
    assert editor_schema.applies(pool, {"kind": "cloud", "pricing": "reserved"})
    assert not editor_schema.applies(pool, {"kind": "cloud", "pricing": "spot"})
    link = next(f for f in editor_schema.fields("OwnedOption") if f.name == "rollout_link_gb_s")
    assert editor_schema.applies(link, {"rollout_pool": "spot"}) and not editor_schema.applies(link, {})


def test_a_hybrid_naming_a_pool_offloads_from_its_base_only():
    from costsim.plan.resolve import resolve

    text = SCENARIO.replace("burst: od}}", "burst: od, rollout_pool: spot, rollout_link_gb_s: 5}}")
    plans = {p.name: p for p in resolve(load(pool="null", text=text))}
    assert plans["home"].rollout is None and plans["mix"].base.name == "home"
    assert plans["mix"].base.rollout.name == "spot" and plans["mix"].base.rollout_link_gb_s == 5
    # The base option's own pool, with the catalog's link (a 100 Gbps link: 12.5 GB/s), is the hybrid's by default.
    plans = {p.name: p for p in resolve(load(pool="od"))}
    assert plans["mix"].base.rollout.name == "od" and plans["home"].rollout_link_gb_s == 12.5


def test_the_verdict_names_the_rollout_pool():
    from costsim.present.wording import describe

    sc = load(pool="spot")
    assert describe("home", sc) == "owning 64 H100s with rollouts on spot H100s (home)"
    text = SCENARIO.replace("burst: od}}", "burst: od, rollout_pool: spot}}")
    assert describe("mix", load(pool="null", text=text)) == (
        "owning 64 H100s and bursting to renting on-demand H100s with rollouts on spot H100s (mix)")
