"""The offloaded iteration's timing (``costsim.models.offload.offloaded``) against an independent,
event-by-event Monte Carlo of k rollout instances over many iterations.

Each instance is up for Exp(λ) seconds (preempted idle or busy), then down d seconds, again and
again. A rollout needs W of work, done at (instances up) ÷ k of the pool's rate; a preemption while
it generates loses the instance's samples in flight (their tokens are work again). The pool then
idles until the iteration ends, at max(rollout end + overhead, iteration start + training) + sync
(a sync job: no training in parallel, its whole gap as ``sync``), and the next rollout starts with
whichever instances are up. Independent chains (seeded, started in the instances' stationary state
and run past a burn-in) give the mean iteration, lost samples and billed instance-hours with
their standard errors."""

import math

import numpy as np
import pytest

from costsim.models import offload, rl

Z = 3.29  # two-sided 99.9 %


def simulate(k, per_day, down_s, work_s, seed, *, gap_s=0.0, train_s=0.0, overhead_s=0.0, lost_each=0.0,
             redo_s=0.0, billed_s=0.0, chains=2000, burn=200, iterations=2000):
    """Per chain, over ``iterations`` iterations after ``burn``: the mean iteration (s), samples lost
    an iteration, instance-seconds billed an iteration (up, plus ``billed_s`` per preemption).
    ``gap_s`` is the sync after each rollout (with ``train_s`` in parallel and ``overhead_s`` after
    it for an async job); a preemption while the pool generates loses ``lost_each`` samples and adds
    ``redo_s`` pool-seconds of work."""
    rng = np.random.default_rng(seed)
    lam = per_day / 86_400.0
    a = 1.0 / (1.0 + lam * down_s)
    up = rng.random((chains, k)) < a  # the instances' stationary state: up, or down a uniform residual
    change = np.where(up, rng.exponential(1.0 / lam, (chains, k)), rng.uniform(0.0, down_s, (chains, k)))
    now, start = np.zeros(chains), np.zeros(chains)
    generating = np.ones(chains, dtype=bool)
    left = np.full(chains, work_s)  # pool-seconds of the rollout still to do
    ends = np.zeros(chains)  # when an idle pool's iteration ends
    done = np.zeros(chains, dtype=np.int64)
    t_first, t_last = np.zeros(chains), np.zeros(chains)
    lost, billed = np.zeros(chains), np.zeros(chains)
    rows = np.arange(chains)
    while (done < burn + iterations).any():
        counting = (done >= burn) & (done < burn + iterations)
        n_up = up.sum(1)
        with np.errstate(divide="ignore"):
            finish = np.where(generating, np.where(n_up > 0, now + left * k / np.maximum(n_up, 1), np.inf), ends)
        who = change.argmin(1)
        flip = change[rows, who]
        phase = finish <= flip
        t = np.minimum(finish, flip)
        dt = t - now
        billed += np.where(counting, n_up * dt, 0.0)
        left = np.where(generating, left - n_up / k * dt, left)
        now = t
        # an instance goes down or comes back
        r, i = rows[~phase], who[~phase]
        going = up[r, i]
        gone, gi = r[going], i[going]
        up[gone, gi] = False
        change[gone, gi] = now[gone] + down_s
        billed[gone] += np.where(counting[gone], billed_s, 0.0)
        hit = gone[generating[gone]]
        left[hit] += redo_s
        lost[hit] += np.where(counting[hit], lost_each, 0.0)
        back, bi = r[~going], i[~going]
        up[back, bi] = True
        change[back, bi] = now[back] + rng.exponential(1.0 / lam, len(back))
        # the rollout ends, or the iteration does (and the next rollout starts)
        finished = phase & generating
        ends[finished] = np.maximum(now[finished] + overhead_s, start[finished] + train_s) + gap_s
        left[finished] = 0.0
        over = phase & ~generating
        generating = (generating & ~finished) | over
        left[over] = work_s
        start[over] = now[over]
        done[over] += 1
        t_first = np.where(over & (done == burn), now, t_first)
        t_last = np.where(over & (done == burn + iterations), now, t_last)
    return (t_last - t_first) / iterations, lost / iterations, billed / iterations


def phases(rollout, train=(0.0, 0.0, 0.0), sync=0.0, overhead=0.0):
    one = lambda v: np.array([float(v)])  # noqa: E731
    return rl.PhaseTimes(rollout=one(rollout), logprobs=one(train[0]), scoring=one(train[1]), update=one(train[2]),
                         sync=one(sync), overhead=one(overhead), total=one(np.nan), straggler=one(0.0))


def mean_se(x):
    return x.mean(), x.std(ddof=1) / math.sqrt(len(x))


# Spot preempted 6 times an instance-day, back after 0.9 h (reacquire, provisioning, startup) and a 360 s
# weight push: d = 1 h, a = 0.8. A sync iteration: a 100 s rollout, then 100 s of log-probs, scoring,
# update and sync (40 + 10 + 45 + 5). 2 samples in flight per instance, of 100 samples of 1,000 tokens:
# w = 500 tokens, a lost sample's work 500 / 1e5 of R = 0.5 s. One instance: (R + T) / a ≈ 250 s,
# against R / a + T = 225 s if the instances' downtime between rollouts were left out.
PER_DAY, RESTART_H, PUSH_S, STARTUP_H = 6.0, 0.9, 360.0, 0.1
DOWN_S = RESTART_H * 3600.0 + PUSH_S
SYNC_JOB = phases(100.0, train=(40.0, 10.0, 45.0), sync=5.0)


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 2, 4, 24])
def test_a_sync_iteration_matches_a_monte_carlo_of_its_instances(k):
    model = offload.offloaded(SYNC_JOB, False, [1e5], [1e8], [2.0 * k], k, PER_DAY, RESTART_H, PUSH_S,
                              billed_restart_h=STARTUP_H)
    per, lost, billed = simulate(k, PER_DAY, DOWN_S, 100.0, seed=20261201 + k, gap_s=100.0, lost_each=2.0,
                                 redo_s=2 * 0.5, billed_s=STARTUP_H * 3600.0 + PUSH_S,
                                 chains=4000 if k == 1 else 2000)
    mc, se = mean_se(per)
    assert Z * se < 0.0025 * mc  # the Monte Carlo's 99.9 % interval is well inside 1 %
    assert model.total_s[0] == pytest.approx(mc, rel=0.01)
    if k == 1:  # exact for one instance: within the Monte Carlo's interval
        assert abs(model.total_s[0] - mc) < Z * se
        assert model.total_s[0] > 1.09 * (100.0 / 0.8 + 100.0)  # the effect is visible: ~11 % at one instance
    # The rollout is the iteration less its 100 s gap (a sync job).
    assert model.rollout_s[0] == pytest.approx(model.total_s[0] - 100.0, rel=1e-12)
    # Samples lost an iteration: λ·I·W whatever the timing, within the Monte Carlo's interval.
    m, e = mean_se(lost)
    assert abs(model.lost_samples[0] - m) < Z * e
    # Instance-hours billed: what instance_hours gives for each chain's own iterations (k·a·(1 + λ·billed
    # restart) an hour held, whatever the job does), within the interval of the chains' differences.
    own = offload.instance_hours(per, k, PER_DAY, RESTART_H, PUSH_S, billed_restart_h=STARTUP_H)
    m, e = mean_se(billed / 3600.0 - own)
    assert abs(m) < Z * e
    # ... so the model's bill an iteration is as close to the simulated one as its iteration is.
    assert model.instance_hours[0] == pytest.approx(np.mean(billed) / 3600.0, rel=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 2])
def test_a_downtime_shorter_than_the_gap_matches_too(k):
    # 120 preemptions an instance-day, down 144 s + a 36 s push = 180 s (a = 0.8) between 300 s rollouts and
    # 300 s gaps: an instance can go down and come back within a gap (τ's terms beyond the first). One
    # instance: (W + τ(300)) / a = 692.9 s, against (R + T) / a = 750 s if it never came back within it.
    model = offload.offloaded(phases(300.0, sync=300.0), False, [1e5], [1e8], [0.0], k, 120.0, 0.04, 36.0)
    per, _, _ = simulate(k, 120.0, 180.0, 300.0, seed=7 + k, gap_s=300.0, chains=1000, iterations=1000)
    mc, se = mean_se(per)
    assert Z * se < 0.0025 * mc
    assert model.total_s[0] == pytest.approx(mc, rel=0.01)
    if k == 1:
        assert abs(model.total_s[0] - mc) < Z * se and model.total_s[0] < 0.93 * 750.0


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 4])
def test_an_async_job_waiting_on_its_training_matches_too(k):
    # Pipelined: a 100 s rollout (+ 2 s re-prefill) beside 150 s of training, then a 5 s sync. With every
    # instance up the pool idles 55 s an iteration; one down in it holds the next rollout back.
    # One instance: about 155 / a = 194 s, against 155 s if preemptions cost only the rollout's stretch.
    job = phases(100.0, train=(50.0, 20.0, 80.0), sync=5.0, overhead=2.0)
    model = offload.offloaded(job, True, [1e5], [1e8], [0.0], k, PER_DAY, RESTART_H, PUSH_S)
    per, _, _ = simulate(k, PER_DAY, DOWN_S, 100.0, seed=99 + k, gap_s=5.0, train_s=150.0, overhead_s=2.0,
                         chains=4000 if k == 1 else 2000)
    mc, se = mean_se(per)
    assert Z * se < 0.0025 * mc
    assert model.total_s[0] == pytest.approx(mc, rel=0.01)
