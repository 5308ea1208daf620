"""Confidence intervals over replications (costsim.runs.stats): t-intervals and paired differences
checked against hand calculations, and the intervals' coverage of the Erlang C mean wait over
repeated M/M/c experiments, and of the Pollaczek-Khinchine M/D/1 mean wait over repeated sweeps
(``costsim.sweep`` end to end: sweep file, replication seeds, the engine, the summary, the means)."""

import math

import numpy as np
import pandas as pd
import pytest
from helpers import erlang_c, owned, scenario

import costsim
from costsim.runs.stats import differences_table, means_table, t_interval
from costsim.runs.sweepfile import replication_seed
from costsim.workload.synth import JobGroup, make_trace

# Student-t quantiles from tables (scipy is what the package uses; these are the printed values).
T_975_1, T_975_2, T_975_3, T_95_3 = 12.706205, 4.302653, 3.182446, 2.353363


def test_t_interval_by_hand():
    # [1, 2, 3, 4]: mean 2.5, s = √(5/3) = 1.290994, half-width t(0.975, 3) · s / √4 = 2.054260.
    mean, low, high = t_interval(np.array([1.0, 2.0, 3.0, 4.0]))
    assert mean == 2.5
    assert (low, high) == pytest.approx((2.5 - 2.054260, 2.5 + 2.054260), abs=1e-6)
    assert 2.054260 == pytest.approx(T_975_3 * 1.290994 / 2, abs=1e-6)
    # 90 %: t(0.95, 3) = 2.353363, half-width 1.519090.
    assert t_interval([1, 2, 3, 4], level=0.90)[1:] == pytest.approx((2.5 - 1.519090, 2.5 + 1.519090), abs=1e-6)
    # A constant has no spread; one value has no interval; NaN is left out.
    assert t_interval(np.array([7.0, 7.0, 7.0])) == (7.0, 7.0, 7.0)
    m, lo, hi = t_interval(np.array([3.0]))
    assert m == 3.0 and math.isnan(lo) and math.isnan(hi)
    assert all(math.isnan(x) for x in t_interval(np.array([])))
    assert t_interval([1.0, np.nan, 2.0, 3.0, 4.0]) == t_interval([1.0, 2.0, 3.0, 4.0])
    for bad in (0, 1, 1.5, True):
        with pytest.raises(ValueError, match="level"):
            t_interval([1.0, 2.0], level=bad)


def small_runs() -> pd.DataFrame:
    """Variant v0: options A, B, C over 3 replications; v1: A in replications 0 and 1, B only in 1."""
    rows = [  # variant, replication, option, cost, delay
        ("v0", 0, "A", 10, 1), ("v0", 0, "B", 7, 2), ("v0", 0, "C", 10, 0),
        ("v0", 1, "A", 12, 1), ("v0", 1, "B", 10, 3), ("v0", 1, "C", 12, 0),
        ("v0", 2, "A", 14, 1), ("v0", 2, "B", 10, 4), ("v0", 2, "C", 14, 0),
        ("v1", 0, "A", 1, 0), ("v1", 1, "A", 2, 0), ("v1", 1, "B", 5, 0),
    ]
    return pd.DataFrame(rows, columns=["variant", "replication", "option", "cost", "delay"])


def test_the_quantile_is_scipy_stats_t_bit_for_bit():
    """``stdtrit`` is what ``scipy.stats.t.ppf`` calls: the same intervals, to the last bit, without
    importing scipy.stats."""
    from scipy import stats

    rng = np.random.default_rng(5)
    for n in (2, 3, 5, 30, 200):
        x = rng.normal(10.0, 3.0, n)
        for level in (0.9, 0.95, 0.99):
            half = stats.t.ppf((1 + level) / 2, n - 1) * x.std(ddof=1) / np.sqrt(n)
            mean, low, high = t_interval(x, level)
            assert (low, high) == (mean - float(half), mean + float(half))
    runs = pd.DataFrame({"variant": "v", "option": ["a"] * 7 + ["b"] * 2, "m": rng.normal(size=9)})
    table = means_table(runs, ["m"]).set_index("option")
    for option, g in runs.groupby("option"):
        assert t_interval(g["m"].to_numpy())[1:] == (table.at[option, "m_low"], table.at[option, "m_high"])


def test_means_table_by_hand():
    m = means_table(small_runs(), ["cost", "delay"])
    assert list(m.columns) == ["variant", "option", "n", "cost", "cost_low", "cost_high", "cost_n",
                               "delay", "delay_low", "delay_high", "delay_n"]
    assert list(zip(m.variant, m.option, m.n, strict=True)) == [("v0", "A", 3), ("v0", "B", 3), ("v0", "C", 3), ("v1", "A", 2), ("v1", "B", 1)]
    h = T_975_2 * 2 / math.sqrt(3)  # A's cost: [10, 12, 14], s = 2
    assert m.loc[0, ["cost", "cost_low", "cost_high"]].tolist() == pytest.approx([12, 12 - h, 12 + h])
    h = T_975_2 * math.sqrt(3) / math.sqrt(3)  # B's cost: [7, 10, 10], mean 9, s = √3
    assert m.loc[1, ["cost", "cost_low", "cost_high"]].tolist() == pytest.approx([9, 9 - h, 9 + h])
    assert m.loc[1, ["delay", "delay_low", "delay_high"]].tolist() == pytest.approx([3, 3 - T_975_2 / math.sqrt(3), 3 + T_975_2 / math.sqrt(3)])
    h = T_975_1 * math.sqrt(0.5) / math.sqrt(2)  # v1 A: [1, 2], one degree of freedom
    assert m.loc[3, ["cost", "cost_low", "cost_high"]].tolist() == pytest.approx([1.5, 1.5 - h, 1.5 + h])
    assert m.loc[4, "cost"] == 5 and m.loc[4, ["cost_low", "cost_high"]].isna().all()


def test_differences_are_paired_by_replication_by_hand():
    d = differences_table(small_runs(), ["cost", "delay"])
    assert list(d.columns) == ["variant", "option", "versus", "n", "cost_diff", "cost_diff_low", "cost_diff_high",
                               "cost_diff_n", "delay_diff", "delay_diff_low", "delay_diff_high", "delay_diff_n"]
    # Every unordered pair once, in the variant's option order.
    assert list(zip(d.variant, d.option, d.versus, d.n, strict=True)) == [("v0", "A", "B", 3), ("v0", "A", "C", 3), ("v0", "B", "C", 3),
                                                             ("v1", "A", "B", 1)]
    h = T_975_2 / math.sqrt(3)  # s = 1 for each of these
    # A − B cost per replication: 3, 2, 4 -> mean 3, s = 1.
    assert d.loc[0, ["cost_diff", "cost_diff_low", "cost_diff_high"]].tolist() == pytest.approx([3, 3 - h, 3 + h])
    # A − B delay: -1, -2, -3 -> mean -2, s = 1.
    assert d.loc[0, ["delay_diff", "delay_diff_low", "delay_diff_high"]].tolist() == pytest.approx([-2, -2 - h, -2 + h])
    # A − C: identical in every replication -> zero width, though each alone spreads 10 … 14.
    assert d.loc[1, ["cost_diff", "cost_diff_low", "cost_diff_high"]].tolist() == [0, 0, 0]
    assert d.loc[2, ["cost_diff", "cost_diff_low", "cost_diff_high"]].tolist() == pytest.approx([-3, -3 - h, -3 + h])
    # v1: only replication 1 has both (2 − 5): one pair, no interval.
    assert d.loc[3, "cost_diff"] == -3 and d.loc[3, ["cost_diff_low", "cost_diff_high"]].isna().all()
    # Pairing is what narrows it: the interval of A − B is narrower than one built from the two
    # options' spreads as if they were independent (Welch's standard error, same t).
    unpaired = T_975_2 * math.sqrt(2**2 / 3 + 3 / 3)
    assert d.loc[0, "cost_diff_high"] - d.loc[0, "cost_diff"] < unpaired / 2


def test_tables_refuse_what_they_cannot_pair():
    runs = small_runs()
    with pytest.raises(ValueError, match="more than one row"):
        differences_table(pd.concat([runs, runs.iloc[:1]]), ["cost"])
    with pytest.raises(ValueError, match="no column 'price'"):
        means_table(runs, ["price"])
    assert differences_table(runs[runs.option == "A"], ["cost"]).empty  # one option: no pair


def test_means_table_is_t_interval_per_group():
    rng = np.random.default_rng(2)
    runs = pd.DataFrame({"variant": np.repeat(["v0", "v1"], 12), "option": np.tile(np.repeat(["a", "b"], 6), 2),
                         "replication": np.tile(np.arange(6), 4), "x": rng.lognormal(0, 1, 24)})
    m = means_table(runs, ["x"], level=0.9)
    for row in m.itertuples():
        x = runs[(runs.variant == row.variant) & (runs.option == row.option)].x.to_numpy()
        assert (row.x, row.x_low, row.x_high) == pytest.approx(t_interval(x, level=0.9), rel=1e-12)


@pytest.mark.slow
def test_intervals_cover_the_erlang_c_mean_wait_about_95_percent(tmp_path):
    """K independent experiments of R replications of an M/M/c queue (c one-GPU servers, FIFO,
    Poisson arrivals, exponential run times): the 95 % t-interval of the mean queue delay over each
    experiment's R replications should cover the Erlang C mean wait Wq in about 95 % of experiments.

    Tolerance: if the intervals were exact, the number covering would be Binomial(K, 0.95): with
    K = 100, P(fewer than 85) = 4e-5 and P(all 100) = 0.006. They are not quite exact: each
    replication starts empty (its first 10 % of jobs are deleted, but some initial-transient bias
    stays) and is finite, so its mean wait is slightly biased and right-skewed rather than normal,
    which makes a t-interval a little short. At ρ = 0.6 with ~900 jobs a replication the bias is
    under 2 % of Wq against half-widths of ~70 % of Wq (R = 3), so we accept coverage in
    [0.85, 0.99]. R = 3 also makes the t quantile matter: a normal quantile (1.96 instead of
    4.30) would cover only ~81 %.

    Speed: the R replications of an experiment are blocks of one trace separated by idle gaps long
    enough that the system empties (checked below), so each block starts empty exactly as a
    separate run would: one simulate() call per experiment. Replication r's arrivals and run times
    come from ``replication_seed(k, r)``, as in a sweep.
    """
    c, lam, mu = 3, 1.8, 1.0  # servers, arrivals per hour, services per hour: ρ = 0.6
    wq = erlang_c(c, lam / mu) / (c * mu - lam)  # hours
    K, R, block_h, gap_h = 100, 3, 500.0, 50.0
    group = JobGroup("mmc", per_day=lam * 24, gpus=1, mean_h=1 / mu, law="exponential")
    rows = []
    for k in range(K):
        blocks = [make_trace([group], block_h / 24, replication_seed(k, r)) for r in range(R)]
        trace = pd.concat([b.assign(submit_h=b.submit_h + r * (block_h + gap_h)) for r, b in enumerate(blocks)])
        sc = scenario(tmp_path, trace[["submit_h", "gpus", "duration_h"]].itertuples(index=False),
                      [owned(gpus=c, gpus_per_node=1, scheduler="fifo")], horizon_days=R * (block_h + gap_h) / 24)
        jobs = costsim.simulate(sc).jobs
        assert jobs.completed.all()
        replication = (jobs.submit_h // (block_h + gap_h)).astype(int)
        for r, b in jobs.groupby(replication):
            assert b.end_h.max() < (r + 1) * (block_h + gap_h)  # empty before the next block: independent
            waits = b.sort_values("submit_h").queue_delay_h.to_numpy()
            rows.append({"variant": f"e{k}", "replication": r, "option": "own", "wait_h": waits[len(waits) // 10:].mean()})
    runs = pd.DataFrame(rows)
    assert len(runs) == K * R
    means = means_table(runs, ["wait_h"])
    covered = ((means.wait_h_low <= wq) & (wq <= means.wait_h_high)).mean()
    print(f"coverage {covered:.2f}, Wq {wq:.4f} h, pooled mean {runs.wait_h.mean():.4f} h")
    assert 0.85 <= covered <= 0.99, (covered, wq, runs.wait_h.mean())
    assert runs.wait_h.mean() == pytest.approx(wq, rel=0.05)  # the pooled mean agrees too


MD1 = """\
name: md1
horizon_days: 40
workload:
  classes:
    - name: grpo
      arrivals_per_day: 24.8
      gpus: 8
      iterations: 10
      model_params_b: 7
      rollout: {response_tokens: {mean: 2000, cv: 0}}
options:
  - {name: own, kind: owned, gpu_type: H100, gpus: 8, lead_time_days: 0, failures: null, scheduler: fifo}
"""


@pytest.mark.slow
def test_sweep_intervals_cover_the_md1_mean_wait_about_95_percent(tmp_path):
    """K sweeps (sweep seeds 0..K-1) of R replications of an M/D/1 queue: Poisson arrivals of RL
    jobs of 8 GPUs on an owned pool of 8 GPUs (one server), every job the same length D (fixed
    iterations, constant response length, no failures). The 95 % interval of ``queue_delay_mean_h``
    in each sweep's means table should cover the Pollaczek-Khinchine mean wait
    Wq = ρ·D / (2(1 − ρ)) in about 95 % of the sweeps.

    D is the engine's own iteration model (read from one run's job table; the queueing is what is
    checked). Tolerance as in the M/M/c test above: Binomial(100, 0.95) rarely leaves [0.85, 0.99];
    each replication starts empty and its last jobs may not start within the 40 days, which biases
    its mean wait by about 2 % of Wq (the pooled mean below), against half-widths of ~30 % of Wq.
    """
    (tmp_path / "s.yaml").write_text(MD1)
    one = costsim.simulate(tmp_path / "s.yaml").jobs
    run_h = (one.end_h - one.start_h).to_numpy()
    run_h = run_h[np.isfinite(run_h)]  # the jobs that finish within the horizon
    assert len(run_h) > 800 and np.ptp(run_h) < 1e-9  # deterministic service: M/D/1
    d, lam = run_h[0], 24.8 / 24
    rho = lam * d
    assert 0.55 < rho < 0.65
    wq = rho * d / (2 * (1 - rho))
    K, R = 100, 3
    rows = []
    for k in range(K):
        (tmp_path / "sw.yaml").write_text(f"base: s.yaml\nseed: {k}\nreplications: {R}\n")
        res = costsim.sweep(tmp_path / "sw.yaml", executor="local")
        assert list(res.runs.replication) == list(range(R)) and (res.runs.jobs_completed > 800).all()
        rows.append(res.means.iloc[0])
    means = pd.DataFrame(rows)
    covered = ((means.queue_delay_mean_h_low <= wq) & (wq <= means.queue_delay_mean_h_high)).mean()
    print(f"coverage {covered:.2f}, Wq {wq:.4f} h, pooled mean {means.queue_delay_mean_h.mean():.4f} h")
    assert 0.85 <= covered <= 0.99, (covered, wq)
    assert means.queue_delay_mean_h.mean() == pytest.approx(wq, rel=0.05)


def test_each_metric_counts_the_replications_its_interval_uses():
    # A metric that is NaN in one replication (a cost per iteration with no iteration done): the
    # interval is over the other two values (t with one degree of freedom), and m_n says so, while
    # n still counts the replications.
    runs = pd.DataFrame({"variant": ["v"] * 6, "replication": [0, 0, 1, 1, 2, 2], "option": list("ababab"),
                         "x": [1.0, 3.0, float("nan"), 4.0, 2.0, 5.0]})
    m = means_table(runs, ["x"]).set_index("option")
    assert (m.loc["a", "n"], m.loc["a", "x_n"], m.loc["b", "x_n"]) == (3, 2, 3)
    h = T_975_1 * math.sqrt(0.5) / math.sqrt(2)  # a: [1, 2]
    assert m.loc["a", ["x", "x_low", "x_high"]].tolist() == pytest.approx([1.5, 1.5 - h, 1.5 + h])
    d = differences_table(runs, ["x"]).iloc[0]
    assert (d.n, d.x_diff_n) == (3, 2) and d.x_diff == pytest.approx(-2.5)  # pairs (1-3), (2-5)


def test_the_95_percent_quantiles_of_up_to_31_replications_are_stdtrit_s_without_importing_it():
    """``T_975`` holds stdtrit's values to the last bit, read for scalars and arrays; any other
    level or count asks scipy; and a 95 % interval of a few replications leaves scipy.special
    unimported (the dashboard's server shows runs without ever sampling)."""
    import subprocess
    import sys

    from scipy.special import stdtrit

    from costsim.runs.stats import T_975, t_quantile

    dfs = np.arange(1, len(T_975) + 1)
    assert [t_quantile(int(d), 0.975) for d in dfs] == [float(stdtrit(d, 0.975)) for d in dfs]
    assert np.array_equal(t_quantile(dfs, 0.975), stdtrit(dfs, 0.975))
    assert t_quantile(31, 0.975) == stdtrit(31, 0.975) and t_quantile(4, 0.95) == stdtrit(4, 0.95)
    assert np.array_equal(t_quantile(np.array([2, 40]), 0.975), stdtrit(np.array([2, 40]), 0.975))
    code = ("import sys, numpy as np, pandas as pd; from costsim.runs.stats import t_interval, means_table; "
            "t_interval(np.array([1.0, 2.0, 4.0])); "
            "means_table(pd.DataFrame({'variant': 'v', 'option': ['a'] * 3, 'm': [1.0, 2.0, 4.0]}), ['m']); "
            "print('scipy.special' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_quantile_over_an_array_of_levels_is_stdtrit_s():
    from scipy.special import stdtrit

    from costsim.runs.stats import t_quantile

    p = np.array([0.975, 0.95, 0.995])
    assert np.array_equal(t_quantile(4, p), stdtrit(4, p))
