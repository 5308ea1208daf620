"""The optimiser (costsim.decisions.optimize, ``costsim optimize``): it finds the hand-computable
smallest M/M/c size meeting an Erlang-C target, says so when nothing meets, refuses bad --vary,
--target and --max-runs, and the command prints and writes its answer."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import typer
from helpers import LAM, MU, cloud, erlang_c, mmc_scenario, owned, scenario
from typer.testing import CliRunner

from costsim.cli.optimize import optimize_command
from costsim.decisions.optimize import _monotone, unsure
from costsim.decisions.space import parse_space, parse_vary
from costsim.decisions.targets import parse_target
from costsim.present.optimize import optimize, unsure_note
from costsim.scenario import ScenarioError, dump_scenario
from costsim.workload.synth import JobGroup, make_trace


@pytest.fixture(scope="module")
def mmc(tmp_path_factory) -> str:
    """200 days: about 38,000 jobs, so an M/M/c p95 delay is estimated to a few percent."""
    return mmc_scenario(tmp_path_factory.mktemp("mmc"), 200.0)


def p95_wait_h(c: int, a: float = LAM / MU) -> float:
    """The 95th percentile of the M/M/c wait: P(Wq > x) = C(c, a)·exp(−(cμ − λ)x) = 0.05 (0 when
    C(c, a) ≤ 0.05: 95 % of jobs do not wait)."""
    return max(0.0, math.log(erlang_c(c, a) / 0.05) / (c * MU - LAM))


def smallest(ok) -> int:
    return next(c for c in range(int(LAM / MU) + 1, 100) if ok(c))


@pytest.mark.slow
def test_the_smallest_mmc_size_meeting_an_erlang_c_p95_target(mmc):
    # By hand: p95 wait c=10: ln(0.4092/0.05)/2 = 1.051 h; c=11: ln(0.2450/0.05)/3 = 0.530 h.
    # Target 0.75 h: the answer is 11, with a margin of 0.30 h (29 %) below c=10's p95 and 0.22 h
    # (42 %) above c=11's. Over 8 trace seeds of this length the simulated p95 ranged 0.97–1.11 h
    # (c=10) and 0.52–0.59 h (c=11): the margin is several times the noise.
    target = 0.75
    assert p95_wait_h(10) == pytest.approx(1.0511, abs=1e-3) and p95_wait_h(11) == pytest.approx(0.5297, abs=1e-3)
    c_star = smallest(lambda c: p95_wait_h(c) <= target)
    assert c_star == 11
    seen = []
    best = optimize(mmc, [f"p95_delay_h<={target}"], ["options.own.gpus=8..16"], replications=1, executor="local",
                    progress=lambda done, total: seen.append((done, total)))
    assert best.meets and best.values == {"options.own.gpus": c_star} and best.option == "own"
    ev = best.evaluated.set_index("options.own.gpus")
    # The grid (8, 10, 12, 14, 16) brackets the answer between 10 (misses) and 12 (meets); the
    # bisection tried 11, which is not on the grid.
    assert list(ev.index) == [8, 10, 12, 14, 16, 11]
    assert ev.loc[11, "stage"] == "bisection" and not ev.loc[10, "meets"]
    assert best.runs == 6 and seen[-1] == (6, 6)
    assert best.metrics["queue_delay_p95_h"] == pytest.approx(p95_wait_h(11), rel=0.15)
    assert best.sentence.startswith(f"Cheapest meeting p95_delay_h<={target}: options.own.gpus=11 at $")
    # The frontier: more GPUs cost more and never wait longer.
    on = best.frontier[best.frontier["on_frontier"]]
    assert on["fair_total_usd"].is_monotonic_increasing and on["queue_delay_p95_h"].is_monotonic_decreasing


@pytest.mark.slow
def test_the_smallest_mmc_size_meeting_a_mean_wait_target(mmc):
    # Mean wait Wq = C(c, a) / (cμ − λ): c=11: 0.2450/3 = 0.0817 h; c=12: 0.1398/4 = 0.0350 h.
    # Target 0.055 h: 12, with margins of 0.027 h (33 %) and 0.020 h (36 %); simulated over 6
    # trace seeds: 0.083–0.091 h (c=11) and 0.036–0.041 h (c=12). Here the bisection's probe (11)
    # misses, so the answer is the grid point 12.
    c_star = smallest(lambda c: erlang_c(c, LAM / MU) / (c * MU - LAM) <= 0.055)
    assert c_star == 12
    best = optimize(mmc, ["mean_delay_h<=0.055"], ["options.own.gpus=8..16"], replications=1, executor="local")
    assert best.values == {"options.own.gpus": c_star}
    ev = best.evaluated.set_index("options.own.gpus")
    assert not ev.loc[11, "meets"] and ev.loc[11, "stage"] == "bisection"


def test_nothing_meets_names_the_closest_and_what_it_misses(tmp_path):
    path = mmc_scenario(tmp_path, 20.0)
    best = optimize(path, ["p95_delay_h<=0.01", "completion>=0.5"], ["options.own.gpus=9..11"], replications=1,
                    executor="local")
    assert not best.meets and best.values == {"options.own.gpus": 11}  # the least delay of those tried
    assert best.sentence.startswith("Nothing tried meets p95_delay_h<=0.01 and completion>=0.5: the closest is "
                                    "options.own.gpus=11")
    assert "misses p95 queue delay ≤ 0.01 h (p95 queue delay" in best.sentence and "completion ≥ 50 %" not in best.sentence
    assert "options.own.gpus=11 is the highest value tried" in best.notes[0]


def test_the_grid_is_thinned_to_the_run_budget_and_the_bisection_stops_at_it(tmp_path):
    path = mmc_scenario(tmp_path, 20.0)
    # 2 replications, 10 runs: 5 grid points fit (10 runs) and no bisection step does.
    best = optimize(path, ["p95_delay_h<=0.75"], ["options.own.gpus=8..16"], replications=2, max_runs=10,
                    executor="local")
    assert best.runs == 10 and list(best.evaluated["options.own.gpus"]) == [8, 10, 12, 14, 16]
    assert best.values == {"options.own.gpus": 12} and any("max_runs=10" in n for n in best.notes)
    low, high = best.intervals["fair_total_usd"]
    assert low <= best.metrics["fair_total_usd"] <= high
    with pytest.raises(ScenarioError, match="--max-runs"):
        optimize(path, [], ["options.own.gpus=8..16"], replications=2, max_runs=3, executor="local")


def test_the_edge_of_the_range_is_reported(tmp_path):
    path = mmc_scenario(tmp_path, 20.0)
    best = optimize(path, ["p95_delay_h<=24"], ["options.own.gpus=10..14"], replications=1, executor="local")
    assert best.values == {"options.own.gpus": 10}
    assert best.notes == ("options.own.gpus=10 is the lowest value tried: the answer may lie beyond the range",)


@pytest.mark.slow
def test_two_fields_the_answer_is_the_cheapest_that_meets_and_options_appear_once_per_setting(tmp_path):
    # M/M/c arrivals on an owned base that bursts to on-demand after max_wait_h: vary both.
    trace = make_trace([JobGroup("mm", per_day=LAM * 24, gpus=1, mean_h=1 / MU, law="exponential")], 10.0, seed=2)
    sc = scenario(tmp_path, trace[["submit_h", "gpus", "duration_h"]].itertuples(index=False),
                  [owned(gpus=8, gpus_per_node=1), cloud(price_per_gpu_hour=6.0),
                   {"name": "hyb", "kind": "hybrid", "base": "own", "burst": "cloud", "max_wait_h": 1.0}],
                  horizon_days=10.5, economics={"setup_usd": 0})  # no groundwork: owning can win
    (tmp_path / "h.yaml").write_text(dump_scenario(sc))
    best = optimize(tmp_path / "h.yaml", ["p95_delay_h<=0.75"],
                    ["options.own.gpus=8..16", "options.hyb.max_wait_h=0..2"], replications=1, executor="local")
    ev = best.evaluated
    ok = ev[ev["meets"]]
    row = ok.loc[ok["fair_total_usd"].idxmin()]
    assert best.meets and best.option == row["option"] and best.metrics["fair_total_usd"] == row["fair_total_usd"]
    assert best.values == {p: row[p] for p in ("options.own.gpus", "options.hyb.max_wait_h")}
    # Every option of the scenario is a candidate; the cloud, which no varied field touches, once
    # per setting of the fields it uses (none): once.
    assert set(ev["option"]) == {"own", "cloud", "hyb"} and (ev["stage"] == "bisection").any()
    assert (best.frontier["option"] == "cloud").sum() <= 1
    assert ("max_wait_h" in best.sentence) == (best.option == "hyb")  # the sentence names what the option uses
    # The owned option does not use the hybrid's wait: the same runs 5 times on the grid, once on the frontier.
    own = best.frontier[best.frontier["option"] == "own"]
    assert not own["options.own.gpus"].duplicated().any()
    assert (ev[ev["option"] == "own"].groupby("options.own.gpus")["fair_total_usd"].nunique() == 1).all()


def test_an_on_demand_price_is_used_by_every_option_its_unfinished_work_is_priced_at(tmp_path):
    """The fair total prices an option's unfinished work at the cheapest on-demand or spot price,
    so a varied on-demand price changes the owned option's fair total: it is a field the owned
    option uses (and a reserved one's price is not: it prices nothing of another option's)."""
    from costsim.decisions.optimize import option_uses
    from costsim.decisions.space import parse_space

    reserved = {"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": 8,
                "gpus_per_instance": 8}
    # One 8-GPU job of 100 h on one node over 2 days: 52 h of it unfinished at the horizon on own.
    sc = scenario(tmp_path, [(0.0, 8, 100.0)], [owned(gpus=8, gpus_per_node=8, lead_time_days=0, failures=None),
                                               cloud(price_per_gpu_hour=3.0), reserved], horizon_days=2)
    dims = parse_space(["options.cloud.price_per_gpu_hour=2,3", "options.res.price_per_gpu_hour=1,2",
                        "options.own.gpus=8,16"], sc.model_dump(mode="json"))
    uses = option_uses(sc, dims, ["own", "cloud", "res"])
    assert uses == {"own": [0, 2], "cloud": [0], "res": [0, 1]}
    (tmp_path / "u.yaml").write_text(dump_scenario(sc))
    best = optimize(tmp_path / "u.yaml", [], ["options.cloud.price_per_gpu_hour=2,3"], replications=1,
                    executor="local")
    own = best.evaluated[best.evaluated["option"] == "own"].set_index("options.cloud.price_per_gpu_hour")
    # 8 GPUs × (100 − 48) h unfinished = 416 GPU-hours at $2 or $3: the two fair totals differ by $416.
    assert own.loc[3.0, "fair_total_usd"] - own.loc[2.0, "fair_total_usd"] == pytest.approx(416.0, rel=1e-9)
    assert (best.frontier["option"] == "own").sum() <= 2


# ------------------------------------------------------------------ what may be varied


def _data(tmp_path):
    sc = scenario(tmp_path, [(0.0, 2, 1.0)], [owned(gpus=64), owned(name="one", gpus=4, gpus_per_node=2),
                                              cloud(), {"name": "hyb", "kind": "hybrid", "base": "own",
                                                        "burst": "cloud"}])
    return sc.model_dump(mode="json")


def test_gpu_ranges_step_by_whole_nodes(tmp_path):
    data = _data(tmp_path)
    d = parse_vary("options.own.gpus=250..1024", data)  # H100 nodes of 8 (the catalog's): 256, 264, … 1024
    assert (d.kind, d.value(0), d.value(1), d.value(d.count - 1), d.count) == ("int", 256, 264, 1024, 97)
    assert [d.value(k) for k in d.grid(5)] == [256, 448, 640, 832, 1024]
    d = parse_vary("options.one.gpus=3..9", data)  # the option's own 2 GPUs per node
    assert [d.value(k) for k in range(d.count)] == [4, 6, 8]
    d = parse_vary("options.hyb.max_wait_h=0..8", data)
    assert d.count == 65 and [d.value(k) for k in d.grid(5)] == [0.0, 2.0, 4.0, 6.0, 8.0] and d.option == "hyb"
    d = parse_vary("options.own.scheduler=backfill,fifo,backfill", data)
    assert d.items == ("backfill", "fifo")
    assert parse_vary("economics.electricity_usd_per_kwh=0.12,0.06", data).items == (0.06, 0.12)


def test_a_tranches_gpus_step_by_its_options_nodes_and_its_order_day_is_a_real_range(tmp_path):
    data = _data(tmp_path)
    own = next(o for o in data["options"] if o["name"] == "own")
    own["tranches"] = [{"gpus": 256, "order_day": 0}, {"gpus": 128, "order_day": 30}]
    d = parse_vary("options.own.tranches.1.gpus=60..130", data)  # 8-GPU H100 nodes: 64 … 128
    assert (d.kind, d.value(0), d.value(1), d.value(d.count - 1), d.option) == ("int", 64, 72, 128, "own")
    d = parse_vary("options.own.tranches.1.order_day=0..180", data)
    assert d.kind == "float" and d.value(d.count - 1) == 180.0


@pytest.mark.parametrize("text, message", [
    ("options.own.gpu=8..16", "no field 'gpu'"),
    ("options.nope.gpus=8..16", "no option named 'nope'"),
    ("options.own.gpus=16..8", "runs backwards"),
    ("options.own.gpus=a..16", "'a' is not a number"),
    ("options.own.gpus=8.5..16", "not a whole number"),
    ("options.own.gpus=1..7", "no whole number of 8-GPU nodes of own"),
    ("options.own.scheduler=1..3", "not a number field"),
    ("options.own.gpus", "expected PATH=LOW..HIGH"),
    ("seed=1..3", "not a design choice"),
])
def test_bad_vary_is_refused_naming_the_flag_and_path(tmp_path, text, message):
    with pytest.raises(ScenarioError, match=message) as err:
        parse_vary(text, _data(tmp_path))
    assert err.value.source == "--vary"


def test_a_field_varied_twice_is_refused(tmp_path):
    with pytest.raises(ScenarioError, match="given twice"):
        parse_space(["options.own.gpus=8..16", "options.0.gpus=8,16"], _data(tmp_path))


def test_values_the_scenario_refuses_and_bad_targets_name_their_flag(tmp_path):
    path = mmc_scenario(tmp_path, 2.0)
    with pytest.raises(ScenarioError) as err:
        optimize(path, [], ["options.own.lead_time_days=-5..0"], replications=1, executor="local")
    assert err.value.source == "--vary"
    with pytest.raises(ScenarioError, match="unknown metric 'p95'") as err:
        optimize(path, ["p95<=4"], ["options.own.gpus=8..9"], executor="local")
    assert err.value.source == "--target"


def test_monotone_means_every_grid_line_changes_once_the_same_way():
    up = {(0, 0): False, (1, 0): True, (2, 0): True, (0, 1): False, (1, 1): False, (2, 1): True}
    assert _monotone(up, 0) == "up"
    assert _monotone(up, 1) == "down"  # raising dimension 1 only ever turns a pass into a miss
    assert _monotone({(0,): True, (1,): False, (2,): True}, 0) is None  # changes twice
    assert _monotone({(0, 0): False, (1, 0): True, (0, 1): True, (1, 1): False}, 0) is None  # lines disagree
    assert _monotone({(0,): True, (1,): True}, 0) is None  # nothing to bisect


def test_a_target_met_on_the_mean_but_not_surely_is_noted():
    wanted = (parse_target("p95_delay_h<=4"), parse_target("completion>=0.99"))
    intervals = {"queue_delay_p95_h": (0.5, 13.2), "completion": (0.995, 0.999)}
    assert unsure(wanted, intervals) == wanted[:1]
    assert unsure_note(wanted[0], intervals["queue_delay_p95_h"]) == (
        "the 95 % interval of p95 queue delay (0.5 to 13.2) spans the target p95_delay_h<=4: more replications "
        "would say whether it is met")
    assert unsure(wanted, {"queue_delay_p95_h": (math.nan, math.nan), "completion": (0.98, 0.995)}) == wanted[1:]
    assert unsure_note(wanted[1], (0.98, 0.995)).startswith("the 95 % interval of completion")


# ------------------------------------------------------------------ the command


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command("optimize")(optimize_command)
    app.command("other")(lambda: None)  # two commands: typer then takes the command name
    return app


def test_the_command_prints_the_answer_and_writes_its_tables(tmp_path):
    path = mmc_scenario(tmp_path, 20.0)
    out = tmp_path / "found"
    result = CliRunner().invoke(_app(), ["optimize", path, "--target", "p95_delay_h<=0.75", "--vary",
                                         "options.own.gpus=8..16", "--replications", "1", "--executor", "local",
                                         "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Cheapest meeting p95_delay_h<=0.75: options.own.gpus=" in result.output
    assert "Pareto frontier" in result.output
    evaluated = pd.read_csv(out / "evaluated.csv")
    assert set(evaluated["options.own.gpus"]) >= {8, 10, 12, 14, 16} and "meets" in evaluated
    assert pd.read_csv(out / "frontier.csv")["on_frontier"].any()


@pytest.mark.parametrize("args, flag", [
    (["--vary", "options.own.gpus=16..8"], "--vary"),
    (["--vary", "options.own.gpus=8..9", "--target", "p95_delay_h<4"], "--target"),
    (["--vary", "options.own.gpus=8..9", "--executor", "threads"], "--executor"),
    (["--vary", "options.own.gpus=8..9", "--address", "127.0.0.1:9"], "--address"),
    ([], "--vary"),
])
def test_bad_input_exits_2_naming_the_flag_and_writes_nothing(tmp_path, args, flag):
    path = mmc_scenario(tmp_path, 2.0)
    out = tmp_path / "found"
    result = CliRunner().invoke(_app(), ["optimize", path, "--executor", "local", *args, "--out", str(out)]
                                if "--executor" not in args else ["optimize", path, *args, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert flag in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_another_option_that_already_meets_the_targets_for_less_is_the_answer(tmp_path):
    # The owned M/M/c cluster needs 11 GPUs for p95 ≤ 0.75 h; an on-demand option at $0.50 per
    # GPU-hour (no provisioning delay: no wait) meets it for about 8 GPU-h/h × 240 h × $0.50 =
    # $960 over 10 days, far below any owned size: the search names it, not an owned size.
    trace = make_trace([JobGroup("mm", per_day=LAM * 24, gpus=1, mean_h=1 / MU, law="exponential")], 10.0, seed=3)
    sc = scenario(tmp_path, trace[["submit_h", "gpus", "duration_h"]].itertuples(index=False),
                  [owned(gpus=8, gpus_per_node=1, scheduler="fifo"), cloud(price_per_gpu_hour=0.5)], horizon_days=10.5)
    (tmp_path / "c.yaml").write_text(dump_scenario(sc))
    best = optimize(tmp_path / "c.yaml", ["p95_delay_h<=0.75"], ["options.own.gpus=8..16"], replications=1,
                    executor="local")
    assert best.meets and best.option == "cloud"
    ev = best.evaluated
    cheapest_own = ev[(ev["option"] == "own") & ev["meets"]]["fair_total_usd"].min()
    assert best.metrics["fair_total_usd"] < cheapest_own
    assert best.sentence.startswith("Cheapest meeting p95_delay_h<=0.75: cloud (as the scenario has it")
