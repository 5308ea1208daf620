"""``costsim validate`` reports every problem it can find in one pass (costsim.runs.diagnose):
schema, catalog, trace and fit problems together, each once, with file, field and line; exit 2."""

from __future__ import annotations

import pytest
from helpers import TINY_RL, invoke_cli

from costsim.runs.diagnose import diagnose

# Four mistakes, one per stage: a scheduler the schema does not know (line 10), 100 GPUs that are
# no whole number of the catalog's 8-GPU H100 nodes (line 9), a trace file that is not there
# (line 4) and a 512-GPU class that can never run on the 64-GPU cluster (line 8; the cloud option
# is unlimited, so that is the only option it misses).
FOUR = """\
name: four
horizon_days: 30
workload:
  trace: missing.csv
  classes:
    - {name: big, arrivals_per_day: 1, gpus: 512, iterations: 10, model_params_b: 7}
options:
  - {name: own-64, kind: owned, gpu_type: H100, gpus: 64, lead_time_days: 0}
  - {name: own-100, kind: owned, gpu_type: H100, gpus: 100}
  - {name: bad, kind: owned, gpu_type: H100, gpus: 64, scheduler: fastest}
  - {name: cloud, kind: cloud, gpu_type: H100}
"""


def errors(output: str) -> list[str]:
    return [line.removeprefix("error: ") for line in output.splitlines() if line.startswith("error: ")]


def test_four_mistakes_in_four_stages_in_one_run(tmp_path):
    path = tmp_path / "four.yaml"
    path.write_text(FOUR)
    result = invoke_cli("validate", path, columns="300")
    assert result.exit_code == 2
    found = errors(result.output)
    expected = [
        f"{path}:10:56: options.2.scheduler: Input should be 'fifo', 'backfill', 'priority', 'sjf' or 'lifo'",
        f"{path}:9:50: options.1.gpus: 100 GPUs is not a whole number of 8-GPU H100 nodes",
        f"{path}:4:3: workload.trace: trace file not found: {tmp_path / 'missing.csv'}",
        f"{path}:8:49: options.0.gpus: class 'big' needs 512 GPUs per job but option 'own-64' has 64 GPUs: "
        "its jobs could never run",
    ]
    assert found == expected
    assert "ok:" not in result.output


def test_a_schema_error_outside_the_options_still_lets_the_trace_and_catalog_be_checked(tmp_path):
    path = tmp_path / "top.yaml"
    path.write_text("name: top\nhorizon_days: -3\nworkload:\n  trace: gone.csv\noptions:\n"
                    "  - {name: own-100, kind: owned, gpu_type: H100, gpus: 100}\n"
                    "  - {name: r, kind: cloud, gpu_type: H100, pricing: reserved, reserved_gpus: 12}\n"
                    "  - {name: x, kind: owned, gpu_type: Z100, gpus: 8}\n")
    lines = diagnose(path).lines
    assert [line.split(": ")[1] for line in lines] == ["horizon_days", "options.2.gpu_type", "workload.trace",
                                                       "options.0.gpus", "options.1.reserved_gpus"]
    assert lines[-1] == f"{path}:7:63: options.1.reserved_gpus: 12 GPUs is not a whole number of 8-GPU instances"


def test_a_hybrid_on_a_refused_option_is_left_out_of_the_fit_checks_and_each_problem_shows_once(tmp_path):
    path = tmp_path / "h.yaml"
    path.write_text(TINY_RL.replace("  - {name: cloud, kind: cloud, gpu_type: H100}\n",
                                    "  - {name: cloud, kind: cloud, gpu_type: H100}\n"
                                    "  - {name: small, kind: owned, gpu_type: H100, gpus: 4, gpus_per_node: 4, capex: 1}\n"
                                    "  - {name: burst, kind: hybrid, base: small, burst: cloud}\n"
                                    "  - {name: tiny, kind: owned, gpu_type: H100, gpus: 4, gpus_per_node: 4}\n"))
    lines = diagnose(path).lines
    assert len(lines) == len(set(lines)) == 2
    assert lines[0].endswith("options.2.capex: unknown field (check the spelling; `costsim schema` lists the fields)")
    assert "options.4.gpus: class 'grpo' needs 8 GPUs per job but option 'tiny' has 4 GPUs" in lines[1]


@pytest.mark.parametrize("text,message", [("- 1\n", "a scenario must be a YAML mapping of fields"),
                                          ("a: [\n", "YAML syntax error")])
def test_unreadable_files_are_one_problem(tmp_path, text, message):
    path = tmp_path / "x.yaml"
    path.write_text(text)
    result = invoke_cli("validate", path)
    assert result.exit_code == 2 and len(errors(result.output)) == 1 and message in result.output


def test_a_sound_scenario_is_still_ok(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(TINY_RL)
    result = invoke_cli("validate", path)
    assert result.exit_code == 0 and "ok:" in result.output and "error" not in result.output
    assert diagnose(path).scenario is not None and diagnose(path).lines == ()


def test_a_refused_option_still_meets_the_catalog_with_its_other_values(tmp_path):
    # One option, two mistakes: a scheduler the schema does not know and 100 GPUs, no whole number
    # of 8-GPU nodes. The schema refuses the option; with the scheduler left out it still
    # validates, so the catalog's problem with its size is found in the same pass.
    path = tmp_path / "one.yaml"
    path.write_text(TINY_RL.replace("{name: own, kind: owned, gpu_type: H100, gpus: 16, lead_time_days: 0}",
                                    "{name: own, kind: owned, gpu_type: H100, gpus: 100, scheduler: fancy}"))
    result = invoke_cli("validate", path, columns="300")
    assert result.exit_code == 2
    found = errors(result.output)
    assert len(found) == 2, found
    assert any("options.0.scheduler" in line for line in found)
    assert any("options.0.gpus: 100 GPUs is not a whole number of 8-GPU H100 nodes" in line for line in found)


def test_a_trace_job_asking_for_a_type_an_option_lacks_is_reported_beside_a_schema_error(tmp_path):
    # The trace's row 2 asks for A100s, which the H100 option cannot give; the scheduler is a schema
    # error of the same file: both in one pass.
    (tmp_path / "t.csv").write_text("submit_h,gpus,duration_h,gpu_type\n0,8,1,H100\n1,8,1,A100\n")
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nhorizon_days: 5\nworkload: {trace: t.csv}\noptions:\n"
                    "  - {name: own, kind: owned, gpu_type: H100, gpus: 16, lead_time_days: 0}\n"
                    "  - {name: bad, kind: owned, gpu_type: H100, gpus: 16, scheduler: fastest}\n")
    found = errors(invoke_cli("validate", path, columns="300").output)
    assert found[-1] == (f"{tmp_path / 't.csv'}:3: gpu_type: job 'trace-1' asks for A100 GPUs but option 'own' has "
                         "H100 GPUs: trace jobs run only on the GPU type they ask for (leave the cell empty for any)")
    assert len(found) == 2 and "options.1.scheduler" in found[0]
