"""The engine against closed-form queueing results (Erlang C, Pollaczek–Khinchine, M/G/∞) and
Little's law. Formulas are written out here, independently of the package.

Statistical checks use one long seeded run, deletion of the first 10 % of jobs, and a 99 %
batch-means t-interval over 20 batches (Law & Kelton); ρ ≤ 0.8 keeps batches long enough.
"""

import math

import numpy as np
import pandas as pd
import pytest
from helpers import cloud, erlang_c, jobs_of, owned, scenario
from scipy import stats

import costsim
from costsim.workload.synth import JobGroup, make_trace


def batch_means(x: np.ndarray, batches: int = 20, conf: float = 0.99) -> tuple[float, float]:
    m = len(x) // batches
    means = x[: m * batches].reshape(batches, m).mean(axis=1)
    half = stats.t.ppf((1 + conf) / 2, batches - 1) * means.std(ddof=1) / math.sqrt(batches)
    return float(means.mean()), float(half)


def run_trace(tmp_path, group: JobGroup, days: float, option: dict, seed: int = 1) -> pd.DataFrame:
    trace = make_trace([group], days, seed)
    rows = trace[["submit_h", "gpus", "duration_h"]].itertuples(index=False)
    res = costsim.simulate(scenario(tmp_path, rows, [option], horizon_days=days * 1.05))
    return res


def waits_after_warmup(res, name):
    j = jobs_of(res, name)
    j = j[j.completed]
    return j.queue_delay_h.to_numpy()[len(j) // 10 :]


def test_erlang_c_golden_values():
    # Golden values from the research notes: C(3, 2) = 4/9; M/M/4 at λ=3, μ=1: Wq = 0.509434.
    assert erlang_c(3, 2.0) == pytest.approx(4 / 9, abs=1e-12)
    assert erlang_c(4, 3.0) / (4 - 3) == pytest.approx(0.509434, abs=1e-6)


@pytest.mark.slow
def test_mmc_mean_wait_and_wait_probability(tmp_path):
    lam, mu, c = 3.0, 1.0, 4  # per hour; ρ = 0.75
    res = run_trace(tmp_path, JobGroup("mm4", per_day=lam * 24, gpus=1, mean_h=1 / mu, law="exponential"),
                    days=60_000 / 24, option=owned(gpus=c, gpus_per_node=c, scheduler="fifo"))
    w = waits_after_warmup(res, "own")
    wq = erlang_c(c, lam / mu) / (c * mu - lam)
    mean, half = batch_means(w)
    assert abs(mean - wq) <= half and abs(mean - wq) / wq < 0.06, (mean, half, wq)
    p_wait, half_p = batch_means((w > 1e-12).astype(float))
    assert abs(p_wait - erlang_c(c, lam / mu)) <= half_p, (p_wait, half_p)
    # Utilisation converges fast: ρ within 1 % (over the arrival window, not the run-out after it).
    ts = res.timeseries[res.timeseries.hour < 60_000]
    assert ts.busy_gpus.sum() / ts.capacity_gpus.sum() == pytest.approx(lam / (c * mu), rel=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("law, cv, lam", [("deterministic", 0.0, 0.7), ("lognormal", 1.5, 0.5)])
def test_mg1_pollaczek_khinchine(tmp_path, law, cv, lam):
    # Wq = λ E[S²] / (2 (1 − ρ)) = ρ E[S] (1 + C_s²) / (2 (1 − ρ)). Time runs in units of
    # E[S] = 0.25 h (ρ = λ per unit), so 250,000 jobs fit the 30-year horizon limit.
    unit_h = 0.25
    rho = lam
    wq = rho * unit_h * (1 + cv * cv) / (2 * (1 - rho))
    days = (80_000 if law == "deterministic" else 250_000) * unit_h / lam / 24
    res = run_trace(tmp_path, JobGroup("mg1", per_day=lam * 24 / unit_h, gpus=1, mean_h=unit_h, cv=cv, law=law),
                    days=days, option=owned(gpus=1, gpus_per_node=1, scheduler="fifo"), seed=3)
    mean, half = batch_means(waits_after_warmup(res, "own"))
    assert abs(mean - wq) <= half, (mean, half, wq)
    assert abs(mean - wq) / wq < (0.05 if law == "deterministic" else 0.15)


def test_littles_law_is_an_identity_on_every_run(tmp_path):
    # ∫ queued jobs dt = Σ time each job waited inside the horizon; ∫ held GPUs dt = Σ GPU-hours.
    rng = np.random.default_rng(11)
    n = 2000
    rows = zip(np.sort(rng.uniform(0, 900, n)), rng.choice([1, 2, 8, 16, 24], n), rng.exponential(6, n), strict=True)
    res = costsim.simulate(scenario(tmp_path, rows, [owned(gpus=48, scheduler="backfill"), owned("fifo", gpus=32),
                                                     cloud(max_gpus=40, provisioning_delay_h=0.3)], horizon_days=40))
    ts = res.timeseries.assign(width=lambda d: np.minimum(d.hour + 1, 960) - d.hour)
    for name, j in res.jobs.groupby("option"):
        t = ts[ts.option == name]
        assert (t.queued_jobs * t.width).sum() == pytest.approx(j.queue_delay_h.sum(), rel=1e-9)
        assert (t.busy_gpus * t.width).sum() == pytest.approx(j.gpu_hours.sum(), rel=1e-9)


@pytest.mark.slow
def test_unlimited_cloud_is_m_g_infinity(tmp_path):
    # Busy GPUs in M/G/∞ are Poisson(a = λ E[S]) whatever the run-time law (here lognormal, cv 2).
    lam, mean_s = 4.0, 2.5  # a = 10
    days = 4000
    res = run_trace(tmp_path, JobGroup("mginf", per_day=lam * 24, gpus=1, mean_h=mean_s, cv=2.0),
                    days=days, option=cloud(gpus_per_instance=1), seed=5)
    j = jobs_of(res, "cloud")
    a = lam * mean_s
    t = np.arange(200.0, days * 24, 7.0)  # sample instants, past the start-up transient
    s, e = np.sort(j.start_h.to_numpy()), np.sort(j.start_h.to_numpy() + (j.gpu_hours / 1).to_numpy())
    level = np.searchsorted(s, t, side="right") - np.searchsorted(e, t, side="right")
    assert level.mean() == pytest.approx(a, rel=0.02)
    assert level.var() / level.mean() == pytest.approx(1.0, abs=0.08)  # Poisson: variance = mean
    ks = np.arange(0, 25)
    observed = np.array([(level == k).sum() for k in ks[:-1]] + [(level >= ks[-1]).sum()])
    expected = np.append(stats.poisson.pmf(ks[:-1], a), stats.poisson.sf(ks[-1] - 1, a)) * len(level)
    keep = expected > 5
    chi2 = (((observed - expected) ** 2 / expected)[keep]).sum()
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 0.001
    # Time-average held GPUs from the hourly table agree with a too.
    ts = res.timeseries
    assert ts.busy_gpus[(ts.hour > 200) & (ts.hour < days * 24)].mean() == pytest.approx(a, rel=0.02)
