"""Compute-performance curves (costsim.models.scaling) and time and cost to a target (the to_target table).

Independent truths: the curve's closed forms worked by hand, a numerical derivative, parameters
known because the points were drawn from them, hand-computed days and costs for a run that receives
a constant 64 GPUs, and the monotonicity of time to target in the compute received.
"""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from paths import SCALING_POINTS

import costsim
from costsim.models import scaling
from costsim.plan.resolve import resolve
from costsim.results import to_target
from costsim.scenario import ScenarioError, scenario_from_data, scenario_from_yaml

DATA = SCALING_POINTS
CURVE = dict(A=0.8, B=2.0, C_mid=10_000.0, R0=0.2)


# -- the curve -----------------------------------------------------------------------------------

def test_curve_closed_forms_by_hand():
    assert scaling.reward(0.0, **CURVE) == 0.2  # R(0) = R0
    assert scaling.reward(10_000.0, **CURVE) == pytest.approx(0.5)  # half the gain at C_mid
    # 1 + (1e4 / 2e4)^2 = 1.25: R = 0.2 + 0.6 / 1.25 = 0.68
    assert scaling.reward(20_000.0, **CURVE) == pytest.approx(0.68)
    # target 0.6: (0.6 − 0.2)/(0.8 − 0.2) = 2/3 of the gain; (C_mid/C)^2 = 1/2, C = 1e4·√2
    assert scaling.compute_for(0.6, **CURVE) == pytest.approx(14_142.135623730951)
    assert scaling.compute_for(0.8, **CURVE) == math.inf and scaling.compute_for(0.9, **CURVE) == math.inf
    assert scaling.compute_for(0.2, **CURVE) == 0.0
    for target in (0.21, 0.5, 0.79):
        assert scaling.reward(scaling.compute_for(target, **CURVE), **CURVE) == pytest.approx(target)
    assert scaling.distance_to_asymptote(20_000.0, **CURVE) == pytest.approx(0.12)
    np.testing.assert_allclose(scaling.reward(np.array([0.0, 1e4]), **CURVE), [0.2, 0.5])


@pytest.mark.parametrize("C", [500.0, 10_000.0, 80_000.0])
def test_marginal_gain_is_the_derivative_per_1000_gpu_hours(C):
    h = C * 1e-5
    numeric = (scaling.reward(C + h, **CURVE) - scaling.reward(C - h, **CURVE)) / (2 * h) * 1000
    assert scaling.marginal_gain(C, **CURVE) == pytest.approx(numeric, rel=1e-6)
    # by hand at C_mid: (A − R0)·B·¼ / C_mid · 1000 = 0.6·2·0.25/1e4·1e3 = 0.03
    assert scaling.marginal_gain(10_000.0, **CURVE) == pytest.approx(0.03)


# -- fitting -------------------------------------------------------------------------------------

TRUE = dict(A=0.8, B=1.5, C_mid=20_000.0, R0=0.2)


@pytest.mark.slow
def test_fit_recovers_known_parameters_and_the_bootstrap_covers_them():
    """50 seeded data sets of 20 points drawn from the curve with noise 0.01: the fit is close to
    the truth on average, and the 95 % bootstrap interval covers each of A, B and C_mid in at least
    80 % of them (measured: A 43, B 44, C_mid 41 of 50, 82-88 %; residual-bootstrap percentile intervals run a little short of
    nominal with 20 points and four parameters)."""
    C = np.geomspace(500, 200_000, 20)
    covered = dict.fromkeys(("A", "B", "C_mid"), 0)
    estimates = []
    for rep in range(50):
        noise = np.random.default_rng(rep).normal(0, 0.01, len(C))
        R = scaling.reward(C, **TRUE) + noise
        fit = scaling.fit_curve(C, R, resamples=100, seed=rep)
        estimates.append([fit.curve.A, fit.curve.B, fit.curve.C_mid])
        for k in covered:
            lo, hi = fit.intervals[k]
            covered[k] += lo <= TRUE[k] <= hi
        assert fit.rmse <= np.sqrt(np.mean(noise ** 2))  # least squares fits at least as well as the truth
    mean = np.mean(estimates, axis=0)
    np.testing.assert_allclose(mean, [TRUE["A"], TRUE["B"], TRUE["C_mid"]], rtol=0.05)
    assert min(covered.values()) >= 40, covered


def test_fit_is_reproducible_from_its_seed():
    C, R = scaling.read_points(DATA / "points.csv")
    a, b = scaling.fit_curve(C, R, resamples=20, seed=3), scaling.fit_curve(C, R, resamples=20, seed=3)
    assert a == b
    assert a.intervals != scaling.fit_curve(C, R, resamples=20, seed=4).intervals


def test_unfittable_points_are_refused():
    with pytest.raises(ScenarioError, match="pts: 3 point"):
        scaling.fit_curve([1, 2, 3], [0.1, 0.2, 0.3], source="pts")
    with pytest.raises(ScenarioError, match="every score is the same"):
        scaling.fit_curve([1, 2, 3, 4, 5], [0.5] * 5)


def test_bad_rows_are_named_by_file_and_line():
    with pytest.raises(ScenarioError) as exc:
        scaling.read_points(DATA / "bad_rows.csv")
    lines = str(exc.value).splitlines()
    name = str(DATA / "bad_rows.csv")
    assert lines == [f"{name}:3: score: 'abc' is not a number",
                     f"{name}:4: gpu_hours: must be >= 0 (got -5)",
                     f"{name}:5: needs 2 fields (gpu_hours,score), got 1",
                     f"{name}:6: score: must be finite (got 'inf')"]


def test_bad_header_and_missing_file(tmp_path):
    (tmp_path / "p.csv").write_text("compute,reward\n1,2\n")
    with pytest.raises(ScenarioError, match=r"p.csv:1: the header must be gpu_hours,score"):
        scaling.read_points(tmp_path / "p.csv")
    with pytest.raises(ScenarioError, match="file not found"):
        scaling.read_points(tmp_path / "none.csv")


# -- the schema ----------------------------------------------------------------------------------

def flagship(scaling_spec: dict, gpus: int = 64, iterations: int = 100_000, **kw) -> dict:
    """A count-1 class: one run, submitted within seconds of hour 0."""
    return {"name": "flag", "arrivals_per_day": 10_000, "count": 1, "gpus": gpus, "iterations": iterations,
            "model_params_b": 7, "scaling": scaling_spec, **kw}


SPEC = {"curve": {"a": 1.0, "b": 1.0, "c_mid_gpu_hours": 10_000, "r0": 0.0}, "target": 0.5}

YAML = """\
name: s
horizon_days: 10
workload:
  classes:
    - name: flag
      arrivals_per_day: 1
      gpus: 8
      iterations: 10
      model_params_b: 7
      scaling:
        curve: {{a: 0.7, b: {B}, c_mid_gpu_hours: 1000, r0: 0.3}}
        target: {target}
options:
  - {{name: own, kind: owned, gpu_type: H100, gpus: 16}}
"""


@pytest.mark.parametrize("B, target, message, line", [
    (1, 0.7, "scaling.target: target 0.7 is at or above the asymptote a = 0.7: never reached", 12),
    (1, 0.3, "scaling.target: target 0.3 is at or below r0 = 0.3", 12),
    (0, 0.5, "scaling.curve.b: Input should be greater than 0", 11),
])
def test_bad_curves_name_field_and_line(B, target, message, line):
    with pytest.raises(ScenarioError) as exc:
        scenario_from_yaml(YAML.format(B=B, target=target), "s.yaml", ".")
    assert str(exc.value).startswith(f"s.yaml:{line}:") and "workload.classes.0.scaling" in str(exc.value)
    assert message in str(exc.value)


def test_curve_xor_fit_and_a_rising_curve():
    def load(spec):
        return scenario_from_data({"name": "s", "horizon_days": 1, "workload": {"classes": [flagship(spec)]},
                                   "options": [{"name": "o", "kind": "owned", "gpu_type": "H100", "gpus": 64}]}, "s", ".")
    with pytest.raises(ScenarioError, match="exactly one of `curve`"):
        load({**SPEC, "fit": "p.csv"})
    with pytest.raises(ScenarioError, match="exactly one of `curve`"):
        load({"target": 0.5})
    with pytest.raises(ScenarioError, match=r"a \(0.1\) must be above r0 \(0.2\)"):
        load({"curve": {"a": 0.1, "b": 1, "c_mid_gpu_hours": 10, "r0": 0.2}, "target": 0.15})
    with pytest.raises(ScenarioError, match="scaling.curve.c_mid: unknown field"):
        load({**SPEC, "curve": {**SPEC["curve"], "c_mid": 5}})
    assert load(SPEC).workload.classes[0].scaling.curve.c_mid_gpu_hours == 10_000


# -- time and cost to target, simulated -----------------------------------------------------------

def simulate(classes: list[dict], options: list[dict], horizon_days: float, base_dir=".") -> costsim.Results:
    data = {"name": "t", "horizon_days": horizon_days, "workload": {"classes": classes}, "options": options}
    return costsim.simulate(scenario_from_data(data, "t", base_dir), seed=1)


OWNED = {"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 64, "lead_time_days": 0, "failures": None}
RENTED = {"name": "od", "kind": "cloud", "gpu_type": "H100", "provisioning_delay_h": 0, "startup_h": 0,
          "billing_granularity_s": 1, "minimum_billing_s": 0}


def test_time_and_cost_to_target_of_a_run_on_64_gpus_by_hand():
    """R = C / (1e4 + C) (A 1, B 1, R0 0): target 0.5 at C = 10,000 GPU-hours; 64 GPUs from the
    job's start t0 give C(t) = 64·(t − t0), so t = t0 + 156.25 h; rented at p per GPU-hour the
    option has spent p·10,000 by then."""
    res = simulate([flagship(SPEC)], [OWNED, RENTED], horizon_days=10)
    rows = res.to_target.set_index("option")
    start = res.jobs.set_index("option")["start_h"]
    price = resolve(res.scenario)[1].price_per_gpu_hour
    for option in ("own", "od"):
        row = rows.loc[option]
        assert bool(row.reached) and row.needed_gpu_hours == pytest.approx(10_000)
        assert row.day == pytest.approx((start[option] + 156.25) / 24, rel=1e-9)
        assert row.projected_day == row.day
        assert row.gpu_hours == pytest.approx(64 * (240 - start[option]), rel=1e-9)
        assert row.reward_at_horizon == pytest.approx(row.gpu_hours / (10_000 + row.gpu_hours))
    assert rows.loc["od", "cost_usd"] == pytest.approx(price * 10_000, rel=1e-6)


def test_not_reached_is_projected_at_the_last_30_days_rate():
    """Target 0.9: C = 9·10,000 = 90,000 GPU-hours, 1,406.25 h on 64 GPUs: beyond a 40-day
    horizon (960 h). The run starts on day 5 and holds 64 GPUs through the last 30 days, so the
    projection at their rate is exact (the whole horizon's average rate, 56 GPUs, would not be)."""
    spec = {**SPEC, "target": 0.9}
    res = simulate([flagship(spec, start_day=5)], [OWNED], horizon_days=40)
    row = res.to_target.iloc[0]
    t0 = res.jobs["start_h"].iloc[0]
    assert not row.reached and math.isnan(row.day) and math.isnan(row.cost_usd)
    assert row.projected_day == pytest.approx((t0 + 1406.25) / 24, rel=1e-9)
    # A run planned too short for the target never reaches it, though it was still climbing
    # within the last 30 days (it ends within them): 10,000 iterations of about 200 s (the 7B
    # class on 64 GPUs) end near hour 120 + 560, well inside (240 h, 960 h).
    short = simulate([flagship(spec, iterations=10_000, start_day=5)], [OWNED], horizon_days=40)
    assert 240 < short.jobs["end_h"].iloc[0] < 960
    row = short.to_target.iloc[0]
    assert not row.reached and row.projected_day == math.inf and row.gpu_hours < row.needed_gpu_hours


def test_interruptions_cut_the_compute_received():
    """Spot preemptions: the run reaches the target later than on-demand, and its compute is at
    most the GPU-hours it held less those lost to the preemptions."""
    spot = {**RENTED, "name": "spot", "pricing": "spot", "preemptions_per_instance_day": 0.5}
    res = simulate([flagship({**SPEC, "target": 0.3})], [RENTED, spot], horizon_days=10)
    rows, jobs = res.to_target.set_index("option"), res.jobs.set_index("option")
    assert jobs.loc["spot", "preemptions"] > 0
    assert rows.loc["spot", "day"] > rows.loc["od", "day"]
    assert rows.loc["spot", "gpu_hours"] <= jobs.loc["spot", "gpu_hours"] - jobs.loc["spot", "lost_gpu_hours"] + 1e-6


def test_a_fit_path_is_read_relative_to_the_scenario_file(tmp_path, monkeypatch):
    (tmp_path / "curves").mkdir()
    shutil.copy(DATA / "points.csv", tmp_path / "curves" / "points.csv")
    (tmp_path / "s.yaml").write_text(YAML.format(B=1, target=0.5).replace(
        "curve: {a: 0.7, b: 1, c_mid_gpu_hours: 1000, r0: 0.3}", "fit: curves/points.csv").replace("target: 0.5", "target: 0.6"))
    monkeypatch.chdir(DATA)  # anywhere but the scenario's folder
    row = costsim.simulate(tmp_path / "s.yaml").to_target.iloc[0]
    fitted = scaling.fit_curve(*scaling.read_points(DATA / "points.csv"), resamples=0).curve
    assert row.needed_gpu_hours == pytest.approx(scaling.compute_for(0.6, fitted.A, fitted.B, fitted.C_mid, fitted.R0))
    shutil.copy(DATA / "bad_rows.csv", tmp_path / "curves" / "points.csv")
    with pytest.raises(ScenarioError, match=r"points.csv:3: score: 'abc' is not a number"):
        costsim.simulate(tmp_path / "s.yaml")


def test_a_target_above_the_fitted_asymptote_is_a_problem(tmp_path):
    shutil.copy(DATA / "points.csv", tmp_path / "points.csv")
    spec = {"fit": "points.csv", "target": 0.95}
    data = {"name": "s", "horizon_days": 1, "workload": {"classes": [flagship(spec)]}, "options": [OWNED]}
    problems = scaling.scaling_problems(scenario_from_data(data, "s", tmp_path))
    assert [p.loc for p in problems] == [("workload", "classes", 0, "scaling", "target")]
    assert "at or above the asymptote a = 0.72" in problems[0].message
    data["workload"]["classes"][0]["scaling"]["fit"] = "missing.csv"
    problems = scaling.scaling_problems(scenario_from_data(data, "s", tmp_path))
    assert [p.loc[-1] for p in problems] == ["fit"] and "points file not found" in problems[0].message


def test_no_scaling_no_rows():
    res = simulate([{**flagship(SPEC), "scaling": None}], [OWNED], horizon_days=2)
    assert res.to_target.empty and list(res.to_target.columns) == to_target.TO_TARGET_COLUMNS


# -- more compute never delays the target (the pure functions) ------------------------------------

@st.composite
def computes(draw):
    """Jobs with non-overlapping held intervals and a rate each, and a second version of them in
    which every interval's rate is at least as high."""
    jobs, starts, ends, rates, more = [], [], [], [], []
    for j in range(draw(st.integers(1, 3))):
        t = draw(st.floats(0, 50))
        for _ in range(draw(st.integers(1, 4))):
            length = draw(st.floats(0.5, 100))
            jobs.append(j), starts.append(t), ends.append(t + length)
            rate = draw(st.floats(0, 64))
            rates.append(rate), more.append(rate + draw(st.floats(0, 64)))
            t += length + draw(st.floats(0, 30))
    arrays = (np.array(jobs), np.array(starts), np.array(ends))
    planned = np.full(max(jobs) + 1, 1e9)
    return to_target.Compute(*arrays, np.array(rates), planned), to_target.Compute(*arrays, np.array(more), planned)


@given(computes(), st.floats(1, 20_000))
def test_more_gpu_hours_never_delay_the_target(pair, needed):
    less, more = pair
    assert more.rate.sum() >= less.rate.sum()
    assert to_target.reach_h(more, needed).min() <= to_target.reach_h(less, needed).min()
    # and the day it reports is when the compute reaches what is needed
    t = to_target.reach_h(less, needed)
    for j in np.flatnonzero(np.isfinite(t)):
        assert to_target.compute_at(less, t[j])[j] == pytest.approx(needed, rel=1e-9)
    curve = scaling.Curve(A=1.0, B=1.0, C_mid=1000.0, R0=0.0)
    target = scaling.reward(needed, 1.0, 1.0, 1000.0, 0.0)
    hours, cum = np.arange(600.0), np.arange(1.0, 601.0)
    a, b = (to_target.class_row("o", "c", c, curve, target, 600.0, hours, cum) for c in (less, more))
    assert a["reached"] <= b["reached"]  # reached with less: reached with more
    # the day reached, or projected: never later with more (each interval's rate is at least as high)
    assert (b["day"] if b["reached"] else b["projected_day"]) <= (a["day"] if a["reached"] else a["projected_day"])


def test_trajectory_per_day_by_hand():
    """One run on 64 GPUs from hour 12 to the 10-day horizon: 64·(24·d − 12) GPU-hours on day d
    (0 before it starts), and R of that; the leading run of two is the one further along."""
    c = to_target.Compute(np.array([0, 1]), np.array([12.0, 100.0]), np.array([240.0, 240.0]),
                          np.array([64.0, 8.0]), np.array([1e9, 1e9]))
    curve = scaling.Curve(A=1.0, B=1.0, C_mid=10_000.0, R0=0.0)
    traj = to_target.trajectory(c, curve, 240.0)
    expect = np.maximum(64 * (24 * np.arange(11.0) - 12), 0)
    np.testing.assert_allclose(traj["day"], np.arange(11.0))
    np.testing.assert_allclose(traj["gpu_hours"], expect)
    np.testing.assert_allclose(traj["reward"], expect / (10_000 + expect))


def test_a_slower_gpu_reaches_the_target_later_for_the_same_work():
    # The curve's GPU-hours are those of the run on the first option (H100 here): an A100 option gets
    # through the same iterations more slowly, so the same compute later, however many hours it holds.
    text = """\
name: s
horizon_days: 5
workload:
  classes:
    - name: flag
      count: 1
      arrivals_per_day: 24
      gpus: 8
      iterations: 60
      model_params_b: 7
      rollout: {prompts: 32, samples_per_prompt: 8, response_tokens: 1000}
      scaling: {curve: {a: 0.7, b: 1, c_mid_gpu_hours: 0.5, r0: 0.3}, target: 0.6}
options:
  - {name: h100, kind: cloud, gpu_type: H100, pricing: on_demand, provisioning_delay_h: 0, startup_h: 0}
  - {name: a100, kind: cloud, gpu_type: A100, pricing: on_demand, provisioning_delay_h: 0, startup_h: 0}
"""
    import costsim

    res = costsim.simulate(costsim.load_scenario_text(text, "s.yaml", "."))
    job = res.jobs.set_index("option")
    row = res.to_target.set_index("option")
    hold = job["end_h"] - job["start_h"]
    assert hold["a100"] > 1.5 * hold["h100"]  # the A100 iterates well over 1.5x slower
    # Both finish the same run: the same compute, the H100 run's 8 GPUs × its hours.
    assert row.loc["a100", "gpu_hours"] == pytest.approx(8 * hold["h100"], rel=1e-9)
    assert row.loc["h100", "gpu_hours"] == pytest.approx(8 * hold["h100"], rel=1e-9)
    # Each reaches the target the same share of the way through its run: the A100 later by its pace.
    needed = row.loc["h100", "needed_gpu_hours"]
    for opt in ("h100", "a100"):
        assert row.loc[opt, "day"] * 24 == pytest.approx(job.loc[opt, "start_h"] + needed / (8 * hold["h100"]) * hold[opt],
                                                         rel=1e-9)


def test_a_run_started_within_the_window_is_projected_at_its_own_pace():
    from costsim.results import to_target as T

    # One job of 64 GPUs from hour 840 (day 35) to the 40-day horizon: 120 h × 64 = 7,680 GPU-hours
    # by then; 10,000 needed, so 2,320 more at 64 an hour: 36.25 h after the horizon.
    c = T.Compute(job=np.array([0]), start_h=np.array([840.0]), end_h=np.array([960.0]), rate=np.array([64.0]),
                  planned_gpu_h=np.array([50_000.0]))
    assert T.projected_h(c, 10_000.0, 960.0, 30 * 24.0) == pytest.approx(960.0 + 2_320.0 / 64.0)
    # A run that has not started by the horizon: not known (NaN), not "never".
    idle = T.Compute(job=np.zeros(0, dtype=np.int64), start_h=np.zeros(0), end_h=np.zeros(0), rate=np.zeros(0),
                     planned_gpu_h=np.array([50_000.0]))
    assert math.isnan(T.projected_h(idle, 10_000.0, 960.0, 720.0))
    # A run too short for the target never gets there.
    short = T.Compute(job=np.array([0]), start_h=np.array([840.0]), end_h=np.array([960.0]), rate=np.array([64.0]),
                      planned_gpu_h=np.array([9_000.0]))
    assert T.projected_h(short, 10_000.0, 960.0, 720.0) == math.inf


def test_the_reference_option_sets_the_curves_gpu_hours_and_is_named():
    import costsim

    src = open(__file__).read()
    text = src[src.index("name: s\nhorizon_days: 5"):src.index('"""\n    import costsim\n\n    res = ')]
    default = costsim.simulate(costsim.load_scenario_text(text, "s.yaml", "."))
    given = costsim.simulate(costsim.load_scenario_text(
        text.replace("target: 0.6}", "target: 0.6, reference_option: a100}"), "s.yaml", "."))
    hold = (default.jobs["end_h"] - default.jobs["start_h"]).set_axis(default.jobs["option"])
    assert list(default.to_target["reference_option"]) == ["h100", "h100"]
    assert list(given.to_target["reference_option"]) == ["a100", "a100"]
    # Counted in the A100's GPU-hours, the same run is more compute: 8 × the A100's hours.
    np.testing.assert_allclose(given.to_target["gpu_hours"], 8 * hold["a100"], rtol=1e-9)


@pytest.mark.parametrize("name, message", [
    ("nowhere", "'nowhere' is not an option of this scenario (options: mix, od, own)"),
    ("mix", "option 'mix' is a hybrid; the reference must be an owned or cloud option"),
])
def test_a_bad_reference_option_is_named_at_its_field(name, message):
    text = YAML.format(B=1, target=0.5).replace("        target: 0.5\n", f"        target: 0.5\n        reference_option: {name}\n")
    text += ("  - {name: od, kind: cloud, gpu_type: H100}\n"
             "  - {name: mix, kind: hybrid, base: own, burst: od}\n")
    with pytest.raises(ScenarioError) as exc:
        scenario_from_yaml(text, "s.yaml", ".")
    assert str(exc.value).startswith("s.yaml:13:") and "workload.classes.0.scaling.reference_option: " in str(exc.value)
    assert message in str(exc.value)
