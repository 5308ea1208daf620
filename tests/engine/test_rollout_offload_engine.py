"""Rollout offload through the engine and the tables (docs/rollout-offload.md).

An owned option with ``rollout_pool`` trains its disaggregated RL classes at home and rents their
rollout GPUs on the named on-demand or spot option. Checked against independent truth:
- with no preemptions, no delays and the same GPUs and link, it is the disaggregated job whose
  rollout GPUs are simply more (same iteration, same run, same GPU-hours);
- its rollout bill is, by hand, hours held × instances × GPUs × price × the billed share
  a·(1 + λ·(startup + push)), and the option's total is its home lines plus that bill;
- the samples lost are λ·(samples in flight)·(the rollout's work in pool-seconds), and the iteration with
  the instances' downtime between rollouts, by hand;
- a hybrid offloads from its base only; the home energy counts only the training GPUs.
"""

import math

import numpy as np
import pytest

import costsim
from costsim.models import offload
from costsim.plan.hardware import shape
from costsim.plan.resolve import resolve
from costsim.results.costing import ALL_ITEMS
from costsim.scenario import ScenarioError
from costsim.workload.plan import hardware

# 32 GPUs a job: 24 rollout (3 instances of 8), 8 training. 7B, 256 samples of exactly 1,000 tokens:
# every iteration is the same.
CLASS = """\
    - name: flagship
      arrivals_per_day: {arrivals}
      gpus: 32
      rollout_gpu_fraction: 0.75
      iterations: 40
      model_params_b: 7
      placement: disaggregated
      rollout: {{prompts: 32, samples_per_prompt: 8, response_tokens: {response}}}
      checkpoint: {{every_iterations: 10, write_minutes: 1, restart_minutes: 5}}
{extra}"""


def scenario(extra: str, options: str, days: float = 6, arrivals: float = 2, response: int = 1000) -> costsim.Scenario:
    cls = CLASS.format(extra=extra, arrivals=arrivals, response=response)
    text = f"name: offload\nhorizon_days: {days}\nseed: 3\nworkload:\n  classes:\n{cls}options:\n{options}"
    return costsim.load_scenario_text(text, "offload.yaml", ".")


HOME = "  - {name: home, kind: owned, gpu_type: H100, gpus: 64, lead_time_days: 0, failures: null{pool}}\n"
SMALL_HOME = ("  - {name: home, kind: owned, gpu_type: H100, gpus: 8, lead_time_days: 0, failures: null, "
              "rollout_pool: spot}\n")


def home(pool: str = "", **kw) -> str:
    """The owned option, offloading to ``pool`` when given (with any further fields)."""
    extra = "".join(f", {k}: {v!r}" for k, v in kw.items())
    return HOME.replace("{pool}", f", rollout_pool: {pool}{extra}" if pool else "")
OD_NOW = "  - {name: od, kind: cloud, gpu_type: H100, pricing: on_demand, provisioning_delay_h: 0, startup_h: 0}\n"
SPOT = ("  - {name: spot, kind: cloud, gpu_type: H100, pricing: spot, preemptions_per_instance_day: 2, "
        "reacquire_delay_h: 0.5, provisioning_delay_h: 0.25, startup_h: 0.1}\n")


def home_link(sc: costsim.Scenario) -> float:
    """The home fabric's weight-sync path (rl.sync_s over several nodes): a broadcast leaves through
    one rank's NIC (47 GB/s on H100)."""
    return hardware(next(p for p in resolve(sc) if p.name == "home")).nic_gb_s


def push_hours(sc: costsim.Scenario, link: float) -> float:
    """Hours an offloaded job's weights take to reach a new rollout instance: the class's refit from
    the home option over the link (``offload.weight_push_s``, hand-checked in
    tests/models/test_rollout_offload.py): 7B over 12.5 GB/s at NCCL's 0.4 is 2.8 s of bytes alone."""
    home = next(p for p in resolve(sc) if p.name == "home")
    return offload.weight_push_s(shape(sc.workload.classes[0]), hardware(home), link) / 3600.0


def test_with_no_preemptions_it_is_the_disaggregated_job_with_more_rollout_gpus():
    curve = "      scaling: {curve: {a: 0.72, b: 1.4, c_mid_gpu_hours: 4, r0: 0.31}, target: 0.6}\n"
    plain = scenario(curve, home() + OD_NOW)
    link = home_link(plain)
    off = scenario(curve, home("od", rollout_link_gb_s=link) + OD_NOW)
    a, b = costsim.simulate(off), costsim.simulate(plain)
    pa, pb = (r.phases.set_index("option").loc["home"] for r in (a, b))
    assert pa["iteration_s"] == pytest.approx(pb["iteration_s"], rel=1e-12)
    assert pa["rollout_s"] == pytest.approx(pb["rollout_s"], rel=1e-12)
    ja, jb = (r.jobs[r.jobs.option == "home"].reset_index(drop=True) for r in (a, b))
    assert len(ja) == len(jb) > 5 and ja["completed"].all() and jb["completed"].all()
    np.testing.assert_allclose(ja["start_h"], jb["start_h"], rtol=0, atol=1e-9)  # no queue in either
    # The offloaded job first pushes its weights to its new instances (no provisioning or startup here).
    push_h = push_hours(off, link)
    np.testing.assert_allclose(ja["end_h"] - ja["start_h"], jb["end_h"] - jb["start_h"] + push_h, rtol=1e-12)
    # 8 GPUs at home + 24 on the pool (from the start: no delivery delay) = the plain job's 32.
    np.testing.assert_allclose(ja["gpu_hours"], jb["gpu_hours"] + 32 * push_h, rtol=1e-12)
    # The leading run reaches the target score at the same time, the push later (its compute is the
    # planned run's, spread over its hold at home, not over its rollout instances' too).
    ta, tb = (r.to_target.set_index("option").loc["home"] for r in (a, b))
    assert tb["reached"] and ta["reached"]
    assert tb["day"] < ta["day"] <= tb["day"] + push_h / 24.0 + 1e-12
    sa, sb = (r.summary.set_index("option").loc["home"] for r in (a, b))
    assert sa["rollout_lost_samples"] == 0.0 and sa["cost_rollout_usd"] > 0
    # The work is the same work: 32 GPUs × the run, training at home and sampling on the pool.
    assert sa["work_submitted_gpu_hours"] == pytest.approx(sb["work_submitted_gpu_hours"], rel=1e-12)


def test_the_rollout_bill_and_the_lost_samples_by_hand():
    sc = scenario("", home("spot") + SPOT, days=4)
    res = costsim.simulate(sc)
    spot = next(p for p in resolve(sc) if p.name == "spot")
    link = 12.5  # the catalog's rl.rollout_link_gb_s: a 100 Gbps link
    push_h = push_hours(sc, link)  # the 7B's refit over 12.5 GB/s
    assert push_h * 3600.0 > 14e9 / (link * 1e9 * 0.4)  # more than its bytes at NCCL's share of the link
    lam_h = 2.0 / 24.0
    down_h = 0.5 + 0.25 + 0.1 + push_h  # reacquire, provisioning, startup, push
    a = 1.0 / (1.0 + lam_h * down_h)
    share = a * (1.0 + lam_h * (0.1 + push_h))  # up, plus each preemption's billed startup and push
    jobs = res.jobs[res.jobs.option == "home"]
    H = sc.horizon_h
    started = jobs[jobs.start_h.notna()]
    held_h = np.minimum(started.end_h.fillna(H), H) - started.start_h  # no failures at home: one hold each
    # The first hold's rollout instances bill from their delivery, 0.25 h after the job starts at home.
    seconds = np.maximum((held_h - 0.25) * 3600.0, 0.0)
    g, least = spot.billing_granularity_s, spot.minimum_billing_s  # H100 spot: per minute, one-minute minimum
    billed = np.maximum(np.ceil(seconds / g - 1e-9) * g, least)
    by_hand = float((billed / 3600.0 * 3 * 8 * spot.price_per_gpu_hour * share).sum())
    s = res.summary.set_index("option").loc["home"]
    assert s["cost_rollout_usd"] == pytest.approx(by_hand, rel=1e-9)
    home_lines = sum(s[f"cost_{i}_usd"] for i in ALL_ITEMS if i != "rollout")
    assert s["total_cost_usd"] == pytest.approx(home_lines + by_hand, rel=1e-12)
    # Every dollar lands on a job (the home pool shared by its GPU-hours held there), idle capacity included.
    assert res.jobs[res.jobs.option == "home"]["cost_usd"].sum() == pytest.approx(s["total_cost_usd"], rel=1e-9)

    rented_h = (held_h - 0.25).clip(lower=0.0)  # rollout instances from delivery on
    assert s["rollout_gpu_hours"] == pytest.approx(float((rented_h * 24 * share).sum()), rel=1e-12)
    # Goodput: the first wait (0.25 h delivery, 0.1 h startup, the push) idles the 8 training GPUs,
    # and, from delivery, the 24 rollout GPUs (at their billed share).
    first_h = 0.25 + 0.1 + push_h
    wasted = len(started) * (first_h * 8 + (first_h - 0.25) * 24 * share)
    held_gpu_h = float((held_h * 8).sum() + (rented_h * 24 * share).sum())
    assert s["goodput"] == pytest.approx(1.0 - wasted / held_gpu_h, rel=1e-9)
    # Break-even utilisation: the cluster alone (64 GPUs all the horizon), its rollout bill left out.
    row = res.breakeven.set_index(["option", "versus"]).loc[("home", "spot")]
    assert row["own_usd_per_gpu_hour"] == pytest.approx((s["total_cost_usd"] - by_hand) / (64 * H), rel=1e-9)

    # The rollout's work is the no-preemption rollout on the pool R0, with the lost samples' tokens made
    # again: W = R0 / (1 − q·R0), q = λ · I · w / Σ L (I = 256 in flight: the KV cache holds them all;
    # w = Σ L² / (2 Σ L) = 500 tokens). Lost samples: λ per second × 256 × W an iteration.
    it = res.phases.set_index("option").loc["home"]
    plain = costsim.simulate(scenario("", home("od") + OD_NOW, days=4)).phases.set_index("option").loc["home"]
    r0, lam_s = plain["rollout_s"], 2.0 / 86_400
    q = lam_s * 256 * 500.0 / 256_000.0
    work = r0 / (1.0 - q * r0)
    assert s["rollout_lost_samples"] == pytest.approx(lam_s * 256 * work * it["iterations_done"], rel=1e-9)
    # The iteration: 3 instances, the gap between rollouts T the plain job's log-probs, scoring, update and
    # weight sync (over the same link), shorter than the downtime d. With j of the 3 up it takes 3·W/j + T;
    # the clock spends Binomial(j; 3, a) of its time with j up; an instance up when a gap starts is up
    # τ = (1 − e^(−λT)) / λ of it, one down (T − τ) / (λ·d); the iteration is (W + its mean up-time in the
    # gap) / a, and the rollout that less T.
    gap = plain["iteration_s"] - plain["rollout_s"]
    d_s = down_h * 3600.0
    share_up = {1: 3 * a * (1 - a) ** 2, 2: 3 * a**2 * (1 - a), 3: a**3}
    weight = {j: share_up[j] / (3 * work / j + gap) for j in share_up}
    tau = -math.expm1(-lam_s * gap) / lam_s
    up = sum(weight[j] * (j / 3 * tau + (1 - j / 3) * (gap - tau) / (lam_s * d_s)) for j in weight)
    up /= sum(weight.values())
    assert gap < d_s and it["iteration_s"] == pytest.approx((work + up) / a, rel=1e-12)
    assert it["rollout_s"] == pytest.approx((work + up) / a - gap, rel=1e-12)
    # Longer than the pool at a of its rate with the gap's downtime left out (W / a + T).
    assert it["iteration_s"] > work / a + gap


def test_a_hybrid_offloads_from_its_base_only_and_home_energy_counts_training_gpus():
    # The hybrid's base is "home", which offloads: so does the hybrid, on its base.
    options = (SMALL_HOME + SPOT + "  - {name: od, kind: cloud, gpu_type: H100, pricing: on_demand}\n"
               "  - {name: mix, kind: hybrid, base: home, burst: od, max_wait_h: 0}\n")
    sc = scenario("", options, days=2, arrivals=24)
    res = costsim.simulate(sc)
    jobs = res.jobs[res.jobs.option == "mix"]
    assert set(jobs.ran_on.dropna()) >= {"home", "od"}  # some wait too long for the base and burst
    s = res.summary.set_index("option")
    assert s.loc["mix", "cost_rollout_usd"] > 0 and s.loc["home", "cost_rollout_usd"] > 0
    assert s.loc["od", "cost_rollout_usd"] == 0
    # On the burst a job is a plain disaggregated job: all 32 GPUs, 4 instances.
    burst = jobs[(jobs.ran_on == "od") & jobs.completed]
    on_base = jobs[(jobs.ran_on == "home") & jobs.completed]
    assert len(burst) and len(on_base)
    np.testing.assert_allclose(burst.gpu_hours / (burst.end_h - burst.start_h), 32.0, rtol=1e-12)
    # While they wait for the base, jobs ask it for their 8 training GPUs, those that burst later too.
    ts = res.timeseries[res.timeseries.option == "mix"]
    queued_h = (jobs.start_h.fillna(sc.horizon_h).clip(upper=sc.horizon_h) - jobs.submit_h).clip(lower=0.0)
    assert ts.queued_gpus.sum() == pytest.approx(8 * queued_h.sum(), rel=1e-9)
    # Home energy: the busy GPU-hours at home are the training GPUs' (8 a job), not 32.
    solo = s.loc["home"]
    home_jobs = res.jobs[(res.jobs.option == "home") & res.jobs.start_h.notna()]
    hold = (np.minimum(home_jobs.end_h.fillna(sc.horizon_h), sc.horizon_h) - home_jobs.start_h).sum()
    plan = next(p for p in resolve(sc) if p.name == "home")
    econ = costsim.plan.resolve.economics_values(sc)
    gpu = plan.gpu
    idle_kw = plan.nodes * gpu.node_idle_kw
    per_gpu_kw = (gpu.node_max_kw - gpu.node_idle_kw) / plan.gpus_per_node
    kwh = idle_kw * sc.horizon_h + per_gpu_kw * 8 * hold  # one node of 8 GPUs
    assert solo["cost_energy_usd"] == pytest.approx(kwh * econ.pue * econ.electricity_usd_per_kwh, rel=1e-9)


def test_a_home_failure_keeps_the_rollout_instances_beside_each_hold():
    options = ("  - {name: home, kind: owned, gpu_type: H100, gpus: 64, lead_time_days: 0, "
               "failures: {node_failures_per_1000_node_days: 200000, repair_hours: 2}, rollout_pool: spot}\n" + SPOT)
    sc = scenario("", options, days=3)
    res = costsim.simulate(sc)
    s = res.summary.set_index("option").loc["home"]
    assert s["restarts"] > 0 and s["cost_rollout_usd"] > 0
    assert res.jobs[res.jobs.option == "home"]["cost_usd"].sum() == pytest.approx(s["total_cost_usd"], rel=1e-9)
    # Each hold at home has its rollout instances beside it, from its own delivery (0.25 h in).
    plans = {p.name: p for p in resolve(sc)}
    from costsim.engine.run import BASE, ROLLOUT, run_option
    from costsim.workload import jobs as workload
    from costsim.workload.plan import plan_work
    work = plan_work(sc, workload.generate(sc), plans["home"])
    from costsim.workload.rng import stream

    rngs = {name: stream(sc.seed, name, "home") for name in ("failures", "preemptions", "provisioning")}
    rec = run_option(plans["home"], work, sc.horizon_h, rngs=rngs)  # the run simulate made
    home_rows = np.flatnonzero(rec.alloc_part == BASE)
    pool_rows = np.flatnonzero(rec.alloc_part == ROLLOUT)
    assert len(pool_rows) == len(home_rows) > int(rec.restarts.sum()) > 0
    np.testing.assert_array_equal(rec.alloc_job[pool_rows], rec.alloc_job[home_rows])
    np.testing.assert_allclose(rec.alloc_start[pool_rows],
                               np.minimum(rec.alloc_start[home_rows] + 0.25, rec.alloc_end[home_rows]), rtol=1e-12)
    # A restart takes at least the first wait (re-acquiring the instances), not only restart_minutes.
    first_h = 0.25 + 0.1 + push_hours(sc, 12.5)
    assert work.restart_h[0] == pytest.approx(max(5 / 60, first_h), rel=1e-12)
    # Goodput by hand, hold by hold: the 8 training GPUs idle through each wait (the first wait, then
    # the restart) and the lost work; the 24 rollout GPUs (at their share) through the part of each
    # wait past their delivery, within the hold, and through the lost work.
    share = work.offload.share[0]
    idle8 = idle24 = held = 0.0
    seen = set()
    for row in home_rows:
        j = rec.alloc_job[row]
        wait = first_h if j not in seen else work.restart_h[j]
        seen.add(j)
        length = min(rec.alloc_end[row], sc.horizon_h) - rec.alloc_start[row]
        idle8 += min(wait, length)
        idle24 += max(min(wait, length) - 0.25, 0.0)
        held += 8 * length + 24 * share * max(length - 0.25, 0.0)
    lost = float((rec.lost_h * (8 + 24 * share)).sum())
    home = res.summary.set_index("option").loc["home"]
    assert home["goodput"] == pytest.approx(1.0 - (lost + 8 * idle8 + 24 * share * idle24) / held, rel=1e-6)
    # Checkpoint advice: the job holds one 8-GPU node at home, so one node's failures (200 a node-day).
    advice = res.advice.set_index("option").loc["home"]
    assert advice["interruptions_per_h"] == pytest.approx(200.0 / 24.0, rel=1e-12)


def test_a_quota_too_small_for_the_rollouts_is_named():
    quota = "  - {name: od, kind: cloud, gpu_type: H100, pricing: on_demand, max_gpus: 16}\n"
    with pytest.raises(ScenarioError) as err:
        scenario("", home("od") + quota)
    assert ("options.0.rollout_pool: class 'flagship' samples on 24 GPUs (24 in whole instances) but option "
            "'od' has a quota of 16 GPUs") in str(err.value)


def test_preemptions_faster_than_rollouts_are_refused_by_name():
    # λ = 10,000 a day: q = λ · I · w / Σ L = λ / 2 = 0.058 per s, beyond 1 / R for a ~40 s rollout of 4,000 tokens.
    storm = ("  - {name: spot, kind: cloud, gpu_type: H100, pricing: spot, preemptions_per_instance_day: 10000, "
             "reacquire_delay_h: 0}\n")
    sc = scenario("", home("spot") + storm, days=2, response=4000)
    with pytest.raises(ScenarioError) as err:
        costsim.simulate(sc)
    assert ("workload.classes.0: class 'flagship': preemptions on 'spot' (the rollout_pool of option 'home') destroy "
            "samples") in str(err.value)
    assert math.isfinite(costsim.simulate(scenario("", home() + storm, days=2, response=4000)).summary["total_cost_usd"].sum())


def test_preemptions_delay_the_target_and_never_add_compute():
    # The rollout pool's preemptions stretch the run (its rollouts wait for instances down): that is time
    # lost, not compute. The leading run reaches the target at start + needed / (32 GPUs × nominal / hold).
    curve = "      scaling: {curve: {a: 0.72, b: 1.4, c_mid_gpu_hours: 4, r0: 0.31}, target: 0.6}\n"
    calm = costsim.simulate(scenario(curve, home("od") + OD_NOW, days=4))
    stormy_pool = SPOT.replace("preemptions_per_instance_day: 2", "preemptions_per_instance_day: 40")
    sc = scenario(curve, home("spot") + stormy_pool, days=4)
    stormy = costsim.simulate(sc)
    it0 = calm.phases.set_index("option").loc["home"]["iteration_s"]
    nominal_h = 40 * it0 / 3600.0 + 3 / 60.0  # 40 iterations, 3 checkpoint writes of a minute
    row = stormy.to_target.set_index("option").loc["home"]
    jobs = stormy.jobs[stormy.jobs.option == "home"].sort_values("start_h")
    lead = jobs.iloc[0]
    hold = lead.end_h - lead.start_h
    needed = row["needed_gpu_hours"]
    assert row["reached"] and needed < 32 * nominal_h
    assert row["day"] * 24.0 == pytest.approx(lead.start_h + needed / (32 * nominal_h / hold), rel=1e-9)
    # Every job's compute is 32 × nominal, however stretched: the score at the horizon is the calm one's.
    assert row["gpu_hours"] == pytest.approx(32 * nominal_h, rel=1e-9)
    assert row["reward_at_horizon"] <= calm.to_target.set_index("option").loc["home"]["reward_at_horizon"] + 1e-12


def test_serving_beside_an_offloading_cluster_costs_add_up():
    text_home = home("spot").replace("gpus: 64", "gpus: 128")
    sc = scenario("", text_home + SPOT, days=3)
    data = sc.model_dump(mode="json")
    data["serving"] = {"gpus": {"base": 16}}
    res = costsim.simulate(costsim.scenario_from_data(data, "serving.yaml", "."))
    s = res.summary.set_index("option").loc["home"]
    assert s["serving_gpu_hours"] == pytest.approx(16 * sc.horizon_h, rel=1e-9) and s["cost_rollout_usd"] > 0
    jobs_cost = res.jobs[res.jobs.option == "home"]["cost_usd"].sum()
    assert jobs_cost + s["serving_cost_usd"] + s["cost_commitment_owed_usd"] == pytest.approx(s["total_cost_usd"],
                                                                                              rel=1e-9)
