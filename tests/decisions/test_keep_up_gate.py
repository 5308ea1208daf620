"""The keep-up gate (DESIGN.md section 14) against hand-computed loads, one test per rule:
(a) a job longer than the horizon counts only what the horizon can hold of it; (b) serving's real
use after delivery is taken off the capacity; (c) the backlog built before delivery is work that
falls within the window; (d) a job waiting to resume after a preemption is not stale; (e) a job
never started is stale wherever it arrived, when it has waited far past the option's delays;
(f) no queue at the end, no flag. Then the summary's ``completion``, ``jobs_finishable``,
``queued_gpu_hours`` and ``serving_unmet_rent_usd`` by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from helpers import cloud, owned, scenario

import costsim
from costsim.catalog.load import default_catalog
from costsim.decisions.fair import fair_rows, why_not, why_over
from costsim.engine.run import UsageRecord
from costsim.plan.resolve import resolve
from costsim.results.backlog import keep_up_measures, stale_jobs

H_DAYS = 10.0  # 240 h


def _gate(res) -> pd.DataFrame:
    """The summary with the fair columns (keeps_up, why), by option."""
    return fair_rows(res.summary).set_index("option")


# (a) ---------------------------------------------------------------------------------------------

def test_a_job_longer_than_the_horizon_counts_only_what_the_horizon_holds(tmp_path):
    # 256 GPUs (32 nodes of 8), idle but for one 128-GPU job of 480 h (2× the 240 h horizon) at hour
    # 0. The horizon holds 240 h of it: load 128 × 240 / (256 × 240) = 0.5 (not 128 × 480 / (256 ×
    # 240) = 1, which read "the queue cannot drain").
    sc = scenario(tmp_path, [(0.0, 128, 480.0)], [owned(gpus=256)], H_DAYS)
    g = _gate(costsim.simulate(sc)).loc["own"]
    assert g.offered_load == pytest.approx(0.5)
    assert g.keeps_up and g.why == ""
    # The audit's case: one 256-GPU job of 2× the horizon on the idle 256-GPU cluster: load
    # 256 × 240 / (256 × 240) = 1 (not 200 %), and with no job waiting it keeps up.
    sc = scenario(tmp_path, [(0.0, 256, 480.0)], [owned(gpus=256)], H_DAYS)
    g = _gate(costsim.simulate(sc)).loc["own"]
    assert g.offered_load == pytest.approx(1.0)
    assert g.jobs_waiting == 0 and g.keeps_up


# (b), and serving_unmet_rent_usd ----------------------------------------------------------------

SERVING_8 = {"gpus": {"base": 8, "diurnal_amplitude": 0, "growth_per_year": 0}, "priority": True}


def test_serving_after_delivery_is_taken_off_the_capacity_in_full(tmp_path):
    # 16 GPUs delivered at hour 120 of 480; serving asks 8 GPUs every hour. It is unmet before
    # delivery (120 h × 8 = 960 GPU-h), so all of its real use falls in [120, 480]: 8 × 360 = 2,880
    # GPU-h, leaving 16 × 360 − 2,880 = 2,880 GPU-h. RL: an 8-GPU job of 7 h every 6 h from hour 120
    # (60 jobs, the last at 474 clipped to 6 h): (59 × 7 + 6) × 8 = 3,352 GPU-h. Load 3,352 / 2,880 =
    # 1.164: the RL queue grows by an hour every six. Prorating serving by (480 − 120) / 480 left
    # 5,760 − 2,160 = 3,600 and read 3,360 / 3,600 = 0.93: "keeps up".
    rows = [(120.0 + 6 * i, 8, 7.0) for i in range(60)]
    sc = scenario(tmp_path, rows, [owned(gpus=16, lead_time_days=5, scheduler="fifo"),
                                   cloud(price_per_gpu_hour=2.5)], 20.0, serving=SERVING_8)
    res = costsim.simulate(sc)
    g = _gate(res)
    own = g.loc["own"]
    assert own.serving_gpu_hours == pytest.approx(8 * 360)
    assert own.offered_load == pytest.approx(3352 / 2880)
    # One job at a time from hour 120, 7 h each: job k starts at 120 + 7k; 52 start by 480, 8 wait.
    assert own.jobs_waiting == 8
    assert not own.keeps_up and "offered load 116 %" in own.why and "cannot drain" in own.why
    # Unmet serving at the cheapest rental price (the cloud option's $2.5): 960 × 2.5.
    assert own.serving_unmet_gpu_hours == pytest.approx(960)
    assert own.serving_unmet_rent_usd == pytest.approx(960 * 2.5)
    assert g.loc["cloud", "serving_unmet_gpu_hours"] == 0 and g.loc["cloud", "serving_unmet_rent_usd"] == 0


# (c) ---------------------------------------------------------------------------------------------

def test_a_backlog_from_the_lead_time_that_does_not_drain_is_flagged(tmp_path):
    # 8 GPUs delivered at hour 240 of 480; an 8-GPU job of 6 h every 10 h from hour 0 (48 jobs). The
    # window [240, 480] holds 8 × 240 = 1,920 GPU-h; all 48 jobs fall in it (each fits whole, the
    # last at 470 too): 48 × 48 = 2,304 GPU-h, load 1.2. FIFO from 240: job k starts at 240 + 6k,
    # so jobs 0..39 start and finish (the last at 474-480) and 8 wait. Counting only the 24
    # submitted from delivery read 24 × 48 / 1,920 = 0.6 and no job of the first half was left
    # unstarted: "keeps up".
    rows = [(10.0 * i, 8, 6.0) for i in range(48)]
    sc = scenario(tmp_path, rows, [owned(gpus=8, lead_time_days=10, scheduler="fifo"), cloud()], 20.0)
    own = _gate(costsim.simulate(sc)).loc["own"]
    assert own.offered_load == pytest.approx(2304 / 1920)
    assert own.jobs_waiting == 8 and own.jobs_completed == 40
    assert not own.keeps_up and "offered load 120 %" in own.why


# Hand-built records ------------------------------------------------------------------------------

def _plan(tmp_path, option):
    """The concrete plan of one option (catalog defaults applied)."""
    return resolve(scenario(tmp_path, [(0.0, 1, 1.0)], [option], H_DAYS), default_catalog())[0]


def _record(submit, start, end, gpus, capacity_gpus: int | None):
    """A UsageRecord by hand: per job its first start and its end (NaN: never, or waiting to run
    again); ``capacity_gpus`` installed from hour 0 (None: rented, no pool)."""
    start, end = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    n, ran = len(start), ~np.isnan(start)
    zeros, none = np.zeros(n, dtype=np.int64), np.array([], dtype=float)
    return UsageRecord(
        option="x", kind="owned", start_h=start, end_h=end, held_gpus=np.where(ran, gpus, 0), instances=zeros,
        part=np.zeros(n, dtype=np.int8), restarts=zeros.copy(), preemptions=zeros.copy(), lost_h=np.zeros(n),
        overhead_h=np.zeros(n), pos_h=np.zeros(n), work_from_h=start, alloc_job=zeros[:0], alloc_start=none,
        alloc_end=none, alloc_held=zeros[:0], alloc_instances=zeros[:0], alloc_part=np.zeros(0, dtype=np.int8),
        alloc_share=none,
        capacity_change_h=np.array([0.0]) if capacity_gpus is not None else none,
        capacity_gpus=np.array([capacity_gpus]) if capacity_gpus is not None else zeros[:0])


def _measures(plan, rec, horizon_h, submit, run_h, gpus):
    submit, run_h, gpus = (np.asarray(x, dtype=float) for x in (submit, run_h, gpus))
    started = ~np.isnan(rec.start_h) & (rec.start_h < horizon_h)
    completed = started & (rec.end_h <= horizon_h)
    m = keep_up_measures(plan, rec, horizon_h, submit, started, completed, run_h, gpus, 0.0)
    return m, why_not(m["offered_load"], m["stale_share"], m["jobs_waiting"])


# (d) ---------------------------------------------------------------------------------------------

def test_a_job_waiting_to_resume_after_a_preemption_is_not_stale(tmp_path):
    # Spot, no quota (load NaN), 240 h; 20 jobs of 8 GPUs × 10 h, one every 6 h from hour 0, all
    # started at once. 19 completed; job 0 was preempted at hour 235 and waits to re-acquire at the
    # end (started, no planned end). It got its turn: no job is waiting, none is stale. Counting it
    # read 1 of the 20 first-half jobs (5 % > 1 %) "never started".
    plan = _plan(tmp_path, cloud("spot", pricing="spot", preemptions_per_instance_day=1))
    submit = 6.0 * np.arange(20)
    end = submit + 10.0
    end[0] = np.nan
    m, why = _measures(plan, _record(submit, submit, end, 8, None), 240.0, submit, np.full(20, 10.0),
                       np.full(20, 8))
    assert math.isnan(m["offered_load"])
    assert m["jobs_waiting"] == 0 and m["jobs_stale"] == 0 and m["stale_share"] == 0
    assert why == ""


# (e) ---------------------------------------------------------------------------------------------

H_TRACE = 149 * 24.0  # 3,576 h: a 149-day trace whose jobs arrive late


def _late_trace(extra_submit, extra_run):
    """47 one-GPU jobs of 2 h from hour 2,800, every 8 h, each started after 0.5 h (so the p95 delay
    of the started jobs is 0.5 h), plus never-started jobs at ``extra_submit`` (runs ``extra_run``)."""
    submit = np.concatenate([2800.0 + 8 * np.arange(47), extra_submit])
    start = np.concatenate([2800.5 + 8 * np.arange(47), np.full(len(extra_submit), np.nan)])
    run = np.concatenate([np.full(47, 2.0), extra_run])
    return submit, start, start + run, run


def test_a_fifo_head_blocked_late_in_the_horizon_is_stale(tmp_path):
    # 48 GPUs for 3,576 h. An 8-GPU head arrives at 3,171 and never starts; 52 one-GPU jobs of 2 h
    # arrive behind it at 3,171 + 7.5 k (k = 1..52) and never start either. Stale: waiting more than
    # max(4 × 0.5, 2, 24) = 24 h, i.e. submitted before 3,552: the head and k = 1..50 (3,546 <
    # 3,552 < 3,553.5): 51 of the 100 jobs. Load: (47 × 1 + 8 + 52 × 1) GPUs × 2 h = 214 GPU-h of
    # 48 × 3,576: 0.0012; only staleness flags it. Looking at the first half (before 1,788), where
    # no job arrived, read 0 %: "keeps up".
    plan = _plan(tmp_path, owned(gpus=48))
    submit, start, end, run = _late_trace(np.concatenate([[3171.0], 3171.0 + 7.5 * np.arange(1, 53)]),
                                          np.full(53, 2.0))
    gpus = np.concatenate([np.ones(47), [8], np.ones(52)])
    m, why = _measures(plan, _record(submit, start, end, gpus, 48), H_TRACE, submit, run, gpus)
    assert m["offered_load"] == pytest.approx((47 * 2 + 8 * 2 + 52 * 2) / (48 * H_TRACE))
    assert m["jobs_waiting"] == 53 and m["jobs_stale"] == 51
    assert m["stale_share"] == pytest.approx(0.51)
    assert "51 % of the jobs never started" in why


def test_jobs_that_arrived_just_before_the_end_or_wait_less_than_their_run_are_not_stale(tmp_path):
    # The same cluster: 10 one-GPU jobs of 2 h arrive an hour before the end (waited 1 h < 24 h), and
    # a job of 100 h arrived 50 h before it (waited 50 h: past the 24 h floor and 4 × 0.5 h, but less
    # than its own run). Nothing is stale; the load is tiny: it keeps up, though 11 jobs wait.
    plan = _plan(tmp_path, owned(gpus=48))
    submit, start, end, run = _late_trace(np.append(np.full(10, H_TRACE - 1), H_TRACE - 50),
                                          np.append(np.full(10, 2.0), 100.0))
    gpus = np.ones(len(submit))
    m, why = _measures(plan, _record(submit, start, end, gpus, 48), H_TRACE, submit, run, gpus)
    assert m["jobs_waiting"] == 11 and m["jobs_stale"] == 0 and why == ""


def test_staleness_is_measured_against_the_options_own_delays():
    # Started jobs waited 10 h each (p95 10 h): a 2-h job never started is stale past
    # max(4 × 10, 2, 24) = 40 h of waiting, not before.
    submit = np.array([0.0, 10.0, 20.0, 100.0 - 39.0, 100.0 - 41.0])
    start = np.array([10.0, 20.0, 30.0, np.nan, np.nan])
    started = ~np.isnan(start)
    stale = stale_jobs(submit, start, started, np.full(5, 2.0), 100.0)
    assert stale.tolist() == [False, False, False, False, True]


# (f) ---------------------------------------------------------------------------------------------

def test_no_queue_at_the_end_keeps_up_whatever_the_load(tmp_path):
    # 8 GPUs, 240 h, FIFO: a job of 10 h at hour 0, then one of 480 h at hour 0.5 that starts at
    # hour 10 and runs past the end. Load: (10 + 239.5) × 8 / (8 × 240) = 1.040 (the second fits
    # 239.5 h of the window after its submission, though it could use only 230): at or above 1, but
    # no job waits at the end, so there is no queue to drain. Unclipped, it read (10 + 480) / 240 =
    # 2.04: "cannot keep up".
    sc = scenario(tmp_path, [(0.0, 8, 10.0), (0.5, 8, 480.0)], [owned(gpus=8, scheduler="fifo")], H_DAYS)
    own = _gate(costsim.simulate(sc)).loc["own"]
    assert own.offered_load == pytest.approx((10 + 239.5) / 240)
    assert own.jobs_waiting == 0 and own.keeps_up and own.why == ""
    # The rule itself, on columns: no queue -> "", a queue -> the load's words; a table from before
    # jobs_waiting was a column (NaN) is judged as it was then.
    assert why_not(1.5, 0.0, 0) == ""
    assert "offered load 150 %" in why_not(1.5, 0.0, 3)
    assert "offered load 150 %" in why_not(1.5, 0.0)
    assert why_not(math.nan, 0.0, 3) == "" and why_not(0.9, 0.0, 3) == ""


# The new summary columns -------------------------------------------------------------------------

def test_completion_counts_only_jobs_that_could_finish_somewhere(tmp_path):
    # 8 owned GPUs (FIFO, no startup) and on-demand with 0.5 h startup, 240 h. Jobs (8 GPUs each):
    #   j0 at 0 for 10 h: finishable (0 + 10 ≤ 240); j1 at 1 for 300 h: not (1 + 300 > 240);
    #   j2 at 235 for 4 h: finishable (239); j3 at 236 for 4 h: finishable on the owned option's 4 h
    #   (240 ≤ 240), not on the cloud's 4.5; j4 at 238 for 4 h: not (242).
    # Owned: j0 runs 0-10, j1 holds the cluster from 10 on, so j2 and j3 wait: 1 of 3 finishable
    # done. Cloud: j0 and j2 (235.5-239.5) done, j3 ends at 240.5: 2 of 3. (Completed ÷ submitted
    # read 1/5 and 2/5.)
    rows = [(0.0, 8, 10.0), (1.0, 8, 300.0), (235.0, 8, 4.0), (236.0, 8, 4.0), (238.0, 8, 4.0)]
    sc = scenario(tmp_path, rows, [owned(gpus=8, scheduler="fifo"), cloud(startup_h=0.5)], H_DAYS)
    res = costsim.simulate(sc)
    g = _gate(res)
    assert (g.jobs_finishable == 3).all()
    assert g.loc["own", "completion"] == pytest.approx(1 / 3) and g.loc["own", "jobs_completed"] == 1
    assert g.loc["cloud", "completion"] == pytest.approx(2 / 3) and g.loc["cloud", "jobs_completed"] == 2
    # What a target reads is the column.
    v = costsim.decide(res, ["completion>=0.5"])
    assert v.option == "cloud" and not v.options.set_index("option").loc["own", "meets_targets"]
    # Queued GPU-hours, by hand, on the owned option: j1 waits 10 − 1 = 9 h, j2 240 − 235 = 5, j3 4,
    # j4 2 (j0 none), each × 8 GPUs: (9 + 5 + 4 + 2) × 8 = 160. On-demand starts every job at once.
    s = res.summary.set_index("option")
    assert s.loc["own", "queued_gpu_hours"] == pytest.approx(160)
    assert s.loc["cloud", "queued_gpu_hours"] == 0
    for option in ("own", "cloud"):  # and it is the integral of the timeseries' queued_gpus
        t = res.timeseries[res.timeseries.option == option]
        width = np.diff(np.append(t.hour.to_numpy(), 240.0))
        assert s.loc[option, "queued_gpu_hours"] == pytest.approx(float((t.queued_gpus * width).sum()))


def test_queued_gpu_hours_is_the_timeseries_integral_with_a_lead_time_and_partial_hours(tmp_path):
    # 16 GPUs delivered at hour 30.25 of 100.5 (a partial last hour); jobs of 4, 8 and 16 GPUs at
    # fractional hours wait for delivery and each other. Whatever the schedule, Σ (first start or
    # the horizon − submit) × GPUs equals ∫ queued_gpus dt over the hourly bins.
    rows = [(0.3 + 2.7 * i, [4, 8, 16][i % 3], 3.0 + (i % 5)) for i in range(30)]
    sc = scenario(tmp_path, rows, [owned(gpus=16, lead_time_days=30.25 / 24)], 100.5 / 24)
    res = costsim.simulate(sc)
    j = res.jobs
    by_hand = float(((j.start_h.fillna(100.5) - j.submit_h) * j.gpus).sum())
    t = res.timeseries
    width = np.diff(np.append(t.hour.to_numpy(), 100.5))
    assert res.summary.queued_gpu_hours[0] == pytest.approx(by_hand)
    assert by_hand == pytest.approx(float((t.queued_gpus * width).sum()))
    assert by_hand > 30 * 16  # most of them waited for delivery


def _gate_rows(loads, stales, waiting) -> pd.DataFrame:
    """One option's replications as ``fair_rows`` sees them (the gate's columns only)."""
    rows = pd.DataFrame({"option": "own", "offered_load": loads, "stale_share": stales, "jobs_waiting": waiting})
    rows["why"] = [why_not(a, b, c) for a, b, c in zip(loads, stales, waiting, strict=True)]
    return rows


def test_the_reason_over_replications_is_the_mean_of_those_that_failed_on_it():
    # Loads 1.2 and 1.4 fail (jobs wait at the end); 0.5 keeps up: the reason is their mean, 130 %,
    # not the first replication's 120 %, and says it held in 2 of the 3.
    rows = _gate_rows([1.2, 1.4, 0.5], [0.0, 0.0, 0.0], [5, 5, 0])
    assert why_over(rows) == "in 2 of 3 replications: " + why_not(1.3, 0.0)
    assert "130 %" in why_over(rows)
    # Every replication failed on its load, one also on stale jobs (3 %): each reason over the
    # replications it held in, and says so when that is not all of them.
    rows = _gate_rows([1.1, 1.3], [0.0, 0.03], [2, 7])
    assert why_over(rows) == why_not(1.2, 0.0) + "; in 1 of 2 replications: " + why_not(0.0, 0.03)
    # One replication failed on its load only, the other on stale jobs only: neither held throughout.
    rows = _gate_rows([1.3, 0.8], [0.0, 0.05], [2, 7])
    assert why_over(rows) == ("in 1 of 2 replications: " + why_not(1.3, 0.0) + "; in 1 of 2 replications: "
                              + why_not(0.0, 0.05))
    assert why_over(_gate_rows([0.9, 0.8], [0.0, 0.0], [3, 0])) == ""


def test_the_verdicts_option_table_gives_the_reason_over_its_replications():
    from costsim.decisions.verdict import MEANS, option_table

    rows = _gate_rows([1.4, 1.2, 1.0], [0.0, 0.0, 0.0], [5, 5, 1])
    rows = rows.assign(**{c: 1.0 for c in MEANS if c not in rows}, side="own", keeps_up=False)
    (why,) = option_table(rows, ())["why"]
    assert why == why_not(1.2, 0.0) and "120 %" in why  # (1.4 + 1.2 + 1.0) / 3, not the first's 140 %
