"""The phases table (``Results.phases``) against independent computations.

One small scenario, written out in tests/helpers.py (``PHASES_SCENARIO``): a synchronous
colocated class and an asynchronous disaggregated class on one owned H100 option without failures. Each per-iteration column is
recomputed from the job draws (``workload.generate``, the same seed) and the per-iteration model
(``rl.phase_times``) summed by hand, and checked against invariants of the iteration model; two
degenerate classes (every response equally long, decode speeds given) are checked against
closed forms worked out in the comments.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import PHASES_SCENARIO as SCENARIO
from helpers import phases_closed_form_scenario as closed_form_scenario

import costsim
from costsim.catalog.load import default_catalog
from costsim.models import rl
from costsim.plan.resolve import resolve
from costsim.plots import figures as plots
from costsim.workload import jobs as workload
from costsim.workload.plan import hardware, shape

ROLLOUT_GPUS = {"sync-colo": 8, "async": 12}  # colocated: all 8; disaggregated: 16 × 0.75 (4 train)
PHASE_COLUMNS = ["rollout_s", "logprobs_s", "scoring_s", "update_s", "sync_s", "overhead_s"]


@pytest.fixture(scope="module")
def run():
    sc = costsim.runs.api.scenario_from_data(SCENARIO, "test")
    res = costsim.simulate(sc)
    return sc, res.phases.set_index("job_class"), workload.generate(sc)


def class_iterations(jobs, sc, name: str) -> np.ndarray:
    """Rows of the class's planned iterations in the job table's per-iteration arrays."""
    k = [c.name for c in sc.workload.classes].index(name)
    idx = np.flatnonzero(jobs.class_index == k)
    assert len(idx) > 3  # the test means something only if the class has jobs
    starts, counts = jobs.iter_start[idx], jobs.iterations[idx]
    return np.concatenate([np.arange(a, a + n) for a, n in zip(starts, counts, strict=True)])


@pytest.mark.parametrize("name", ["sync-colo", "async"])
def test_rollout_tokens_per_gpu_second_is_tokens_over_rollout_gpu_seconds(run, name):
    sc, ph, jobs = run
    its = class_iterations(jobs, sc, name)
    row = ph.loc[name]
    assert row.iterations_planned == len(its)
    tokens = jobs.length_sum[its].sum()
    expected = tokens / (len(its) * row.rollout_s * ROLLOUT_GPUS[name])
    assert row.rollout_tokens_per_s_per_gpu == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("name", ["sync-colo", "async"])
def test_phase_means_are_the_per_iteration_model_averaged(run, name):
    """Each column is the mean over the class's planned iterations of the model's phase times."""
    sc, ph, jobs = run
    its = class_iterations(jobs, sc, name)
    plan = resolve(sc, default_catalog())[0]
    klass = next(c for c in sc.workload.classes if c.name == name)
    pt = rl.phase_times(shape(klass), hardware(plan), jobs.length_sum[its], jobs.length_max[its],
                        jobs.length_sq_sum[its])
    row = ph.loc[name]
    for col in PHASE_COLUMNS:
        assert row[col] == pytest.approx(getattr(pt, col[:-2]).mean(), rel=1e-9), col
    assert row.iteration_s == pytest.approx(pt.total.mean(), rel=1e-9)
    assert row.straggler_share == pytest.approx(pt.straggler.sum() / pt.rollout.sum(), rel=1e-9)
    assert row.rollout_share == pytest.approx(pt.rollout.sum() / pt.total.sum(), rel=1e-9)


def test_sync_iteration_is_the_sum_of_its_phases(run):
    _, ph, _ = run
    row = ph.loc["sync-colo"]
    assert row.overhead_s == 0.0
    assert row.iteration_s == pytest.approx(sum(row[c] for c in PHASE_COLUMNS), rel=1e-12)
    assert 0 < row.rollout_share < 1


def test_async_iteration_overlaps_rollout_with_training(run):
    """Per iteration, async = max(rollout + overhead, log-probs + scoring + update) + sync (the
    re-prefill runs on the rollout GPUs), so the mean lies between max of the means (Jensen) and
    the sum of the phases."""
    _, ph, _ = run
    row = ph.loc["async"]
    train = row.logprobs_s + row.scoring_s + row.update_s
    floor = max(row.rollout_s + row.overhead_s, train) + row.sync_s
    assert row.overhead_s > 0  # re-prefill of the in-flight responses under new weights
    assert floor * (1 - 1e-12) <= row.iteration_s <= sum(row[c] for c in PHASE_COLUMNS) * (1 + 1e-12)
    assert row.iteration_s < sum(row[c] for c in PHASE_COLUMNS)  # it does overlap here


@pytest.mark.parametrize("name", ["sync-colo", "async"])
def test_shares_are_shares(run, name):
    _, ph, _ = run
    row = ph.loc[name]
    assert 0 <= row.straggler_share <= 1
    assert 0 < row.rollout_share <= 1
    assert 0 <= row.capped_share <= 1


# Closed forms. One colocated sync class of a 7B model on 8 H100s (one rollout replica per GPU:
# tensor_parallel 1), n = 16 × 4 = 64 responses of exactly L = 1,000 tokens (cv 0), prompts of
# Lp = 512 tokens, 1 byte of KV cache per token, and both decode speeds given:
# - full batch: n·L / (replicas × X) = 64,000 / (8 × X) seconds, X the per-GPU decode rate;
# - drain: L / S (the straggler at S tokens/s) + kv · n · (Lp·L + L²/2) / (8 × 3.35e12 × η)
#   = 1 · 64 · (512,000 + 500,000) / (2.68e13 · η) ≈ 2.4e-6 / η s, negligible;
# - compute: 2 · 7e9 · 64,000 / (8 × 989e12 × 0.35) = 0.324 s;
# - before decoding, the prompts' prefill: 2 · 7e9 · 64 · 512 / (8 × 989e12 × prefill MFU) s (PREFILL_S).
# Rollout is the largest plus the prefill; rollout tokens/s per GPU = 64,000 / (rollout × 8).
# (helpers.phases_closed_form_scenario builds it.)


KV_DRAIN_S = 1e-5  # bound on the drain's KV term above for any η ≥ 0.25
PREFILL_S = 2 * 7e9 * 64 * 512 / (8 * 989e12 * default_catalog().rl["prefill_mfu"])  # 0.116 s at MFU 0.5


def test_throughput_bound_rollout_runs_at_the_given_rate_with_no_straggler():
    # X = 2,000 tok/s/GPU, S = 1e6 tok/s: full batch 64,000 / 16,000 = 4.0 s beats the drain
    # (1,000 / 1e6 = 0.001 s) and compute (0.324 s), after the prefill: tokens/s per GPU is
    # 64,000 / ((4 + prefill) × 8) (X while decoding), and the longest response never runs alone.
    row = costsim.simulate(closed_form_scenario(2000, 1e6)).phases.iloc[0]
    assert row.rollout_s == pytest.approx(4.0 + PREFILL_S, rel=1e-12)
    assert row.rollout_tokens_per_s_per_gpu == pytest.approx(64_000 / ((4.0 + PREFILL_S) * 8), rel=1e-12)
    assert row.straggler_share == 0.0
    assert row.capped_share == 0.0


def test_drain_bound_rollout_is_the_straggler():
    # X = 2,000, S = 50 tok/s: the drain, 1,000 / 50 = 20 s (+ the negligible KV term), beats the
    # full batch (4 s): the straggler is 20 s of it, after the prefill; tokens/s per GPU =
    # 64,000 / ((20 + prefill) × 8), 400 while decoding.
    assert default_catalog().rl["hbm_efficiency"] >= 0.25  # the KV term's bound assumes it
    row = costsim.simulate(closed_form_scenario(2000, 50)).phases.iloc[0]
    assert 20.0 + PREFILL_S <= row.rollout_s <= 20.0 + PREFILL_S + KV_DRAIN_S
    assert row.straggler_share == pytest.approx(20.0 / row.rollout_s, rel=1e-12)
    assert row.straggler_share == pytest.approx(20.0 / (20.0 + PREFILL_S), abs=KV_DRAIN_S / 20)
    assert row.rollout_tokens_per_s_per_gpu == pytest.approx(64_000 / ((20.0 + PREFILL_S) * 8), rel=KV_DRAIN_S)


def test_closed_form_training_phases():
    # T = n·Lp + n·L = 32,768 + 64,000 = 96,768 tokens. Log-probs: one forward pass of the policy,
    # 2 · 7e9 · 96,768 / (8 × 989e12 × 0.35) s. Scoring: the reference model's forward pass (the
    # same) plus the verifier, 64 × 0.05 s over 8 GPUs × w CPU workers. Each forward pass is one
    # micro-batch (96,768 tokens ≤ 8 × 16,384): its fixed t_mb0 and, the 7B being pure data
    # parallel (FSDP), one all-gather of 7/8 × 14 GB over NVLink. Reshard (colocated), an NCCL
    # refit: ⌈14 GB / bucket⌉ latencies, the same all-gather of the shards, the 14 GB of bf16
    # weights at the method's share of the node's NVLink bus bandwidth, the engines' reload.
    sc = closed_form_scenario(2000, 1e6)
    row = costsim.simulate(sc).phases.iloc[0]
    gpu = resolve(sc, default_catalog())[0].gpu
    c = default_catalog().rl
    workers = c["verifier_workers_per_gpu"]
    nvlink = gpu.nvlink_busbw_gb_s * 1e9
    gather = 7 / 8 * 14e9 / nvlink
    forward = 2 * 7e9 * 96_768 / (8 * 989e12 * 0.35) + c["microbatch_s"] + gather
    assert gpu.bf16_dense_tflops == 989.0
    assert row.logprobs_s == pytest.approx(forward, rel=1e-12)
    assert row.scoring_s == pytest.approx(forward + 64 * 0.05 / (8 * workers), rel=1e-12)
    refit = (math.ceil(14 / c["sync_bucket_gb"]) * c["sync_nccl_latency_s"] + gather
             + 14e9 / (nvlink * c["sync_nccl_efficiency"]) + 14e9 / (c["reload_gb_s"] * 1e9))
    assert row.sync_s == pytest.approx(refit, rel=1e-12)
    assert math.isclose(row.iteration_s, sum(row[c] for c in PHASE_COLUMNS), rel_tol=1e-12)


def test_phase_figure_stacks_every_phase_and_marks_the_iteration(run):
    """Each phase is a bar of its own column; the diamond is the iteration; only the async class's
    hover says that its bars add up to more than the iteration."""
    sc, ph, _ = run
    fig = plots.phase_breakdown(costsim.simulate(sc))
    bars = {t.name: dict(zip(t.x, t.y, strict=True)) for t in fig.data if t.type == "bar"}
    assert list(bars) == ["rollout", "log-probs", "scoring", "update", "weight sync / reshard", "async overhead"]
    for label, col in zip(bars, PHASE_COLUMNS, strict=True):
        for name in ("sync-colo", "async"):
            assert bars[label][name] == ph.loc[name, col]
    (diamond,) = [t for t in fig.data if t.type == "scatter"]
    assert dict(zip(diamond.x, diamond.y, strict=True)) == {n: ph.loc[n, "iteration_s"] for n in ("sync-colo", "async")}
    notes = {x: c[-1] for t in fig.data if t.type == "bar" for x, c in zip(t.x, t.customdata, strict=True)}
    assert "overlaps training" in notes["async"] and "overlaps" not in notes["sync-colo"]
    assert "overlap" in fig.layout.title.text


def test_throughput_figure_shows_tokens_per_gpu_and_straggler_share(run):
    sc, ph, _ = run
    (bar,) = plots.rollout_throughput(costsim.simulate(sc)).data
    for x, y, text in zip(bar.x, bar.y, bar.text, strict=True):
        assert y == ph.loc[x, "rollout_tokens_per_s_per_gpu"]
        assert text == f"{round(100 * ph.loc[x, 'straggler_share'])}%"
