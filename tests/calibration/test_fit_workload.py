"""``costsim fit-workload``: fitting recovers known parameters from generated traces (within
tolerances derived from the estimators' standard errors), the KS checks separate the true law from
a wrong one, the fitted job classes reproduce the fit through the scenario's own generator, and the
CLI exits 2 with file:line and writes nothing on bad input."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.offline
import pytest
import typer
from paths import TRACE_SAMPLES
from ruamel.yaml import YAML
from typer.testing import CliRunner

import costsim
from costsim.calibration.fit import (
    EMPIRICAL_BINS,
    arrival_check,
    exposure,
    fit_class,
    fit_durations,
    fit_trace,
    intensity_integral,
    profile,
    split_by_gpus,
)
from costsim.calibration.fit_classes import job_classes_of, trace_of
from costsim.cli.fit_workload import fit_workload_command
from costsim.cli.import_trace import import_trace_command
from costsim.runs import api
from costsim.runs.outdir import publish_files as publish
from costsim.scenario import Problem, ScenarioError
from costsim.scenario.jobclass import JobClass
from costsim.scenario.trace import read_trace
from costsim.workload.jobclass import draw_durations
from costsim.workload.rng import stream
from costsim.workload.synth import JobGroup, make_trace

app = typer.Typer(pretty_exceptions_enable=False)
app.command("fit-workload")(fit_workload_command)
app.command("import-trace")(import_trace_command)


def run(*args):
    return CliRunner().invoke(app, ["fit-workload", *map(str, args)], env={"COLUMNS": "200"})


def trace_file(tmp_path: Path, frame, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def cv_tolerance(cv: float, n: int, z: float = 4.0) -> float:
    """z standard errors of log(sample cv) for a lognormal sample of n with this cv (delta method,
    bounded by SE(log s) + SE(log mean)): Var(s²)/σ⁴ ≈ (κ − 1)/n, κ = w⁴ + 2w³ + 3w² − 3, w = 1 + cv²."""
    w = 1 + cv * cv
    kurtosis = w**4 + 2 * w**3 + 3 * w**2 - 3
    return z * (np.sqrt((kurtosis - 1) / (4 * n)) + cv / np.sqrt(n))


def test_lognormal_mean_cv_rate_and_gpus_recovered(tmp_path):
    # 50 jobs/day for 60 days: n ≈ 3000. Lognormal mean 3 h, cv 1.5; b 10 jobs/day, cv 0.5. The
    # sample mean has relative standard error cv/√n (2.7 % for a), the rate 1/√n (1.8 %); the
    # sample cv's error comes from the fourth moment (``cv_tolerance``: 64 % for a, so only b's cv
    # is checked against the truth): tolerances of 4 standard errors.
    frame = make_trace([JobGroup("a", per_day=50, gpus=4, mean_h=3.0, cv=1.5),
                        JobGroup("b", per_day=10, gpus=8, mean_h=0.5, cv=0.5)], horizon_days=60, seed=1)
    fits = {f.name: f for f in fit_trace(read_trace(trace_file(tmp_path, frame)))}
    a, b = fits["a"], fits["b"]
    assert [f.name for f in fit_trace(read_trace(tmp_path / "trace.csv"))] == ["a", "b"]  # most jobs first
    assert abs(a.duration.mean_h / 3.0 - 1) < 4 * 1.5 / np.sqrt(a.jobs)
    assert abs(a.per_day / 50 - 1) < 4 / np.sqrt(a.jobs) and abs(b.per_day / 10 - 1) < 4 / np.sqrt(b.jobs)
    assert abs(b.duration.mean_h / 0.5 - 1) < 4 * 0.5 / np.sqrt(b.jobs)
    assert abs(np.log(b.duration.cv / 0.5)) < cv_tolerance(0.5, b.jobs)
    assert a.gpus_pmf == {4: 1.0} and b.gpus_pmf == {8: 1.0}
    # by moments: the sample mean and (1/n) sd ÷ mean, and the lognormal's μ, σ by the closed form
    x = frame.loc[frame.job_class == "a", "duration_h"].to_numpy()
    assert a.duration.mean_h == pytest.approx(x.mean(), rel=1e-12)
    assert a.duration.cv == pytest.approx(x.std() / x.mean(), rel=1e-12)
    assert a.duration.sigma == pytest.approx(np.sqrt(np.log(1 + a.duration.cv**2)), rel=1e-12)
    assert np.exp(a.duration.mu + a.duration.sigma**2 / 2) == pytest.approx(x.mean(), rel=1e-12)
    # the true family: a small KS (its parameters are estimates: more than the 0.025 of a known law;
    # a wrong family's is 0.12, test_ks_flags_a_wrong_family); the flat Poisson arrivals pass the
    # time-rescaling check
    assert a.duration.ks < 0.05
    assert a.arrival_ks < 0.04 and a.arrival_ks_p > 0.01


def test_a_few_jobs_of_no_time_leave_the_lognormal_mean_alone():
    # 1,000 lognormal run times of mean 2 h, cv 1, and 10 jobs of 1e-9 h (zero-second jobs as the
    # trace reader stores them). Maximum likelihood on log durations put the mean at 13 h; the
    # lognormal by moments keeps the sample mean, within 4 standard errors (cv/√n) of 2 h.
    rng = np.random.default_rng(0)
    sigma2 = np.log(2.0)  # cv 1
    x = np.concatenate([rng.lognormal(np.log(2.0) - sigma2 / 2, np.sqrt(sigma2), 1000), np.full(10, 1e-9)])
    fit = fit_durations(x)
    assert fit.law == "lognormal" and fit.mean_h == pytest.approx(x.mean(), rel=1e-12)
    assert abs(fit.mean_h / 2.0 - 1) < 4 * 1.0 / np.sqrt(1000)
    assert abs(np.log(fit.cv)) < cv_tolerance(1.0, 1000)


def test_the_empirical_law_keeps_every_job_and_the_mean():
    # Heavy-tailed run times (lognormal σ 2): 250 jobs, and 12,000 (more than EMPIRICAL_BINS). The
    # law's mean is the mean of its quantile function, linear between evenly spaced probabilities:
    # the average of consecutive quantiles' midpoints (trapezoids), computed here apart from the fit.
    rng = np.random.default_rng(4)
    for n in (250, 12_000):
        x = rng.lognormal(0.0, 2.0, n)
        q = np.array(fit_durations(x, "empirical").quantiles)
        assert len(q) == 2 * min(n, EMPIRICAL_BINS) + 1 and np.all(np.diff(q) >= 0)
        assert np.mean((q[1:] + q[:-1]) / 2) == pytest.approx(x.mean(), rel=0.01)
        if n <= EMPIRICAL_BINS:  # every order statistic, at its ECDF step's midpoint (i + ½)/n
            assert q[1::2].tolist() == np.sort(x).tolist() and q[0] == x.min() and q[-1] == x.max()
    # and the scenario's generator draws from it with that mean: 400,000 draws, within 4 SE
    law = fit_durations(x[:250], "empirical")
    cls = JobClass.model_validate({"name": "e", "arrivals_per_day": 1.0, "gpus": 1,
                                   "duration": {"law": "empirical", "quantiles_h": list(law.quantiles)}})
    drawn = draw_durations(stream(0, "job_shapes", "e"), cls, 400_000)
    assert abs(drawn.mean() - x[:250].mean()) < 4 * drawn.std() / np.sqrt(len(drawn))


def test_ks_flags_a_wrong_family():
    rng = np.random.default_rng(7)
    uniform = rng.uniform(1.0, 10.0, 2000)
    wrong = fit_durations(uniform, "lognormal")
    # a lognormal cannot follow a flat density with a hard edge: its best fit misses by ~0.07
    assert wrong.ks > 0.05 and wrong.ks_p < 1e-5
    right = fit_durations(rng.lognormal(1.0, 0.8, 2000), "lognormal")
    assert right.ks < 0.03 and right.ks_p > 0.01
    empirical = fit_durations(uniform, "empirical")
    assert empirical.law == "empirical" and empirical.ks < 0.02  # the quantiles follow any shape
    assert empirical.quantiles[0] == uniform.min() and empirical.quantiles[-1] == uniform.max()
    assert fit_durations(np.full(5, 2.0)).law == "deterministic"


def test_exposure_and_intensity_by_hand():
    # 50 h: two whole days and hours 0 and 1 of a third
    assert exposure(50.0, 24, 1.0).tolist() == [3.0, 3.0] + [2.0] * 22
    # 10 days: one whole week and days 0, 1, 2 again
    assert exposure(240.0, 7, 24.0).tolist() == [48.0] * 3 + [24.0] * 4
    flat = np.ones(24), np.ones(7)
    assert intensity_integral(np.array([0.0, 2.5, 200.0]), 2.0, *flat) == pytest.approx([0.0, 5.0, 400.0])
    hourly = np.array([2.0] + [22 / 23] * 23)  # mean 1
    # hour 0 at 2× 0.5/h, then half an hour at 22/23 × 0.5/h
    assert intensity_integral(np.array([1.5]), 0.5, hourly, np.ones(7))[0] == pytest.approx(1.0 + 0.25 * 22 / 23)
    # a whole week of any profile holds rate × 168 expected jobs
    w = np.array([1.2, 1.2, 1.2, 1.2, 1.2, 0.5, 0.5])
    assert intensity_integral(np.array([168.0]), 0.5, hourly, w)[0] == pytest.approx(84.0)


def test_rate_and_profile_by_hand():
    # 30 jobs over a 60 h window: 12 per day. Submits at 0, 2, 4, … 58 h: one every 2 h, so hours of
    # the day 0, 2, …, 22 get the jobs; hours 0–11 are covered 3 times (0–12 h, 24–36 h, 48–60 h),
    # hours 12–23 twice. Hour 0 holds submits 0, 24, 48 (3 jobs in 3 h of exposure); hour 12 holds
    # 12, 36 (2 in 2 h): both 1 job per exposed hour, twice the overall 0.5 per hour.
    t = np.arange(0.0, 60.0, 2.0)
    fit = fit_class("c", t, np.array([1, 2] * 15), np.full(30, 1.5), window_h=60.0)
    assert fit.per_day == pytest.approx(12.0) and fit.gpus_pmf == {1: 0.5, 2: 0.5}
    assert fit.hourly == pytest.approx([2.0, 0.0] * 12)
    # days 0 and 1: 12 jobs in 24 h; day 2 (48–60 h): 6 in 12 h; all 0.5 per hour: flat, and the
    # days 3–6 the window never saw are 1
    assert fit.weekly == pytest.approx([1.0] * 7)
    assert fit.duration.law == "deterministic" and fit.duration.mean_h == 1.5


def test_profile_weights_hours_by_exposure():
    # flat arrivals over 1.5 days: hours 0–11 seen twice, 12–23 once; the profile must stay flat
    rng = np.random.default_rng(11)
    t = np.sort(rng.uniform(0.0, 36.0, 7200))
    hourly = profile(t, 36.0, 24, 1.0)
    assert np.abs(hourly - 1).max() < 0.15  # ≥ 300 jobs per hour bin: SE ≤ 6 %
    assert hourly.mean() == pytest.approx(1.0, abs=1e-12)  # exactly mean 1, as documented
    weekly = profile(t, 36.0, 7, 24.0)  # days 2–6 never seen: 1 before normalising
    assert weekly.mean() == pytest.approx(1.0, abs=1e-12) and np.ptp(weekly[2:]) == 0


def seasonal_times(rng, per_day, hourly, weekly, days):
    """Poisson arrivals with intensity per_day/24 · hourly[h] · weekly[d], by thinning (written
    here, apart from the package's generator)."""
    peak = per_day / 24 * hourly.max() * weekly.max()
    t = np.sort(rng.uniform(0, days * 24, rng.poisson(peak * days * 24)))
    rate = per_day / 24 * hourly[np.floor(t).astype(int) % 24] * weekly[np.floor(t / 24).astype(int) % 7]
    return t[rng.uniform(0, 1, len(t)) < rate / peak]


def test_profiles_recovered_and_deseasonalising_matters():
    hourly = np.where((np.arange(24) >= 8) & (np.arange(24) < 20), 1.5, 0.5)  # mean 1
    weekly = np.array([1.28] * 5 + [0.3, 0.3])  # mean 1
    t = seasonal_times(np.random.default_rng(3), 100.0, hourly, weekly, 70)  # ≈ 7000 jobs
    window = 70 * 24.0
    fit_h, fit_w = profile(t, window, 24, 1.0), profile(t, window, 7, 24.0)
    assert fit_h.mean() == pytest.approx(1.0) and fit_w.mean() == pytest.approx(1.0)
    # busy hours pool ≈ 5200 jobs (SE 1.4 %), quiet ≈ 1750 (2.4 %); weekend days ≈ 600 jobs (4 %)
    assert abs(fit_h[8:20].mean() / 1.5 - 1) < 0.05 and abs(np.r_[fit_h[:8], fit_h[20:]].mean() / 0.5 - 1) < 0.10
    assert np.abs(fit_h - hourly).max() < 0.3
    assert abs(fit_w[:5].mean() / 1.28 - 1) < 0.05 and abs(fit_w[5:].mean() / 0.3 - 1) < 0.15
    per_h = len(t) / window
    ks, p = arrival_check(t, per_h, fit_h, fit_w)
    assert ks < 0.03 and p > 0.01
    ks_flat, p_flat = arrival_check(t, per_h, np.ones(24), np.ones(7))  # seasonality left in
    assert ks_flat > 0.1 and p_flat < 1e-10
    # clockwork arrivals every half hour are not Poisson: gaps all equal, far from Exp(1)
    regular = np.arange(0, window, 0.5)
    ks_reg, p_reg = arrival_check(regular, 2.0, np.ones(24), np.ones(7))
    assert ks_reg > 0.3 and p_reg < 1e-10


def test_generated_trace_reproduces_the_fit_and_is_seeded(tmp_path):
    frame = make_trace([JobGroup("a", per_day=40, gpus=2, mean_h=2.0, cv=1.0)], horizon_days=30, seed=5)
    frame.loc[::3, "gpus"] = 8  # a third of the jobs on 8 GPUs
    fits = fit_trace(read_trace(trace_file(tmp_path, frame)), by="job_class")  # one class with a GPU pmf
    classes = job_classes_of(fits, 0.0)
    one, two = trace_of(classes, 30, seed=9), trace_of(classes, 30, seed=9)
    assert one.equals(two) and not one.equals(trace_of(classes, 30, seed=10))
    refit = fit_trace(read_trace(trace_file(tmp_path, one, "gen.csv")), by="job_class")[0]
    assert abs(refit.per_day / fits[0].per_day - 1) < 0.1  # n ≈ 1200: SE 3 %
    assert abs(refit.duration.mean_h / fits[0].duration.mean_h - 1) < 0.15
    assert abs(refit.gpus_pmf[8] - 1 / 3) < 0.05


class Tags(HTMLParser):
    """Attributes of every tag and the text of every script of a page."""

    def __init__(self):
        super().__init__()
        self.attrs, self.scripts, self._script = [], [], False

    def handle_starttag(self, tag, attrs):
        self.attrs += [(tag, k, v or "") for k, v in attrs]
        self._script = tag == "script"

    def handle_endtag(self, tag):
        self._script = False

    def handle_data(self, data):
        if self._script:
            self.scripts.append(data)


def test_cli_writes_job_classes_trace_and_report(tmp_path):
    frame = make_trace([JobGroup("x", per_day=30, gpus=1, mean_h=1.0, cv=1.0),
                        JobGroup("y", per_day=5, gpus=4, mean_h=6.0, cv=0.8)], horizon_days=20, seed=2)
    src = trace_file(tmp_path, frame)
    out, report, drawn = tmp_path / "classes.yaml", tmp_path / "fit.html", tmp_path / "drawn.csv"
    result = run(src, "--out", out, "--report", report, "--trace-out", drawn, "--days", 10, "--seed", 4)
    assert result.exit_code == 0, result.output
    assert "x: " in result.output and "duration KS" in result.output
    classes = YAML(typ="safe").load(out.read_text())["job_classes"]
    assert [c["name"] for c in classes] == ["x", "y"] and classes[1]["gpus"] == 4
    assert len(classes[0]["hourly_profile"]) == 24 and len(classes[0]["weekly_profile"]) == 7
    generated = read_trace(drawn)
    assert set(generated.job_class) == {"x", "y"} and generated.submit_h.max() < 240
    assert trace_of(classes, 10, seed=4)["duration_h"].to_numpy() == pytest.approx(generated.duration_h, rel=1e-9)
    html = report.read_text()
    assert html.count(plotly.offline.get_plotlyjs()[:500]) == 1  # plotly.js inlined once
    tags = Tags()
    tags.feed(html)
    assert not [a for a in tags.attrs if a[1] in ("src", "href")]  # nothing loaded: all inline
    figures = html.count('class="figure"')
    assert figures == 2 + 2 and len(tags.scripts) == figures + 1  # 2 profiles, a QQ plot per class; plotly.js once
    assert not [s for s in tags.scripts[1:] if "http" in s]  # the figures' scripts load nothing
    assert "QQ plots" in html and "Daily profile" in html and "Weekly profile" in html
    assert sorted(p.name for p in tmp_path.iterdir()) == ["classes.yaml", "drawn.csv", "fit.html", "trace.csv"]


def test_a_scenario_runs_the_fitted_classes(tmp_path):
    """trace → fit-workload → job_classes pasted under a scenario's workload → simulate: the jobs
    are the classes' (names, GPU counts) at the fitted rate (within a Poisson interval)."""
    frame = make_trace([JobGroup("a", per_day=20, gpus=2, mean_h=1.0, cv=1.0)], horizon_days=20, seed=8)
    src = trace_file(tmp_path, frame)
    assert run(src, "--out", tmp_path / "fit.yaml").exit_code == 0
    classes = (tmp_path / "fit.yaml").read_text().split("job_classes:\n", 1)[1]
    (tmp_path / "s.yaml").write_text(
        "name: fitted\nhorizon_days: 20\nworkload:\n  job_classes:\n"
        + "".join(f"  {line}\n" for line in classes.splitlines())
        + "options:\n  - {name: own, kind: owned, gpu_type: H100, gpus: 16, lead_time_days: 0}\n")
    res = costsim.simulate(api.load_scenario(tmp_path / "s.yaml"))
    jobs = res.jobs
    assert set(jobs.job_class) == {"a"} and set(jobs.gpus) == {2}
    fitted = fit_trace(read_trace(src))[0].per_day * 20
    assert abs(len(jobs) - fitted) < 4 * np.sqrt(fitted)


def test_cli_bad_trace_exits_2_with_file_line_and_writes_nothing(tmp_path):
    src = tmp_path / "bad.csv"
    src.write_text("submit_h,gpus,duration_h\n0,1,1.0\n1,x,2.0\n")
    out = tmp_path / "classes.yaml"
    out.write_text("previous\n")
    result = run(src, "--out", out, "--report", tmp_path / "fit.html")
    assert result.exit_code == 2
    assert f"error: {src}:3: gpus: 'x' is not a whole number" in result.output
    assert "Traceback" not in result.output
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "classes.yaml"]


@pytest.mark.parametrize(("args", "message"), [
    (("--distribution", "gamma"), "--distribution: 'gamma': one of lognormal, empirical"),
    (("--by", "user"), "--by: 'user': one of job_class_gpus, job_class, none"),
    (("--days", "0"), "--days: must be > 0"),
    (("--trace-out", "SRC"), "--trace-out: is the input file"),
    (("--trace-out", "OUT"), "must be different files"),
])
def test_cli_refused_flags(tmp_path, args, message):
    src = tmp_path / "t.csv"
    src.write_text("submit_h,gpus,duration_h\n0,1,1.0\n5,2,2.0\n9,1,0.5\n")
    out = tmp_path / "c.yaml"
    result = run(src, "--out", out, *[src if a == "SRC" else out if a == "OUT" else a for a in args])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]


def test_publish_replaces_nothing_when_a_writer_fails(tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    second.write_text("old\n")

    def broken(temp: Path) -> None:
        temp.write_text("half")
        raise ScenarioError("b.txt", [Problem((), "broken")])

    with pytest.raises(ScenarioError):
        publish({first: lambda temp: temp.write_text("new"), second: broken})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.txt"] and second.read_text() == "old\n"


def test_the_rate_is_right_over_a_window_of_part_of_a_week():
    # 10 days of a weekday-heavy week: the profiles' plain mean is not their mean over the window.
    # 20 windows of ≈ 1,000 jobs each: the mean fitted rate's SE is ≈ 0.7 %; the old n / window
    # rule gave +10 %. The arrival check then accepts the true model on most windows.
    hourly = np.where((np.arange(24) >= 8) & (np.arange(24) < 18), 3.0, 1.0)
    hourly = hourly / hourly.mean()
    weekly = np.array([2, 2, 2, 2, 2, 0.25, 0.25]) / np.mean([2, 2, 2, 2, 2, 0.25, 0.25])
    rng = np.random.default_rng(5)
    rates, ps = [], []
    for _ in range(20):
        t = seasonal_times(rng, 100.0, hourly, weekly, 10)
        f = fit_class("x", t, np.ones(len(t), dtype=int), rng.lognormal(0, 1, len(t)), 240.0)
        rates.append(f.per_day)
        ps.append(f.arrival_ks_p)
    assert abs(np.mean(rates) / 100.0 - 1) < 0.03
    assert np.median(ps) > 0.05


def test_profiles_are_by_the_source_clock_given_the_start(tmp_path):
    # Office hours: jobs only 09:00–16:59 Monday to Friday. The trace starts on Wednesday
    # 2024-03-06 at 13:00 (hour 61 of the week). The clock hour of each job is counted independently
    # with pandas from that start; the fitted profile must be zero exactly where no job fell.
    office = [{"name": "c", "arrivals_per_day": 300.0, "hourly_profile": [0.0] * 9 + [3.0] * 8 + [0.0] * 7,
               "weekly_profile": [1.4] * 5 + [0.0, 0.0], "profile_start_hour_of_week": 61.0, "gpus": 1,
               "duration": {"law": "lognormal", "mean_h": 1.0, "cv": 0.0}}]
    frame = trace_of(office, 21, seed=3)
    start = pd.Timestamp("2024-03-06T13:00:00") + pd.to_timedelta(frame.submit_h.min(), "h")
    frame["submit_h"] -= frame.submit_h.min()  # hour 0 = the first submit, as import-trace writes it
    clock = start + pd.to_timedelta(frame.submit_h, "h")
    assert clock.dt.hour.between(9, 16).all() and (clock.dt.day_of_week < 5).all()  # the generator kept the clock
    path = trace_file(tmp_path, frame)
    result = run(path, "--out", tmp_path / "c.yaml", "--start", start.isoformat(), "--trace-out", tmp_path / "c.csv")
    assert result.exit_code == 0, result.output
    cls = YAML(typ="safe").load((tmp_path / "c.yaml").read_text())["job_classes"][0]
    hourly, weekly = np.array(cls["hourly_profile"]), np.array(cls["weekly_profile"])
    seen_hours = np.bincount(clock.dt.hour, minlength=24) > 0
    seen_days = np.bincount(clock.dt.day_of_week, minlength=7) > 0
    assert np.array_equal(hourly > 0, seen_hours) and np.array_equal(weekly > 0, seen_days)
    # without the start the profiles are of hours since the first submit: shifted
    shifted = fit_trace(read_trace(path))[0]
    assert not np.array_equal(np.array(shifted.hourly) > 0, seen_hours)
    # the trace drawn from the fitted classes keeps office hours on the same clock
    again = pd.read_csv(tmp_path / "c.csv")
    redrawn = start + pd.to_timedelta(again.submit_h, "h")
    assert redrawn.dt.hour.between(9, 16).all() and (redrawn.dt.day_of_week < 5).all()


def test_a_bad_start_is_refused(tmp_path):
    path = trace_file(tmp_path, pd.DataFrame({"submit_h": [0.0, 1.0, 2.0], "gpus": [1, 1, 1], "duration_h": [1.0] * 3}))
    result = run(path, "--out", tmp_path / "c.yaml", "--start", "last tuesday")
    assert result.exit_code == 2 and "--start" in result.output and not (tmp_path / "c.yaml").exists()


def correlated_trace(days: float, seed: int) -> pd.DataFrame:
    """One job_class whose big jobs run long (written here with numpy, apart from the package's
    generators): Poisson arrivals at 60 a day; GPUs 1, 2, 8 (50, 20, 29 %) and two rare counts, 4
    and 16 (0.5 % each: about 27 jobs in 90 days, under FEW_JOBS, so pooled); lognormal run times
    of cv 1 with a mean by GPU count."""
    rng = np.random.default_rng(seed)
    n = rng.poisson(60 * days)
    gpus = rng.choice([1, 2, 8, 4, 16], size=n, p=[0.5, 0.2, 0.29, 0.005, 0.005])
    mean = np.select([gpus == 1, gpus == 2, gpus == 4, gpus == 8], [0.5, 1.0, 3.0, 6.0], 8.0)
    sigma2 = np.log(2.0)  # cv 1
    duration = rng.lognormal(np.log(mean) - sigma2 / 2, np.sqrt(sigma2))
    return pd.DataFrame({"submit_h": np.sort(rng.uniform(0, days * 24, n)), "gpus": gpus, "duration_h": duration,
                         "job_class": "lab"})


def gpu_hours_per_day(frame: pd.DataFrame, days: float) -> tuple[float, float]:
    """GPU-hours per day and its standard error: the jobs are a compound Poisson process, so the
    variance of Σ g·d over the days is the rate times E[(g·d)²], estimated by Σ (g·d)²."""
    work = frame.gpus.to_numpy() * frame.duration_h.to_numpy()
    return float(work.sum() / days), float(np.sqrt(np.sum(work**2)) / days)


@pytest.mark.parametrize("by", ["job_class_gpus", "job_class", "none", "job_class, no mean per count"])
def test_gpu_hours_per_day_are_reproduced(tmp_path, by):
    """trace → fit → job classes → the scenario's generator: the GPU-hours per day of the drawn
    jobs are the trace's within 4 standard errors of the difference (each side's compound-Poisson
    SE). A class per GPU count, or a pmf whose counts carry their own mean run time (``mean_h``),
    keeps the correlation of GPUs and run times; a pmf with one run-time law draws them
    independently: E[g]·E[d] ≈ 7 GPU-hours a job, not 14."""
    days, drawn_days = 90.0, 360.0
    frame = correlated_trace(days, seed=1)
    fits = fit_trace(read_trace(trace_file(tmp_path, frame)), by=by.split(",")[0])
    source, source_se = gpu_hours_per_day(frame, fits[0].window_h / 24)
    classes = job_classes_of(fits, 0.0)
    if by.endswith("no mean per count"):
        for c in classes:
            for entry in c["gpus"]:
                entry.pop("mean_h")
    drawn, drawn_se = gpu_hours_per_day(trace_of(classes, drawn_days, seed=2), drawn_days)
    tolerance = 4 * np.hypot(source_se, drawn_se)  # ≈ 4 · 33 GPU-hours a day, of ≈ 890
    if by.endswith("no mean per count"):
        assert drawn < source - tolerance  # the correlation lost: about half the GPU-hours
        return
    if by == "job_class_gpus":
        assert [f.name for f in fits] == ["lab-1gpu", "lab-2gpu", "lab-8gpu", "lab-other"]
        assert fits[-1].gpus_pmf.keys() == {4, 16} and "pooled" in fits[-1].notes[-1]
    assert abs(drawn - source) < tolerance, (drawn, source, tolerance)


def test_split_by_gpus_by_hand():
    gpus = np.array([1] * 30 + [8] * 29 + [2] * 3 + [4] * 40)
    lab = np.arange(len(gpus)) < 62  # class "lab": 30 on 1 GPU, 29 on 8, 3 on 2
    parts = split_by_gpus("lab", lab, gpus)
    assert [name for name, _ in parts] == ["lab-1gpu", "lab-other"]
    assert parts[0][1].sum() == 30 and set(gpus[parts[1][1]]) == {2, 8} and parts[1][1].sum() == 32
    assert [name for name, _ in split_by_gpus("x", ~lab, gpus)] == ["x"]  # one count: whole
    assert [name for name, _ in split_by_gpus("y", lab & (gpus != 1), gpus)] == ["y"]  # none with 30 jobs: whole


POD_LIST = "name,num_gpu,gpu_milli,creation_time,scheduled_time,deletion_time,pod_phase\n"


@pytest.mark.parametrize(("fmt", "rows", "hour0"), [
    ("k8s-pods", "p1,1,1000,60,120,3720,Succeeded\np2,2,1000,600,660,7860,Succeeded\n", None),  # seconds from start
    ("k8s-pods", "p1,1,1000,2024-03-06T13:00:00Z,2024-03-06T13:01:00Z,2024-03-06T14:00:00Z,Succeeded\n",
     "2024-03-06T13:00:00+00:00"),  # a real clock
    ("alibaba-pai", None, None),  # anonymised: shifted by a constant, whatever the year it lands in
])
def test_import_says_when_times_have_no_clock(tmp_path, fmt, rows, hour0):
    if rows is None:
        src = TRACE_SAMPLES / "pai_job_table.csv"
    else:
        src = tmp_path / "pods.csv"
        src.write_text(POD_LIST + rows)
    result = CliRunner().invoke(app, ["import-trace", fmt, str(src), "--out", str(tmp_path / "t.csv"),
                                       "--mixed-gpu-types"],
                                env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    if hour0 is None:
        assert "times are relative (no clock): fit-workload without --start" in result.output
        assert "hour 0 is" not in result.output and "1970" not in result.output
    else:
        assert f"hour 0 is {hour0} (fit-workload --start {hour0}" in result.output
        assert "relative" not in result.output


def test_cli_names_a_folder_fifo_or_device_given_as_the_trace_and_never_opens_it(tmp_path):
    """A folder, a FIFO or /dev/zero is not a missing file: each is called what it is, and the
    FIFO is never opened (opening it would block until someone writes)."""
    import os
    import time

    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "pipe")
    for path, says in ((tmp_path / "folder", "is a folder, not a file"),
                       (tmp_path / "pipe", "is a FIFO, not a regular file"),
                       (Path("/dev/zero"), "is a character device, not a regular file")):
        start = time.perf_counter()
        result = run(path, "--out", tmp_path / "c.yaml")
        assert time.perf_counter() - start < 10
        message = " ".join(result.output.split())
        assert result.exit_code == 2 and f"{path}: {says}" in message and "not found" not in message, message
    assert not (tmp_path / "c.yaml").exists()


def test_a_scenario_whose_trace_is_a_fifo_or_a_folder_says_so(tmp_path):
    import os

    from helpers import cloud

    os.mkfifo(tmp_path / "pipe.csv")
    (tmp_path / "dir.csv").mkdir()
    for name, says in (("pipe.csv", "is a FIFO, not a regular file"), ("dir.csv", "is a folder, not a file")):
        with pytest.raises(ScenarioError) as err:  # the scenario is checked as it is built
            api.scenario_from_data({"name": "t", "horizon_days": 1.0, "workload": {"trace": name},
                                    "options": [cloud()]}, "test", tmp_path)
        assert f"workload.trace: the trace file {tmp_path / name} {says}" in str(err.value)
        assert "not found" not in str(err.value)
        with pytest.raises(ScenarioError, match=f"{name}: {says}"):  # the reader on its own says the same
            read_trace(tmp_path / name)


def test_arrivals_within_less_than_the_minimum_span_are_refused(tmp_path):
    """100 jobs at hour 0 and one 0.36 s later span 0.0001 h: the 'rate' would be 101 jobs over the
    1-hour floor, 2,424 a day, which the trace does not hold."""
    src = trace_file(tmp_path, pd.DataFrame({"submit_h": [0.0] * 100 + [0.0001], "gpus": 8, "duration_h": 1.0}))
    result = run(src, "--out", tmp_path / "c.yaml")
    message = " ".join(result.output.split())
    assert result.exit_code == 2 and not (tmp_path / "c.yaml").exists()
    assert "less than the 1-hour minimum span" in message and f"{101 / 1 * 24:,.0f} a day" in message
    assert "2424" not in message and "nan" not in message


def test_fewer_than_three_distinct_submit_times_are_refused(tmp_path):
    """Half the jobs at hour 0 and half at hour 5: one gap between arrivals, no process to fit."""
    src = trace_file(tmp_path, pd.DataFrame({"submit_h": [0.0] * 50 + [5.0] * 50, "gpus": 8, "duration_h": 1.0}))
    result = run(src, "--out", tmp_path / "c.yaml")
    message = " ".join(result.output.split())
    assert result.exit_code == 2 and not (tmp_path / "c.yaml").exists()
    assert "only 2 distinct times (fewer than 3)" in message
    with pytest.raises(ValueError, match="only 2 distinct times"):
        fit_trace(read_trace(src))


def test_a_ks_statistic_that_is_not_a_number_is_said_not_measurable(tmp_path):
    """Every run time equal (1 h): no spread, so the duration KS check is not a number; the summary
    and the file's header say so rather than print nan."""
    src = trace_file(tmp_path, pd.DataFrame({"submit_h": np.arange(40.0), "gpus": 8, "duration_h": 1.0}))
    result = run(src, "--out", tmp_path / "c.yaml")
    assert result.exit_code == 0, result.output
    assert "duration KS not measurable" in result.output and "nan" not in result.output.lower()
    header = (tmp_path / "c.yaml").read_text()
    assert "duration KS not measurable" in header and "nan" not in header
