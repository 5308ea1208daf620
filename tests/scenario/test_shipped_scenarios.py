"""Every shipped scenario validates (CLI) and simulates; the shipped trace is what its generator makes."""

import functools

import numpy as np
import pandas as pd
import pytest
from helpers import shipped_file_cut
from typer.testing import CliRunner

import costsim
from costsim.cli.commands import app
from costsim.dashboard import SCENARIO_DIR, shipped_scenarios


def test_there_are_shipped_scenarios():
    assert {"baseline", "lab-trace", "quota-limited-cloud", "async-vs-sync", "infiniband-vs-roce", "hybrid-burst",
            "reserved-vs-on-demand", "train-and-serve", "failures-at-scale", "spot-rollouts"} <= set(shipped_scenarios())


@functools.cache
def whole(name: str) -> costsim.Results:
    """The shipped scenario ``name`` over its whole horizon, simulated once for every test here."""
    return costsim.simulate(SCENARIO_DIR / f"{name}.yaml")


@pytest.mark.slow
@pytest.mark.parametrize("name", list(shipped_scenarios()))
def test_every_option_completes_jobs_over_the_shipped_horizon(name):
    """No shipped option sits idle for the whole horizon (a lead time past it, say)."""
    assert (whole(name).summary.jobs_completed > 0).all()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(shipped_scenarios()))
def test_validate_and_run(name, tmp_path):
    """Each file validates as shipped, and runs through the CLI cut to 30 days (the whole horizon
    runs the same code; the test above and the stories below run it)."""
    path = shipped_scenarios()[name]
    assert CliRunner().invoke(app, ["validate", str(path)]).exit_code == 0
    cut = shipped_file_cut(tmp_path, name, days=30)
    result = CliRunner().invoke(app, ["run", str(cut), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert len(summary) == len(costsim.load_scenario(path).options)
    assert summary.jobs_completed.sum() > 0
    # The resolved scenario written beside the tables loads back and reruns identically.
    again = costsim.simulate(tmp_path / "out" / "scenario.resolved.yaml")
    pd.testing.assert_frame_equal(again.summary, pd.read_parquet(tmp_path / "out" / "summary.parquet"))


@pytest.mark.slow
def test_baseline_is_an_rl_lab():
    res = whole("baseline")
    s = res.summary.set_index("option")
    # More owned GPUs: shorter waits, lower utilisation, higher cost per used GPU-hour.
    assert s.loc["own-256", "queue_delay_mean_h"] > s.loc["own-384", "queue_delay_mean_h"] > s.loc["own-512", "queue_delay_mean_h"]
    assert s.loc["own-256", "utilization"] > s.loc["own-384", "utilization"] > s.loc["own-512", "utilization"]
    assert (s.iterations_per_day > 0).all() and s.cost_per_iteration_usd.notna().all()
    ph = res.phases
    assert set(ph.job_class) == {"ablation-7b", "mid-32b", "flagship-70b"}
    sync = ph[ph.job_class != "flagship-70b"]
    assert sync.rollout_share.between(0.6, 0.9).all()


@pytest.mark.slow
def test_lab_trace_tells_a_story():
    s = whole("lab-trace").summary.set_index("option")
    # Undersized owned capacity queues; oversized is idle; on-demand never queues but costs more per GPU-hour.
    assert s.loc["own-256", "queue_delay_mean_h"] > 10 * s.loc["own-512", "queue_delay_mean_h"]
    assert s.loc["own-512", "utilization"] < 0.6 < s.loc["own-256", "utilization"]
    # Each job waits the 0.25 h provisioning delay, or until the horizon if it comes in the last 15 min.
    sc = costsim.load_scenario(SCENARIO_DIR / "lab-trace.yaml")
    submit = pd.read_csv(SCENARIO_DIR / "traces" / "lab-year.csv").submit_h.to_numpy()
    submit = submit[submit >= sc.warmup_h]
    assert s.loc["cloud-od", "queue_delay_mean_h"] == pytest.approx(np.minimum(0.25, sc.horizon_h - submit).mean())


@pytest.mark.slow
def test_quota_limited_cloud_queues():
    s = whole("quota-limited-cloud").summary.set_index("option")
    assert s.loc["cloud-quota-256", "queue_delay_mean_h"] > s.loc["cloud-quota-384", "queue_delay_mean_h"] > \
        s.loc["cloud-unlimited", "queue_delay_mean_h"]
    # The owned cluster's first 112 days queue everything.
    assert s.loc["own-512-after-lead-time", "queue_delay_p95_h"] > 24 * 30


@pytest.mark.slow
def test_async_vs_sync_shows_the_straggler_effect():
    ph = whole("async-vs-sync").phases
    for _, p in ph.groupby("option"):
        it = p.set_index("job_class").iteration_s
        assert it["async-staleness-1"] < it["sync-colocated"] < it["sync-disaggregated"]
        assert 1.5 <= it["sync-colocated"] / it["async-staleness-1"] <= 3.0
        cost = p.set_index("job_class").cost_per_iteration_usd
        assert cost["async-staleness-1"] < cost["sync-colocated"]


@pytest.mark.slow
def test_infiniband_vs_roce_shows_the_fabric():
    res = whole("infiniband-vs-roce")
    ph = res.phases.set_index("option")
    # By hand: a 70B policy trains at TP 8 (weights + gradients 4 B/param = 280 GB need 8 GPUs at
    # half of 80 GB each), so 128 GPUs give 16 data-parallel groups of one GPU per node, each on one
    # of the node's 8 NICs: busbw 8 × 47 / 8 = 47 GB/s on InfiniBand, × 0.92 on RoCE. Each of the
    # 16 optimizer steps all-reduces 2 B × 70e9 / 8 = 17.5 GB: 2 · 15/16 · 17.5 / 47 = 0.698138 s.
    allreduce_ib = 2 * 15 / 16 * 17.5 / 47
    extra = 16 * allreduce_ib * (1 / 0.92 - 1)
    assert ph.loc["own-roce", "update_s"] - ph.loc["own-ib", "update_s"] == pytest.approx(extra, rel=1e-6)
    assert ph.loc["own-roce", "rollout_s"] == ph.loc["own-ib", "rollout_s"]  # sampling does not cross nodes
    s = res.summary.set_index("option")
    assert s.loc["own-roce", "cost_capital_usd"] < s.loc["own-ib", "cost_capital_usd"]


@pytest.mark.slow
def test_hybrid_burst_bridges_the_lead_time():
    res = whole("hybrid-burst")
    s = res.summary.set_index("option")
    # Owning alone queues everything through 16 weeks; bridging keeps waits near the 4 h limit.
    assert s.loc["own-256", "queue_delay_mean_h"] > 100 * s.loc["burst-bridged", "queue_delay_mean_h"]
    assert s.loc["burst-bridged", "queue_delay_mean_h"] < s.loc["burst-no-bridge", "queue_delay_mean_h"]
    assert s.loc["burst-bridged", "queue_delay_p95_h"] <= 4.25 + 1e-9  # wait limit + provisioning
    j = res.jobs[res.jobs.option == "burst-bridged"]
    early = j[j.submit_h < 112 * 24]
    assert (early.ran_on == "on-demand").all()
    # Every job that started ran on one of the two (one submitted in the last hours may still wait).
    assert set(j.ran_on[j.start_h.notna()]) == {"own-256", "on-demand"}
    assert (j.submit_h[j.start_h.isna()] > 365 * 24 - 4.25).all()


@pytest.mark.slow
def test_reserved_vs_on_demand():
    res = whole("reserved-vs-on-demand")
    s = res.summary.set_index("option")
    assert s.loc["reserved-256", "total_cost_usd"] == pytest.approx(256 * 8760 * 2.20)
    # A 3-year commitment over a 1-year horizon: one year billed, two more owed.
    assert s.loc["reserved-256-3y", "cost_reserved_usd"] == pytest.approx(256 * 8760 * 1.85)
    assert s.loc["reserved-256-3y", "total_cost_usd"] == pytest.approx(256 * 3 * 8760 * 1.85)
    assert s.loc["reserved-256", "queue_delay_mean_h"] > s.loc["reserved-384", "queue_delay_mean_h"]
    b = res.breakeven.set_index(["option", "versus"])
    assert b.loc[("reserved-256", "on-demand"), "breakeven_utilization"] == pytest.approx(2.20 / 2.99)


@pytest.mark.slow
def test_train_and_serve():
    res = whole("train-and-serve")
    s = res.summary.set_index("option")
    # Reserved and rented capacity always serve in full; an owned cluster falls short only briefly
    # after node failures (RL jobs are not preempted for serving).
    assert s.loc["reserved-384", "serving_unmet_gpu_hours"] == 0 == s.loc["on-demand", "serving_unmet_gpu_hours"]
    assert s.loc["own-384", "serving_unmet_gpu_hours"] < 1e-3 * s.loc["own-384", "serving_gpu_hours"]
    assert s.loc["on-demand", "cost_serving_usd"] > 0 and s.loc["own-384", "cost_serving_usd"] == 0
    assert s.loc["own-384", "serving_cost_usd"] > 0  # its share of the cluster


@pytest.mark.slow
def test_failures_at_scale():
    res = whole("failures-at-scale")
    j = res.jobs[res.jobs.option == "owned-4096"]
    by = j.groupby("job_class")
    # Bigger gang jobs are interrupted more often and lose a larger share of their GPU-hours.
    share = by.lost_gpu_hours.sum() / by.gpu_hours.sum()
    restarts = by.restarts.mean()
    assert share["run-256"] < share["run-1024"] < share["run-2048"]
    assert restarts["run-256"] < restarts["run-1024"] < restarts["run-2048"]
    s = res.summary.set_index("option")
    assert s.loc["owned-4096", "goodput"] < s.loc["owned-4096-reliable", "goodput"] < 1
    adv = res.advice.set_index(["option", "job_class"])
    assert adv.loc[("owned-4096", "run-2048"), "optimal_interval_h"] < adv.loc[("owned-4096", "run-256"), "optimal_interval_h"]
    # With one checkpoint interval for all, the bigger the gang, the farther it is from Young/Daly.
    excess = adv.loc["owned-4096", "excess"]
    assert excess["run-256"] < excess["run-1024"] < excess["run-2048"] and excess["run-2048"] > 0.01


@pytest.mark.slow
def test_spot_rollouts():
    s = whole("spot-rollouts").summary.set_index("option")
    assert s.loc["spot", "total_cost_usd"] < s.loc["on-demand", "total_cost_usd"]
    assert s.loc["spot", "preemptions"] > 0 and s.loc["spot-tight", "preemptions"] > 2 * s.loc["spot", "preemptions"]
    assert s.loc["spot-tight", "goodput"] < s.loc["spot", "goodput"] < 1 == s.loc["on-demand", "goodput"]
    assert s.loc["spot-tight", "interruption_delay_mean_h"] > s.loc["spot", "interruption_delay_mean_h"] > 0


def test_shipped_trace_matches_its_generator():
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_traces", SCENARIO_DIR / "traces" / "make_traces.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    made = costsim.workload.synth.make_trace(mod.LAB, horizon_days=365, seed=2027).round({"submit_h": 4, "duration_h": 4})
    shipped = pd.read_csv(SCENARIO_DIR / "traces" / "lab-year.csv")
    pd.testing.assert_frame_equal(made.reset_index(drop=True), shipped, check_dtype=False)
