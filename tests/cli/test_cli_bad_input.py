"""A corpus of malformed scenarios and traces through the CLI: exit status 2, the file, the field
(and line where known) named, no traceback, nothing written."""

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from costsim.cli.commands import app

GOOD = """\
name: s
horizon_days: 10
workload:
  trace: jobs.csv
options:
  - name: own
    kind: owned
    gpu_type: H100
    gpus: 16
  - name: cloud
    kind: cloud
    gpu_type: H100
"""
TRACE = "submit_h,gpus,duration_h\n0,8,1\n1,16,2\n"
RL = """\
name: s
horizon_days: 10
workload:
  classes:
    - name: grpo
      arrivals_per_day: 2
      gpus: 16
      iterations: {mean: 100, cv: 0.5}
      model_params_b: 7
options:
  - {name: own, kind: owned, gpu_type: H100, gpus: 32}
"""

# (case, scenario text, trace text, what the message must contain)
CORPUS = [
    ("yaml-syntax", GOOD.replace("gpus: 16", "gpus: [16"), TRACE, ["s.yaml:", "YAML syntax error"]),
    ("duplicate-key", GOOD.replace("horizon_days: 10", "horizon_days: 10\nhorizon_days: 11"), TRACE, ["s.yaml:3", "horizon_days"]),
    ("not-a-mapping", "- just\n- a list\n", TRACE, ["s.yaml", "mapping"]),
    ("unknown-key", GOOD.replace("horizon_days", "horizon_dayz"), TRACE, ["s.yaml:2:1", "horizon_dayz", "unknown field"]),
    ("missing-name", GOOD.replace("name: s\n", ""), TRACE, ["s.yaml", "name", "required"]),
    ("wrong-type", GOOD.replace("horizon_days: 10", "horizon_days: a year"), TRACE, ["s.yaml:2:1", "horizon_days"]),
    ("negative-gpus", GOOD.replace("gpus: 16", "gpus: -16"), TRACE, ["s.yaml:9:5", "options.0.gpus"]),
    ("partial-node", GOOD.replace("gpus: 16", "gpus: 100"), TRACE, ["s.yaml:9:5", "options.0.gpus", "whole number"]),
    ("unknown-kind", GOOD.replace("kind: cloud", "kind: rented"), TRACE, ["s.yaml:11", "options.1", "kind"]),
    ("unknown-gpu", GOOD.replace("gpu_type: H100\n    gpus", "gpu_type: H900\n    gpus"), TRACE, ["s.yaml:8:5", "options.0.gpu_type"]),
    ("failures-negative", GOOD.replace("gpus: 16", "gpus: 16\n    failures: {node_failures_per_1000_node_days: -5}"), TRACE,
     ["s.yaml:10:16", "options.0.failures.node_failures_per_1000_node_days", "greater than or equal to 0"]),
    ("failures-word", GOOD.replace("gpus: 16", "gpus: 16\n    failures: sometimes"), TRACE, ["s.yaml:10:5", "options.0.failures"]),
    ("preemption-on-demand", GOOD + "    preemptions_per_instance_day: 2\n", TRACE,
     ["options.1", "preemptions_per_instance_day applies to pricing spot only"]),
    ("stockout-probability", GOOD + "    stockout: {probability: 1.5}\n", TRACE, ["s.yaml:13:16", "options.1.stockout.probability"]),
    ("reserved-needs-gpus", GOOD + "    pricing: reserved\n", TRACE, ["s.yaml:10:5", "options.1", "reserved_gpus"]),
    ("reserved-with-quota", GOOD + "    pricing: reserved\n    reserved_gpus: 16\n    max_gpus: 16\n", TRACE,
     ["options.1", "max_gpus applies to pricing on_demand and spot only"]),
    ("on-demand-with-term", GOOD + "    term_years: 3\n", TRACE, ["options.1", "term_years applies to pricing reserved only"]),
    ("reserved-partial-instance", GOOD + "    pricing: reserved\n    reserved_gpus: 12\n", TRACE,
     ["s.yaml:14:5", "options.1.reserved_gpus", "whole number"]),
    ("hybrid-unknown-base", GOOD + "  - {name: h, kind: hybrid, base: nope, burst: cloud}\n", TRACE, ["s.yaml", "base 'nope'"]),
    ("hybrid-burst-owned", GOOD + "  - {name: h, kind: hybrid, base: own, burst: own}\n", TRACE, ["burst 'own' must be a cloud option"]),
    ("duplicate-option", GOOD.replace("name: cloud", "name: own"), TRACE, ["s.yaml", "used twice"]),
    ("warmup-too-long", GOOD.replace("horizon_days: 10", "horizon_days: 10\nwarmup_days: 10"), TRACE, ["s.yaml", "warmup_days"]),
    ("bad-economics", GOOD + "economics: {pue: 0.5}\n", TRACE, ["s.yaml:13:13", "economics.pue"]),
    ("typo-economics", GOOD + "economics: {electricty_usd_per_kwh: 0.1}\n", TRACE, ["s.yaml:13", "economics.electricty_usd_per_kwh"]),
    ("no-trace-file", GOOD.replace("jobs.csv", "missing.csv"), None, ["s.yaml:4:3", "workload.trace", "not found"]),
    ("trace-missing-column", GOOD, "submit_h,gpus\n0,8\n", ["jobs.csv:1", "missing column", "duration_h"]),
    ("trace-unknown-column", GOOD, "submit_h,gpus,duration_h,colour\n0,8,1,red\n", ["jobs.csv:1", "colour"]),
    ("trace-not-number", GOOD, "submit_h,gpus,duration_h\n0,8,1\n1,eight,2\n", ["jobs.csv:3", "gpus", "'eight'"]),
    ("trace-fractional-gpus", GOOD, "submit_h,gpus,duration_h\n0,2.5,1\n", ["jobs.csv:2", "gpus", "whole number"]),
    ("trace-negative-duration", GOOD, "submit_h,gpus,duration_h\n0,8,1\n1,8,-2\n", ["jobs.csv:3", "duration_h", ">= 1e-09 h"]),
    ("trace-empty", GOOD, "submit_h,gpus,duration_h\n", ["jobs.csv", "no jobs"]),
    ("trace-duplicate-id", GOOD, "submit_h,gpus,duration_h,job_id\n0,8,1,a\n1,8,1,a\n", ["jobs.csv:3", "job_id", "more than once"]),
    ("job-too-big-owned", GOOD, "submit_h,gpus,duration_h\n0,8,1\n1,24,2\n", ["s.yaml:9:5", "options.0.gpus", "never run", "trace-1"]),
    ("rl-async-colocated", RL.replace("model_params_b: 7", "model_params_b: 7\n      mode: async"), None,
     ["s.yaml:5:7", "workload.classes.0", "placement: disaggregated"]),
    ("rl-staleness-sync", RL.replace("model_params_b: 7", "model_params_b: 7\n      max_staleness: 2"), None,
     ["workload.classes.0", "max_staleness applies to mode: async"]),
    ("rl-fraction-colocated", RL.replace("model_params_b: 7", "model_params_b: 7\n      rollout_gpu_fraction: 0.25"), None,
     ["workload.classes.0", "rollout_gpu_fraction applies"]),
    ("rl-reward-model-size", RL.replace("model_params_b: 7", "model_params_b: 7\n      scoring: {reward: model}"), None,
     ["s.yaml:10:7", "workload.classes.0.scoring", "reward_model_params_b"]),
    ("rl-one-gpu-split", RL.replace("gpus: 16", "gpus: 1").replace("model_params_b: 7", "model_params_b: 7\n      placement: disaggregated"),
     None, ["workload.classes.0", "both need at least 1"]),
    ("rl-bad-length", RL.replace("model_params_b: 7", "model_params_b: 7\n      rollout: {response_tokens: {mean: 0}}"), None,
     ["workload.classes.0.rollout.response_tokens"]),
    ("rl-iterations-typo", RL.replace("{mean: 100, cv: 0.5}", "{mean: 100, cv: 0.5, sd: 3}"), None,
     ["s.yaml:8:40", "workload.classes.0.iterations.sd", "unknown field"]),
    ("rl-class-too-big", RL.replace("gpus: 16", "gpus: 64"), None, ["s.yaml:11:46", "options.0.gpus", "class 'grpo'", "never run"]),
    ("rl-duplicate-class", RL.replace("options:", "    - {name: grpo, arrivals_per_day: 1, gpus: 8, iterations: 5, model_params_b: 1}\noptions:"),
     None, ["workload", "grpo", "used twice"]),
    ("no-jobs", RL.replace("workload:\n  classes:", "workload:\n  arrival_scale: 1\n  other:"), None, ["s.yaml", "workload"]),
    ("job-too-big-quota", GOOD + "    max_gpus: 8\n", "submit_h,gpus,duration_h\n0,8,1\n1,16,2\n",
     ["s.yaml:13:5", "options.1.max_gpus", "never run"]),
    # Tranches of an owned cluster and its resale curve.
    ("tranches-unordered", GOOD.replace("gpus: 16", "tranches: [{gpus: 8, order_day: 5}, {gpus: 8, order_day: 2}]"),
     TRACE, ["s.yaml:9:5", "options.0.tranches", "tranche 1 is ordered on day 2, not after tranche 0 (day 5)"]),
    ("tranches-same-day", GOOD.replace("gpus: 16", "tranches: [{gpus: 8, order_day: 3}, {gpus: 8, order_day: 3}]"),
     TRACE, ["options.0.tranches", "order days must ascend"]),
    ("tranche-after-horizon", GOOD.replace("gpus: 16", "tranches: [{gpus: 8}, {gpus: 8, order_day: 10}]"),
     TRACE, ["s.yaml:9:", "options.0.tranches.1.order_day", "not before the horizon's end (day 10)"]),
    ("tranche-zero-gpus", GOOD.replace("gpus: 16", "tranches: [{gpus: 16}, {gpus: 0, order_day: 1}]"),
     TRACE, ["options.0.tranches.1.gpus", "greater than or equal to 1"]),
    ("tranche-partial-node", GOOD.replace("gpus: 16", "tranches: [{gpus: 16}, {gpus: 4, order_day: 1}]"),
     TRACE, ["s.yaml:9:", "options.0.tranches.1.gpus", "not a whole number of 8-GPU H100 nodes"]),
    ("tranches-total-mismatch", GOOD.replace("gpus: 16", "gpus: 16\n    tranches: [{gpus: 8}]"),
     TRACE, ["options.0", "gpus (16) is not the tranches' total (8)"]),
    ("lease-past-life", GOOD.replace("gpus: 16", "tranches: [{gpus: 16, payment: lease, lease_term_months: 72}]")
     + "economics: {depreciation_years: 5}\n", TRACE,
     ["options.0.tranches.0.lease_term_months", "a 72-month lease is longer than the 5-year depreciation life (60 months)"]),
    ("lease-without-term", GOOD.replace("gpus: 16", "tranches: [{gpus: 16, payment: lease}]"), TRACE,
     ["options.0.tranches.0", "payment: lease needs lease_term_months"]),
    ("resale-increasing", GOOD.replace("gpus: 16", "gpus: 16\n    resale_curve: [{age_years: 1, value_frac: 0.5}, "
                                       "{age_years: 2, value_frac: 0.6}]"), TRACE,
     ["s.yaml:10:5", "options.0.resale_curve", "point 1 is worth more (0.6) than point 0 (0.5)"]),
    ("resale-ages-unordered", GOOD.replace("gpus: 16", "gpus: 16\n    resale_curve: [{age_years: 3, value_frac: 0.5}, "
                                           "{age_years: 2, value_frac: 0.4}]"), TRACE,
     ["options.0.resale_curve", "ages must ascend"]),
]


@pytest.mark.parametrize("case, text, trace, expect", CORPUS, ids=[c[0] for c in CORPUS])
def test_bad_input_is_one_clear_message(tmp_path, monkeypatch, case, text, trace, expect):
    (tmp_path / "s.yaml").write_text(text)
    if trace is not None:
        (tmp_path / "jobs.csv").write_text(trace)
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.csv").write_text("precious")
    monkeypatch.chdir(tmp_path)
    for command in (["validate", "s.yaml"], ["run", "s.yaml", "--out", "out"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, (case, result.output)
        assert "Traceback" not in result.output
        for needle in expect:
            assert needle in result.output, (case, needle, result.output)
    assert (out / "summary.csv").read_text() == "precious" and len(list(out.iterdir())) == 1


def test_corpus_is_big_enough():
    assert len(CORPUS) >= 15


def test_bad_flags_exit_2(tmp_path, monkeypatch):
    (tmp_path / "s.yaml").write_text(GOOD)
    (tmp_path / "jobs.csv").write_text(TRACE)
    (tmp_path / "afile").write_text("keep me")
    monkeypatch.chdir(tmp_path)
    for args in (["run", "s.yaml", "--seed", "-1"], ["run", "s.yaml", "--bogus"], ["run"], ["run", "s.yaml", "--out", "afile"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
    assert (tmp_path / "afile").read_text() == "keep me"


@pytest.mark.slow
def test_real_console_script_has_no_traceback(tmp_path):
    (tmp_path / "s.yaml").write_text(GOOD.replace("gpus: 16", "gpus: -16"))
    proc = subprocess.run([sys.executable, "-m", "costsim.cli", "run", "s.yaml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "options.0.gpus" in proc.stderr
    assert proc.stdout == ""
