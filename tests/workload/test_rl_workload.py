"""RL job classes: the length sampler against brute force, arrivals and shapes, independent
streams, work plans and segments, and RL jobs through the engine."""

import math

import numpy as np
import pandas as pd
import pytest
from helpers import cloud, jobs_of, owned
from scipy import stats

import costsim
from costsim.models.sampling import EXACT_BELOW, length_draws, lognormal_params
from costsim.plan.resolve import resolve
from costsim.scenario import scenario_from_data
from costsim.workload import jobs as workload
from costsim.workload.plan import plan_work


def capped_brute_force(rng, mu, sigma, n, cap, iterations):
    """The capped semantic drawn the obvious way: n lognormals per iteration, cut at the cap;
    per iteration the sum, the maximum, how many reached the cap and the sum of squares."""
    sums, maxes, capped, squares = (np.empty(iterations) for _ in range(4))
    for i in range(iterations):
        x = rng.lognormal(mu, sigma, n)
        y = np.minimum(x, cap)
        sums[i], maxes[i], capped[i], squares[i] = y.sum(), y.max(), (x >= cap).sum(), (y * y).sum()
    return sums, maxes, capped, squares


def p_at_cap(mean, cv, cap):
    """P(L ≥ cap) for L lognormal with this mean and cv (normal tail via erfc)."""
    mu, sigma = lognormal_params(mean, cv)
    return 0.5 * math.erfc((math.log(cap) - mu) / sigma / math.sqrt(2))


# (n, mean, cv, cap): rarely binding caps (the DESIGN defaults), and caps that bind often —
# P(L ≥ cap) ≈ 0.2 and ≈ 0.1 — with the lengths below the cap few enough to be drawn exactly
# (n < EXACT_BELOW), many enough for the central limit theorem, and straddling the threshold.
CASES = [(2048, 2000, 1.0, 16384), (40, 1000, 1.5, 8000), (3, 100, 1.0, 300),
         (16, 1000, 1.0, 1425), (256, 1000, 1.0, 1425), (72, 1000, 1.0, 1900)]


@pytest.mark.parametrize("n, mean, cv, cap", CASES)
def test_sum_max_and_capped_count_match_brute_force(n, mean, cv, cap):
    rng = np.random.default_rng(2)
    d = length_draws(rng, n, mean, cv, cap, 1500)
    mu, sigma = lognormal_params(mean, cv)
    s, m, k, q = capped_brute_force(rng, mu, sigma, n, cap, 1500)
    assert stats.ks_2samp(d.length_max, m).pvalue > 0.01
    assert stats.ks_2samp(d.length_sum, s).pvalue > 0.01
    assert stats.ks_2samp(d.length_sq_sum, q).pvalue > 0.01
    # The capped count is Binomial(n, p): its mean against the closed form and the brute force.
    p = p_at_cap(mean, cv, cap)
    sd = math.sqrt(n * p * (1 - p) / 1500)
    assert abs(d.capped.mean() - n * p) < 4.5 * sd and abs(k.mean() - n * p) < 4.5 * sd
    # Whenever a response hit the cap, the longest one is the cap; otherwise it is below it.
    assert ((d.length_max == cap) == (d.capped > 0)).all()
    assert (d.length_max <= cap).all() and (d.length_sum >= d.length_max * np.maximum(d.capped, 1) - 1e-6).all()
    assert (d.length_sum <= n * d.length_max + 1e-6).all()
    assert d.capped.dtype == np.int32


def test_cases_cover_both_ways_of_summing_the_uncapped_lengths():
    # Lengths below the cap are drawn exactly under EXACT_BELOW and by the CLT above it.
    below = [n * (1 - p_at_cap(mean, cv, cap)) for n, mean, cv, cap in CASES]
    assert min(below) < EXACT_BELOW < max(below)
    assert any(abs(b - EXACT_BELOW) < 3 for b in below)  # n = 72, p ≈ 0.1: around the threshold


def test_constant_lengths():
    s, m, _, _ = length_draws(np.random.default_rng(0), 100, 3000, 0.0, 2048, 5)
    assert s.tolist() == [204_800.0] * 5 and m.tolist() == [2048.0] * 5  # capped at max
    d = length_draws(np.random.default_rng(0), 100, 3000, 0.0, 2048, 5)
    assert d.capped.tolist() == [100] * 5  # every response wanted 3,000 tokens and stopped at 2,048
    # A fixed length equal to its own cap (response_tokens given as a number) is not cut.
    assert length_draws(np.random.default_rng(0), 100, 2048, 0.0, 2048, 5).capped.tolist() == [0] * 5


def rl_scenario(tmp_path, classes, options=None, horizon_days=200, **top):
    data = {"name": "rl", "horizon_days": horizon_days, "workload": {"classes": classes, **top.pop("workload", {})},
            "options": options or [owned(gpus=64)], **top}
    return costsim.runs.api.check(scenario_from_data(data, "test", tmp_path), "test")


CLS = {"name": "a", "arrivals_per_day": 3, "gpus": 16, "iterations": {"mean": 100, "cv": 0.5}, "model_params_b": 7}


def test_arrivals_start_count_and_shapes(tmp_path):
    sc = rl_scenario(tmp_path, [CLS, {**CLS, "name": "b", "start_day": 50, "count": 20, "iterations": 40}], horizon_days=400)
    jobs = workload.generate(sc)
    a, b = jobs.class_index == 0, jobs.class_index == 1
    assert abs(a.sum() - 1200) < 4 * math.sqrt(1200)  # Poisson(3/day × 400 days)
    assert b.sum() == 20 and (jobs.submit_h[b] >= 50 * 24).all()
    assert (jobs.iterations[b] == 40).all()
    assert jobs.iterations[a].mean() == pytest.approx(100, rel=0.05) and jobs.iterations[a].min() >= 1
    assert (np.diff(jobs.submit_h) >= 0).all()
    # Each job's iterations are its own slice of the length arrays.
    assert jobs.iter_start[a].min() >= 0 and (jobs.iter_start + jobs.iterations).max() <= len(jobs.length_sum)
    recs = jobs.jobs()
    assert recs[0].iterations == len(recs[0].length_sum) == len(recs[0].length_max)


def test_job_table_carries_square_sums_aligned_with_the_sums(tmp_path):
    # The class's Σ L² are the very draws of its response_lengths stream, row for row with Σ L.
    from costsim.models.sampling import LengthDraws
    from costsim.workload.arrivals import ITERATION_BLOCK, in_blocks
    from costsim.workload.rng import stream

    cls = {**CLS, "rollout": {"prompts": 8, "samples_per_prompt": 4, "response_tokens": {"mean": 1000, "cv": 1.0,
                                                                                        "max": 1425}}}
    sc = rl_scenario(tmp_path, [cls, {**CLS, "name": "b", "rollout": {"response_tokens": 700}}])
    jobs = workload.generate(sc)
    assert jobs.length_sq_sum.shape == jobs.length_sum.shape
    for k, name, n in ((0, "a", 32), (1, "b", 2048)):
        rows = np.concatenate([np.arange(a, a + i) for a, i in zip(jobs.iter_start[jobs.class_index == k],
                                                                   jobs.iterations[jobs.class_index == k], strict=True)])
        law = (1000, 1.0, 1425) if k == 0 else (700, 0, 700)
        # at scale 1 there is one arrival layer, whose lengths are drawn ITERATION_BLOCK at a time;
        # in_blocks calls the draw before it returns, so it sees this class's n and law
        d = LengthDraws(*in_blocks(stream(sc.seed, "response_lengths", name, 0),
                                   lambda rng, m: length_draws(rng, n, *law, m),  # noqa: B023
                                   len(rows), ITERATION_BLOCK))
        # the class's iterations are contiguous and in job order, so its rows are its draws in order
        np.testing.assert_array_equal(rows, np.arange(rows[0], rows[0] + len(rows)))
        np.testing.assert_array_equal(jobs.length_sum[rows], d.length_sum)
        np.testing.assert_array_equal(jobs.length_sq_sum[rows], d.length_sq_sum)
        s, q, m = jobs.length_sum[rows], jobs.length_sq_sum[rows], jobs.length_max[rows]
        assert (s * s / n <= q * (1 + 1e-12)).all() and (q <= m * s * (1 + 1e-12)).all()
    assert (jobs.length_sq_sum[rows] == 2048 * 700.0**2).all()  # class b: fixed 700-token responses
    i = int(np.flatnonzero(jobs.class_index == 0)[0])  # a job of class a, whose lengths vary
    rec, a = jobs.jobs()[i], int(jobs.iter_start[i])
    assert rec.job_class == "a" and rec.iterations > 1
    np.testing.assert_array_equal(rec.length_sq_sum, jobs.length_sq_sum[a:a + rec.iterations])


def test_streams_are_independent_of_other_classes_and_options(tmp_path):
    one = workload.generate(rl_scenario(tmp_path, [CLS]))
    two = workload.generate(rl_scenario(tmp_path, [CLS, {**CLS, "name": "b"}], options=[owned(gpus=64), cloud()]))
    a = two.class_index == 0
    np.testing.assert_array_equal(one.submit_h, two.submit_h[a])
    np.testing.assert_array_equal(one.iterations, two.iterations[a])
    first = [one.length_sum[s:s + n] for s, n in zip(one.iter_start, one.iterations, strict=True)]
    again = [two.length_sum[s:s + n] for s, n in zip(two.iter_start[a], two.iterations[a], strict=True)]
    assert all(np.array_equal(x, y) for x, y in zip(first, again, strict=True))


def test_trace_and_classes_mix(tmp_path):
    pd.DataFrame({"submit_h": [1.0, 2.0], "gpus": [8, 8], "duration_h": [3.0, 4.0]}).to_csv(tmp_path / "t.csv", index=False)
    sc = rl_scenario(tmp_path, [CLS], workload={"trace": "t.csv"})
    res = costsim.simulate(sc)
    j = jobs_of(res, "own")
    assert set(j.job_class) == {"trace", "a"}
    assert (j[j.job_class == "trace"].iterations == 0).all()
    assert list(res.phases.job_class) == ["a"]


def test_segments_sum_to_run_time_and_jobs_run_that_long(tmp_path):
    cls = {**CLS, "iterations": 120, "checkpoint": {"every_iterations": 50, "write_minutes": 6}}
    sc = rl_scenario(tmp_path, [cls])
    jobs = workload.generate(sc)
    plan = resolve(sc)[0]
    wp = plan_work(sc, jobs, plan)
    segs = wp.segments(0)
    assert [s.iterations for s in segs] == [50, 50, 20]
    assert [s.write_h for s in segs] == [0.1, 0.1, 0.0]
    a = int(jobs.iter_start[0])
    assert sum(s.work_h for s in segs) == pytest.approx(wp.iter_h[a:a + 120].sum(), rel=1e-12)
    for i in range(len(jobs)):
        assert sum(s.work_h + s.write_h for s in wp.segments(i)) == pytest.approx(wp.run_h[i], rel=1e-12)
    res = costsim.simulate(sc)
    j = jobs_of(res, "own")
    done = j[j.completed]
    assert (done.end_h - done.start_h).to_numpy() == pytest.approx(wp.run_h[done.index.to_numpy()], rel=1e-12)
    assert (done.iterations == 120).all()


def test_jobs_cut_by_the_horizon_count_iterations_done(tmp_path):
    # One job, 1,000 iterations; the horizon cuts it: iterations done = those whose end fits.
    cls = {**CLS, "arrivals_per_day": 100, "count": 1, "iterations": 1000,
           "checkpoint": {"every_iterations": 100, "write_minutes": 30}}
    sc = rl_scenario(tmp_path, [cls], horizon_days=1)
    res = costsim.simulate(sc)
    j = jobs_of(res, "own").iloc[0]
    assert not j.completed
    jobs = workload.generate(sc)
    wp = plan_work(sc, jobs, resolve(sc)[0])
    held = 24 - j.start_h
    a = int(jobs.iter_start[0])
    ends = np.cumsum(wp.iter_h[a:a + 1000]) + (np.arange(1000) // 100) * 0.5
    assert j.iterations == int((ends <= held).sum()) > 0
    s = res.summary.iloc[0]
    assert s.iterations_per_day == j.iterations / 1.0
    assert s.cost_per_iteration_usd == pytest.approx(s.total_cost_usd / j.iterations)


def test_faster_gpu_shortens_the_same_jobs(tmp_path):
    sc = rl_scenario(tmp_path, [{**CLS, "rollout": {"response_tokens": 500}}],
                     options=[cloud("h100"), cloud("b200", gpu_type="B200"), cloud("a100", gpu_type="A100")])
    res = costsim.simulate(sc)
    it = res.phases.set_index("option").iteration_s
    assert it["b200"] < it["h100"] < it["a100"]
    runs = res.jobs.pivot(index="job_id", columns="option", values="gpu_hours")
    assert (runs.b200 < runs.h100).all() and (runs.h100 < runs.a100).all()


def test_phases_table_and_rl_summary(tmp_path):
    sc = rl_scenario(tmp_path, [CLS, {**CLS, "name": "async", "placement": "disaggregated", "mode": "async"}])
    res = costsim.simulate(sc)
    ph = res.phases.set_index("job_class")
    assert ph.loc["async", "iteration_s"] < ph.loc["a", "iteration_s"]
    assert 0.6 <= ph.loc["a", "rollout_share"] <= 0.8  # DESIGN section 13: long-CoT sync GRPO
    # v2 phases: re-prefill overheads only when async; the straggler is a share of the rollout.
    assert ph.loc["a", "overhead_s"] == 0.0 and ph.loc["async", "overhead_s"] > 0.0
    assert ph.loc["a", "logprobs_s"] > 0.0
    assert ((ph.straggler_share >= 0) & (ph.straggler_share <= 1)).all()
    # rollout tokens/s per GPU: the class's response tokens over its rollout seconds × rollout GPUs (16; 8)
    jobs = workload.generate(sc)
    for k, name, g_r in ((0, "a", 16), (1, "async", 8)):
        rows = np.concatenate([np.arange(a, a + i) for a, i in zip(jobs.iter_start[jobs.class_index == k],
                                                                   jobs.iterations[jobs.class_index == k], strict=True)])
        expect = jobs.length_sum[rows].sum() / (len(rows) * ph.loc[name, "rollout_s"] * g_r)
        assert ph.loc[name, "rollout_tokens_per_s_per_gpu"] == pytest.approx(expect, rel=1e-9)
    j = res.jobs
    assert ph.loc["a", "iterations_done"] == j[j.job_class == "a"].iterations.sum()
    assert res.summary.iterations_per_day[0] == pytest.approx(j.iterations.sum() / 200)
