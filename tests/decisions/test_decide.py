"""Decisions (costsim.decisions): the keep-up measures against hand counts, the fair totals, and
verdicts that flip exactly at a hand-computed break-even price, call a tie a tie, and never
recommend an option that cannot keep up."""

from __future__ import annotations

import math

import pytest
from helpers import cloud, owned, scenario
from paths import ROOT

import costsim
from costsim.decisions.fair import fair_rows
from costsim.decisions.targets import parse_target
from costsim.present.verdict import decide
from costsim.scenario import ScenarioError

H_DAYS = 10.0


def _steady_rows(n=40, gpus=8, duration_h=3.0, every_h=5.0):
    """n jobs of ``gpus`` GPUs for ``duration_h`` hours, one every ``every_h`` hours from hour 0."""
    return [(i * every_h, gpus, duration_h) for i in range(n)]


def test_keep_up_measures_by_hand(tmp_path):
    # 8 GPUs for 10 days = 1,920 GPU-hours. 60 jobs of 8 GPUs × 6 h = 2,880 GPU-hours submitted over
    # the first 60 h: offered load 2,880 / 1,920 = 1.5. FIFO runs them one at a time: 1,920/48 = 40
    # done by hour 240, the 41st... none left running (each ends on a 6 h boundary); 20 never start.
    rows = [(float(i), 8, 6.0) for i in range(60)]
    sc = scenario(tmp_path, rows, [owned(gpus=8, scheduler="fifo"), cloud(price_per_gpu_hour=2.5)], H_DAYS)
    s = costsim.simulate(sc).summary.set_index("option")
    own, rent = s.loc["own"], s.loc["cloud"]
    assert own.work_submitted_gpu_hours == pytest.approx(2880)
    assert own.offered_load == pytest.approx(1.5)
    assert own.jobs_completed == 40
    assert own.work_unfinished_gpu_hours == pytest.approx(20 * 48)
    assert own.unfinished_rent_usd == pytest.approx(20 * 48 * 2.5)  # at the cloud option's price
    # 20 never started (jobs_waiting), but none is stale: job i (i < 40) started at 6i, a delay of
    # 5i h, whose p95 (numpy's, linear) is 185.25 h; 4 × that exceeds every wait left (≤ 240 h). The
    # load flags the option, not staleness.
    assert own.jobs_waiting == 20 and own.jobs_stale == 0 and own.stale_share == 0
    assert math.isnan(rent.offered_load)  # on-demand without a quota: no limit
    assert rent.work_unfinished_gpu_hours == 0 and rent.stale_share == 0
    # Cash: the cloud option pays as it goes (cash = total); the owned one pays its capex up front
    # and keeps the book value.
    assert rent.cash_spent_usd == pytest.approx(rent.total_cost_usd)
    assert own.cash_spent_usd > own.total_cost_usd and own.book_value_usd > 0


def test_a_running_job_leaves_its_remainder(tmp_path):
    # One job of 8 GPUs × 300 h submitted at hour 0 into a 10-day (240 h) horizon: 60 h × 8 left. Its
    # load counts only what the horizon can hold of it: 240 h × 8 / (240 h × 8) = 1, and with no job
    # waiting the option keeps up.
    sc = scenario(tmp_path, [(0.0, 8, 300.0)], [owned(gpus=8), cloud()], H_DAYS)
    s = costsim.simulate(sc).summary.set_index("option")
    assert s.loc["own", "work_unfinished_gpu_hours"] == pytest.approx(60 * 8)
    assert s.loc["own", "offered_load"] == pytest.approx(240 * 8 / (240 * 8))
    assert fair_rows(s.reset_index()).set_index("option").loc["own", "keeps_up"]


def test_an_option_that_cannot_keep_up_is_flagged_and_never_recommended(tmp_path):
    rows = [(float(i), 8, 6.0) for i in range(60)]  # offered load 1.5 on 8 GPUs (above)
    sc = scenario(tmp_path, rows, [owned(gpus=8, scheduler="fifo"), cloud(price_per_gpu_hour=200.0)], H_DAYS)
    res = costsim.simulate(sc)
    s = res.summary.set_index("option")
    assert s.loc["own", "total_cost_usd"] < s.loc["cloud", "total_cost_usd"]  # cheapest on its own bill
    v = decide(res)
    opts = v.options.set_index("option")
    assert not opts.loc["own", "keeps_up"] and "offered load 150 %" in opts.loc["own", "why"]
    assert v.option == "cloud" and "only option that keeps up" in v.sentence
    fair = fair_rows(res.summary).set_index("option")
    assert fair.loc["own", "fair_total_usd"] == pytest.approx(s.loc["own", "total_cost_usd"] + 20 * 48 * 200.0)


def _flip_scenario(tmp_path, price):
    rows = _steady_rows()  # 40 jobs × 8 GPUs (one instance) × 3 h = 960 GPU-hours, all done by hour 198 < 240
    # No one-time groundwork: it would make ten days' energy a tie-sized share of the owned total.
    return scenario(tmp_path, rows, [owned(gpus=8), cloud(price_per_gpu_hour=price, billing_granularity_s=1,
                                                              minimum_billing_s=0)], H_DAYS,
                    economics={"setup_usd": 0})


def test_the_verdict_flips_exactly_at_the_hand_computed_break_even_price(tmp_path):
    # Every job finishes on both options, so both fair totals are their bills: the owned option's
    # does not depend on the cloud price, and the cloud's is price × 960 GPU-hours (per-second
    # billing, no minimum, no startup). Break-even: p* = owned total / 960.
    base = costsim.simulate(_flip_scenario(tmp_path, 3.0)).summary.set_index("option")
    assert base.loc["cloud", "cost_cloud_usd"] == pytest.approx(3.0 * 960)
    p_star = base.loc["own", "total_cost_usd"] / 960
    below = decide(costsim.simulate(_flip_scenario(tmp_path, p_star * 0.99)))
    above = decide(costsim.simulate(_flip_scenario(tmp_path, p_star * 1.01)))
    assert (below.option, below.versus) == ("cloud", "own")
    assert (above.option, above.versus) == ("own", "cloud")
    assert below.difference_usd == pytest.approx(-0.01 * p_star * 960, rel=1e-6)
    assert "1.0 %" in above.sentence and above.sentence.startswith("Owning 8 H100s (own) costs")
    # Within the tie tolerance (0.5 %) the two cost the same, whichever is a hair cheaper.
    tie = decide(costsim.simulate(_flip_scenario(tmp_path, p_star * 1.001)))
    assert tie.same_cost and not tie.close_call and "cost the same" in tie.sentence and "within 0.5 %" in tie.sentence


def test_the_electricity_flip_price_zeroes_the_difference(tmp_path):
    # Price the cloud so that owning is cheaper by half its energy bill: the flip is at 1.5× today's
    # electricity price (energy is the only cost line that moves with it).
    base = costsim.simulate(_flip_scenario(tmp_path, 3.0)).summary.set_index("option").loc["own"]
    sc = _flip_scenario(tmp_path, (base.total_cost_usd + 0.5 * base.cost_energy_usd) / 960)
    v = decide(costsim.simulate(sc))
    p0 = costsim.plan.resolve.economics_values(sc).electricity_usd_per_kwh
    assert v.electricity_flip_usd_per_kwh == pytest.approx(1.5 * p0, rel=1e-9)
    assert v.option == "own" and not math.isnan(v.electricity_flip_usd_per_kwh)
    data = sc.model_dump(mode="json")
    data["economics"]["electricity_usd_per_kwh"] = v.electricity_flip_usd_per_kwh
    at_flip = costsim.simulate(costsim.scenario_from_data(data, "flip", tmp_path)).summary.set_index("option")
    fair = fair_rows(at_flip.reset_index()).set_index("option")["fair_total_usd"]
    assert fair["own"] == pytest.approx(fair["cloud"], rel=1e-9)
    assert f"above ${v.electricity_flip_usd_per_kwh:.2f} per kWh" in v.sentence


def test_two_options_identical_but_for_noise_are_too_close_to_call(tmp_path):
    # Two identical owned clusters; node failures drawn from streams named after each option, so
    # their runs differ only by noise. Paired over 5 replications the interval spans zero.
    rows = [(float(i) * 4, 8, 5.0) for i in range(60)]  # offered load 2,400 / 3,840 GPU-hours
    fail = {"failures": {"node_failures_per_1000_node_days": 200}}
    sc = scenario(tmp_path, rows, [owned("own-a", gpus=16, **fail), owned("own-b", gpus=16, **fail)], H_DAYS)
    reps = [costsim.simulate(sc, seed=s) for s in range(5)]
    a = [r.summary.set_index("option").loc["own-a", "lost_gpu_hours"] for r in reps]
    b = [r.summary.set_index("option").loc["own-b", "lost_gpu_hours"] for r in reps]
    assert a != b  # the noise is there
    v = decide(reps, [])  # no targets: the two are compared on cost alone
    assert v.close_call and v.same_cost and "cost the same" in v.sentence and "interval" in v.sentence
    assert v.difference_low_usd <= 0 <= v.difference_high_usd and v.replications == 5


def test_targets_filter_and_bad_targets_are_refused(tmp_path):
    res = costsim.simulate(_flip_scenario(tmp_path, 1000.0))
    assert decide(res).option == "own"
    v = decide(res, ["utilization>=0.9", "p95_delay_h<=1"])  # the owned cluster idles most of the time
    assert v.option == "cloud" and "only option that keeps up and meets utilisation ≥ 90 %" in v.sentence
    assert not v.options.set_index("option").loc["own", "meets_targets"]
    assert "p95 queue delay 0 h ≤ 1 h" in decide(res, ["p95_delay_h<=1"]).sentence
    assert parse_target(" completion >= 0.99 ").value == 0.99
    for bad, words in [("p95<=4", "unknown metric"), ("p95_delay_h<4", "is not METRIC"), ("completion>=1e999", "finite")]:
        with pytest.raises(ScenarioError, match=words):
            parse_target(bad)


def test_a_sweep_variant_gives_the_same_verdict_as_its_runs(tmp_path):
    sc_path = tmp_path / "s.yaml"
    sc_path.write_text(costsim.dump_scenario(_flip_scenario(tmp_path, 3.0)))
    (tmp_path / "sw.yaml").write_text("base: s.yaml\nseed: 2\nreplications: 2\ngrid:\n  options.cloud.price_per_gpu_hour: [3.0, 1000.0]\n")
    res = costsim.sweep(tmp_path / "sw.yaml", executor="local")
    cheap, dear = decide(res, variant="v000"), decide(res, variant="v001")
    assert cheap.option == "cloud" and dear.option == "own" and dear.replications == 2
    with pytest.raises(costsim.ArgumentError, match=r"decide\(\): variant: name one of the sweep's variants"):
        decide(res)
    by_hand = [costsim.simulate(res.scenarios["v001"], seed=s) for s in res.runs.seed.unique()]
    assert decide(by_hand).difference_usd == pytest.approx(dear.difference_usd, rel=1e-12)


@pytest.mark.slow
def test_baseline_at_three_times_the_arrivals_never_crowns_an_option_that_cannot_keep_up():
    # The case: at arrival ×3 the baseline's own-256 has the lowest bill with most of the
    # work undone. Every owned size is overloaded there (offered load > 1): on-demand is the answer.
    from costsim.runs.sweepfile import sweep_from_sets

    spec = sweep_from_sets(ROOT / "scenarios" / "baseline.yaml", ["workload.arrival_scale=3"])
    res = costsim.simulate(spec.variants[0].scenario)
    s = res.summary.set_index("option")
    assert s.total_cost_usd.idxmin() == "own-256"
    v = decide(res)
    opts = v.options.set_index("option")
    assert list(opts.index[~opts.keeps_up]) == ["own-256", "own-384", "own-512"]
    assert (s.loc[["own-256", "own-384", "own-512"], "offered_load"] > 1).all()
    assert v.option == "cloud-od" and "own-256" in v.sentence and "cannot drain" in v.sentence


@pytest.mark.slow
def test_every_target_metric_can_be_asked_for(tmp_path):
    from costsim.decisions.targets import METRICS

    res = costsim.simulate(_flip_scenario(tmp_path, 1000.0))
    for metric in METRICS:
        v = decide(res, [f"{metric}>=0"])
        assert v.option is not None, metric


def test_a_job_waiting_after_an_interruption_keeps_its_remaining_work(tmp_path):
    # Spot capacity that is taken away twice a day per instance and takes 48 h to get back: jobs
    # of 100 h rarely finish. Whatever the draws, the work an option reports done (submitted −
    # unfinished) cannot exceed the useful GPU-hours it held (held − lost to interruptions). Every
    # job started, and a job waiting to resume after a preemption is not a backlog: the gate lets
    # spot through (no queue), and its completion (none of the 30 finishable jobs done) fails a
    # completion target.
    rows = [(float(i) * 12, 8, 100.0) for i in range(30)]
    spot = cloud("spot", pricing="spot", price_per_gpu_hour=1.0, preemptions_per_instance_day=2,
                 reacquire_delay_h=48)
    sc = scenario(tmp_path, rows, [spot, cloud("od", price_per_gpu_hour=3.0)], 20.0)
    res = costsim.simulate(sc, seed=3)
    s = res.summary.set_index("option").loc["spot"]
    jobs = res.jobs[res.jobs.option == "spot"]
    assert s.restarts + s.preemptions > 0 and s.jobs_completed < 30
    done = s.work_submitted_gpu_hours - s.work_unfinished_gpu_hours
    assert done <= (jobs.gpu_hours - jobs.lost_gpu_hours).sum() + 1e-6
    assert s.work_unfinished_gpu_hours > 0
    assert s.jobs_waiting == 0 and s.jobs_stale == 0 and s.completion < 0.99
    v = decide(res, ["completion>=0.99"])
    opts = v.options.set_index("option")
    assert opts.loc["spot", "keeps_up"] and not opts.loc["spot", "meets_targets"]
    assert v.option == "od"


def test_a_backlog_from_the_lead_time_is_not_load(tmp_path):
    # 8 GPUs delivered after 5 days; an 8-GPU job of 5 h every 10 h (half the cluster) for 20
    # days. The 12 jobs that queued before delivery are work that falls within the window too: the
    # load is (48 jobs × 40 GPU-h) / (8 GPUs × 360 h) = 2/3 (the last, at 470 h, fits whole), a
    # backlog it clears within five days.
    rows = [(i * 10.0, 8, 5.0) for i in range(48)]
    sc = scenario(tmp_path, rows, [owned(gpus=8, lead_time_days=5), cloud()], 20.0)
    s = costsim.simulate(sc).summary.set_index("option").loc["own"]
    assert s.offered_load == pytest.approx(48 * 40 / (8 * 360))
    assert s.jobs_completed == 48 and s.stale_share == 0
    assert decide(costsim.simulate(sc)).options.set_index("option").loc["own", "keeps_up"]


def test_a_job_that_never_started_counts_the_whole_nodes_it_would_hold(tmp_path):
    # 16 GPUs in two 8-GPU nodes; a 16-GPU job holds them past the horizon; a 12-GPU job behind it
    # never starts and would hold two whole nodes: 16 × 10 h left.
    sc = scenario(tmp_path, [(0.0, 16, 300.0), (1.0, 12, 10.0)], [owned(gpus=16, scheduler="fifo"), cloud()], H_DAYS)
    s = costsim.simulate(sc).summary.set_index("option").loc["own"]
    assert s.work_unfinished_gpu_hours == pytest.approx(16 * (300 - 240) + 16 * 10)
    assert s.work_submitted_gpu_hours == pytest.approx(16 * 300 + 16 * 10)


def test_a_bad_source_is_an_argument_error_naming_it(tmp_path):
    """decide's own arguments are refused as arguments, not as a bad scenario."""
    sc = _flip_scenario(tmp_path, 3.0)
    other = costsim.scenario_from_data({**sc.model_dump(mode="json"), "name": "other"}, "o", tmp_path)
    with pytest.raises(costsim.ArgumentError, match=r"decide\(\): source: needs a Results"):
        decide("not a result")
    with pytest.raises(costsim.ArgumentError, match=r"decide\(\): source: replications must be runs of one scenario"):
        decide([costsim.simulate(sc), costsim.simulate(other)])
