"""Sweep files: grids and Latin-hypercube samples expand to the right checked variants, bad files
are refused with file:line: path, --set quick grids, replication seeds (costsim.runs.sweepfile).
Expected variants are written out by hand here, not computed with the package's own expansion."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from paths import ROOT, SHIPPED

import costsim
from costsim.runs import api
from costsim.runs.sweepfile import (
    MAX_TASKS,
    Sweep,
    load_sweep,
    parse_set,
    replication_seed,
    set_path,
    sweep_from_sets,
    values_as_written,
)

REPO = ROOT

# A class name with a dot: paths find the longest name that matches.
BASE = """\
name: tiny
seed: 3
horizon_days: 5
workload:
  classes:
    - {name: small, arrivals_per_day: 2, gpus: 8, iterations: 10, model_params_b: 1}
    - {name: big.v2, arrivals_per_day: 0.5, gpus: 16, iterations: 5, model_params_b: 7}
options:
  - {name: own-a, kind: owned, gpu_type: H100, gpus: 16, lead_time_days: 0}
  - {name: cloud, kind: cloud, gpu_type: H100}
"""


@pytest.fixture
def base(tmp_path) -> Path:
    (tmp_path / "scenarios").mkdir()
    path = tmp_path / "scenarios" / "base.yaml"
    path.write_text(BASE)
    return path


def sweep_file(tmp_path: Path, body: str, name: str = "s.yaml") -> Path:
    """A sweep file in a folder beside the base (``base: ../scenarios/base.yaml``, as shipped)."""
    (tmp_path / "sweeps").mkdir(exist_ok=True)
    path = tmp_path / "sweeps" / name
    path.write_text("base: ../scenarios/base.yaml\n" + body)
    return path


def option(scenario, name):
    return scenario.option(name)


def cls(scenario, name):
    return next(c for c in scenario.workload.classes if c.name == name)


def test_grid_expands_to_the_product_of_checked_variants(tmp_path, base):
    path = sweep_file(tmp_path, "replications: 4\ngrid:\n  options.own-a.gpus: [16, 24, 32]\n"
                                "  workload.classes.big.v2.arrivals_per_day: [0.5, 2]\n")
    sweep = load_sweep(path)
    assert isinstance(sweep, Sweep)
    assert (sweep.source, sweep.replications, sweep.seed) == (str(path), 4, 3)  # seed: the base's
    assert sweep.base.resolve() == base.resolve()
    # The product in the file's key order, the last key fastest.
    expected = [(16, 0.5), (16, 2), (24, 0.5), (24, 2), (32, 0.5), (32, 2)]
    assert [v.id for v in sweep.variants] == ["v000", "v001", "v002", "v003", "v004", "v005"]
    assert [tuple(v.params.values()) for v in sweep.variants] == expected
    assert all(list(v.params) == ["options.own-a.gpus", "workload.classes.big.v2.arrivals_per_day"]
               for v in sweep.variants)
    base_sc = costsim.load_scenario(base)
    for v, (gpus, rate) in zip(sweep.variants, expected, strict=True):
        sc = v.scenario
        assert isinstance(sc, costsim.Scenario)
        assert option(sc, "own-a").gpus == gpus and cls(sc, "big.v2").arrivals_per_day == rate
        assert cls(sc, "small").arrivals_per_day == 2 and option(sc, "cloud") == option(base_sc, "cloud")
        assert sc.name == "tiny" and sc.base_dir == base_sc.base_dir  # results carry the variant id, not a new name
        api.check(sc, "again")  # checked: catalog, fit; does not raise
        # Nothing else changed: undoing the two edits gives the base back.
        data = sc.model_dump(mode="json")
        data["options"][0]["gpus"], data["workload"]["classes"][1]["arrivals_per_day"] = 16, 0.5
        assert data == base_sc.model_dump(mode="json")


def test_no_grid_is_one_variant_the_base(tmp_path, base):
    sweep = load_sweep(sweep_file(tmp_path, "seed: 11\n"))
    (v,) = sweep.variants
    assert (v.id, v.params, sweep.seed, sweep.replications) == ("v000", {}, 11, 1)
    assert v.scenario == costsim.load_scenario(base)


def test_paths_by_index_null_fields_and_mapping_values(tmp_path, base):
    sweep = load_sweep(sweep_file(tmp_path, (
        "grid:\n"
        "  options.0.lead_time_days: [30]\n"                      # an option by index
        "  options.own-a.gpus: [24]\n"                            # room for serving beside a 16-GPU job
        "  economics.pue: [1.5]\n"                                # null in the base: the catalog's
        "  serving.gpus.base: [4]\n"                              # serving is null: built from the path
        "  workload.classes.small.iterations: [{mean: 20, cv: 0.5}]\n"  # a whole mapping as a value
        "  options.cloud.price_per_gpu_hour: [1.25]\n")))
    (v,) = sweep.variants
    sc = v.scenario
    assert option(sc, "own-a").lead_time_days == 30 and option(sc, "own-a").gpus == 24 and sc.economics.pue == 1.5
    assert sc.serving is not None and sc.serving.gpus.base == 4
    assert cls(sc, "small").iterations.mean == 20 and cls(sc, "small").iterations.cv == 0.5
    assert option(sc, "cloud").price_per_gpu_hour == 1.25


def test_latin_hypercube_is_stratified_seeded_and_crossed_with_the_grid(tmp_path, base):
    n = 10
    body = ("seed: 5\ngrid:\n  options.own-a.gpus: [16, 24]\nsample:\n"
            f"  economics.electricity_usd_per_kwh: {{low: 0.06, high: 0.12, n: {n}}}\n"
            f"  workload.arrival_scale: {{low: 0.5, high: 2, n: {n}}}\n")
    sweep = load_sweep(sweep_file(tmp_path, body))
    assert len(sweep.variants) == 2 * n
    points = [(v.params["economics.electricity_usd_per_kwh"], v.params["workload.arrival_scale"]) for v in sweep.variants]
    assert points[:n] == points[n:]  # every grid point gets every sample point
    assert [v.params["options.own-a.gpus"] for v in sweep.variants] == [16] * n + [24] * n
    x = np.array(points[:n])
    for col, (lo, hi) in enumerate([(0.06, 0.12), (0.5, 2.0)]):
        assert ((x[:, col] >= lo) & (x[:, col] < hi)).all()
        strata = np.floor((x[:, col] - lo) / (hi - lo) * n).astype(int)
        assert sorted(strata) == list(range(n))  # the Latin property: one point in each of n strata
    assert len(set(x[:, 0])) == n and not np.array_equal(np.argsort(x[:, 0]), np.argsort(x[:, 1]))
    for v in sweep.variants:  # the drawn values are in the variants' scenarios
        assert v.scenario.economics.electricity_usd_per_kwh == v.params["economics.electricity_usd_per_kwh"]
        assert v.scenario.workload.arrival_scale == v.params["workload.arrival_scale"]
    again = load_sweep(sweep_file(tmp_path, body, "again.yaml"))
    assert [v.params for v in again.variants] == [v.params for v in sweep.variants]  # reproducible
    other = load_sweep(sweep_file(tmp_path, body.replace("seed: 5", "seed: 6"), "other.yaml"))
    assert [v.params for v in other.variants] != [v.params for v in sweep.variants]


def test_shipped_sweeps_expand(tmp_path):
    size = load_sweep(REPO / "scenarios/sweeps/cluster-size.yaml")
    assert (len(size.variants), size.replications, size.seed) == (6, 5, 0)
    # the middle option is named after its size in every variant (costsim.scenario.naming)
    middle = [v.scenario.options[1] for v in size.variants]
    assert [(o.name, o.gpus) for o in middle] == [("own-320", 320)] * 2 + [("own-384", 384)] * 2 + [("own-448", 448)] * 2
    assert [v.scenario.workload.arrival_scale for v in size.variants] == [1.0, 1.5] * 3
    prices = load_sweep(REPO / "scenarios/sweeps/prices.yaml")
    assert len(prices.variants) == 18
    assert prices.variants[-1].params == {"options.cloud-od.price_per_gpu_hour": 3.99,
                                          "economics.electricity_usd_per_kwh": 0.12, "economics.depreciation_years": 6}


BAD = [
    # (sweep body after the base line, line, path in the message, words in the message)
    ("grid:\n  options.own-a.gpus: [16]\n  workload.arrivals: [1]\n", 4, "grid.workload.arrivals", "no field 'arrivals'"),
    ("grid:\n  options.own-999.gpus: [16]\n", 3, "grid.options.own-999.gpus", "no option named 'own-999' (options: own-a, cloud)"),
    ("grid:\n  workload.classes.huge.gpus: [16]\n", 3, "grid.workload.classes.huge.gpus", "no class named 'huge'"),
    ("replications: 2\ngrid:\n  options.own-a.gpus: [16, -8]\n", 4, "grid.options.own-a.gpus",
     "variant v001 (options.own-a.gpus=-8): options.own-a.gpus: Input should be greater than or equal to 1"),
    ("grid:\n  options.own-a.gpus: [8]\n", 3, "grid.options.own-a.gpus", "class 'big.v2' needs 16 GPUs"),
    # A problem found at another field (the option's size) is put on the path that causes it.
    ("grid:\n  options.own-a.lead_time_days: [1]\n  serving.gpus.base: [4]\n", 4, "grid.serving.gpus.base",
     "variant v000 (options.own-a.lead_time_days=1, serving.gpus.base=4): options.own-a.gpus: class 'big.v2' needs 16"),
    ("grid:\n  options.own-a.gpus: []\n", 3, "grid.options.own-a.gpus", "empty list"),
    ("grid:\n  options.own-a.gpus: 16\n", 3, "grid.options.own-a.gpus", "must be a list of values"),
    ("grid:\n  options.own-a.gpus: {low: 8, high: 16, n: 2}\n", 3, "grid.options.own-a.gpus", "goes under sample"),
    ("grid: [1, 2]\n", 2, "grid", "must be a mapping"),
    ("seed: 1\ncolour: red\n", 3, "colour", "unknown field (a sweep file has: base, seed, replications, grid, sample)"),
    ("replications: 0\n", 2, "replications", "greater than or equal to 1"),
    ("sample:\n  economics.pue: {low: 1.5, high: 1.5, n: 4}\n", 3, "sample.economics.pue", "low (1.5) must be less than high (1.5)"),
    ("sample:\n  options.own-a.gpus: {low: 8, high: 64, n: 4}\n", 3, "sample.options.own-a.gpus", "under grid"),
    ("sample:\n  economics.pue: {low: 1, high: 2, n: 4}\n  workload.arrival_scale: {low: 1, high: 2, n: 5}\n", 4,
     "sample.workload.arrival_scale", "every entry has the same n"),
    ("grid:\n  options.own-a.gpus: [16]\n  options.0.gpus: [24]\n", 4, "grid.options.0.gpus", "sets the same field"),
    ("grid:\n  options.own-a.failures.repair_hours: [1]\n", 3, "grid.options.own-a.failures.repair_hours", "not a mapping"),
]


@pytest.mark.parametrize("body, line, path, words", BAD, ids=[b[2] + ":" + b[3][:20] for b in BAD])
def test_bad_sweep_files_name_the_file_line_and_path(tmp_path, base, body, line, path, words):
    sweep = sweep_file(tmp_path, body)
    with pytest.raises(costsim.ScenarioError) as err:
        load_sweep(sweep)
    text = str(err.value)
    assert f"{sweep}:{line}:" in text and f": {path}: " in text and words in text, text


def test_missing_base_and_too_many_runs(tmp_path, base):
    path = tmp_path / "lost.yaml"
    path.write_text("seed: 1\nbase: nowhere.yaml\n")
    with pytest.raises(costsim.ScenarioError, match=r"lost.yaml:2:1: base: scenario file not found: .*nowhere.yaml"):
        load_sweep(path)
    values = ", ".join(str(0.06 + i * 1e-5) for i in range(400))
    big = sweep_file(tmp_path, f"replications: 2\ngrid:\n  economics.electricity_usd_per_kwh: [{values}]\n"
                               f"  economics.pue: [{', '.join(str(1 + i / 1000) for i in range(200))}]\n")
    with pytest.raises(costsim.ScenarioError, match=rf"80,000 variants × 2 replications = 160,000 runs, more than the limit of {MAX_TASKS:,}"):
        load_sweep(big)  # refused before 80,000 variants are built


def test_errors_in_the_base_name_the_base_file(tmp_path, base):
    base.write_text(BASE.replace("gpus: 16, lead", "gpus: 0, lead"))
    with pytest.raises(costsim.ScenarioError, match=r"base.yaml:9:\d+: options.0.gpus: "):
        load_sweep(sweep_file(tmp_path, "grid:\n  options.own-a.gpus: [16]\n"))


def test_set_values_follow_yaml_scalar_rules():
    assert parse_set("options.own-256.gpus=256,384") == ("options.own-256.gpus", [256, 384])
    path, values = parse_set(" economics.pue = 1.2, 1e3,own-256,true,false,null,'1',{mean: 3, cv: 0.5}")
    assert path == "economics.pue"
    assert values == [1.2, 1000.0, "own-256", True, False, None, "1", {"mean": 3, "cv": 0.5}]
    assert [type(v) for v in values[:6]] == [float, float, str, bool, bool, type(None)]
    for bad in ("economics.pue", "economics.pue=", "economics.pue=[1"):
        with pytest.raises(costsim.ScenarioError, match=r"^--set: "):
            parse_set(bad)


# values as a user writes them after --set path=: plain scalars, quoted text with commas, brackets,
# braces and quotes, and mappings and lists of those
_SCALAR = st.one_of(st.integers(-10**6, 10**6).map(str), st.floats(0, 1e6, allow_nan=False).map(repr),
                    st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True),
                    st.text(alphabet="ab ,[]{}'x", max_size=8).map(lambda t: "'" + t.replace("'", "''") + "'"),
                    st.text(alphabet='ab ,[]{}"x', max_size=8).map(lambda t: '"' + t.replace('"', '\\"') + '"'))
_VALUE = st.one_of(_SCALAR, st.lists(_SCALAR, max_size=3).map(lambda v: "[" + ", ".join(v) + "]"),
                   st.lists(_SCALAR, min_size=1, max_size=3).map(
                       lambda v: "{" + ", ".join(f"k{i}: {x}" for i, x in enumerate(v)) + "}"),
                   _SCALAR.map(lambda x: f"key: {x}"))  # a one-pair mapping without braces


@settings(max_examples=300, deadline=None)
@given(st.lists(_VALUE, min_size=1, max_size=6), st.sampled_from([",", ", ", " ,"]))
def test_the_values_counted_before_reading_are_the_values_yaml_reads(values, comma):
    """The count that refuses a --set of more values than a sweep runs, before YAML reads them
    (half a second per thousand), is YAML's own count."""
    rhs = comma.join(values)
    assert len(values_as_written(rhs)) == len(parse_set(f"x={rhs}")[1]) == len(values)


def test_too_many_or_too_long_set_values_are_refused_before_yaml_reads_them(monkeypatch):
    import costsim.runs.sweepfile as sweepfile

    def unread(*_args, **_kw):
        raise AssertionError("YAML read a --set that was refused by its size")

    monkeypatch.setattr(sweepfile, "parse_yaml", unread)
    with pytest.raises(costsim.ScenarioError, match=f"{MAX_TASKS + 1:,} values: a sweep runs at most"):
        parse_set("options.own.gpus=" + ",".join(["8"] * (MAX_TASKS + 1)))
    with pytest.raises(costsim.ScenarioError, match=r"name: 'aaa.*… \(10,003 characters\): longer than"):
        parse_set("name=" + "a" * 10_001 + ",b")
    with pytest.raises(costsim.ScenarioError, match=r"\(20,003 characters\) as comma-separated YAML values \(a bracket"):
        parse_set("options.own.gpus=[" + "1," * 10_000)


def test_a_long_list_or_mapping_is_read_as_yaml_reads_it():
    """No text a field takes is 10,000 characters long, but a table of quantiles may be."""
    path, (values,) = parse_set("workload.job_classes.a.duration.quantiles_h=[" + ",".join(["1.5"] * 3000) + "]")
    assert values == [1.5] * 3000


def test_sweep_from_sets_is_a_quick_grid(base):
    sweep = sweep_from_sets(base, ["options.own-a.scheduler=fifo,backfill", "workload.classes.small.scoring.reference_model=true,false",
                                   "options.cloud.price_per_gpu_hour=2,2.5"], replications=3, seed=9)
    assert (sweep.source, sweep.base, sweep.replications, sweep.seed, len(sweep.variants)) == ("--set", base, 3, 9, 8)
    assert sweep.variants[7].params == {"options.own-a.scheduler": "backfill",
                                        "workload.classes.small.scoring.reference_model": False,
                                        "options.cloud.price_per_gpu_hour": 2.5}
    sc = sweep.variants[7].scenario
    assert option(sc, "own-a").scheduler == "backfill" and cls(sc, "small").scoring.reference_model is False
    assert sweep_from_sets(base, []).variants[0].params == {} and sweep_from_sets(base, []).seed == 3
    with pytest.raises(costsim.ScenarioError, match=r"^--set: options.own-9.gpus: no option named 'own-9'"):
        sweep_from_sets(base, ["options.own-9.gpus=8"])
    with pytest.raises(costsim.ScenarioError, match=r"^--set: options.own-a.gpus: variant v000 \(options.own-a.gpus=-8\)"):
        sweep_from_sets(base, ["options.own-a.gpus=-8"])
    with pytest.raises(costsim.ScenarioError, match=r"given twice"):
        sweep_from_sets(base, ["economics.pue=1.1", "economics.pue=1.2"])
    with pytest.raises(costsim.ScenarioError, match=r"^--replications: "):
        sweep_from_sets(base, [], replications=0)
    with pytest.raises(costsim.ScenarioError, match=r"^--seed: "):
        sweep_from_sets(base, [], seed=-1)


def test_set_path_edits_in_place_and_refuses_without_key_error(base):
    data = costsim.load_scenario(base).model_dump(mode="json")
    set_path(data, "workload.classes.big.v2.gpus", 8)
    set_path(data, "economics.electricity_usd_per_kwh", 0.2)
    assert data["workload"]["classes"][1]["gpus"] == 8 and data["economics"]["electricity_usd_per_kwh"] == 0.2
    for path in ("options.nope.gpus", "economics.power", "options.9.gpus", "", "a..b", "options.own-a.gpus.x"):
        with pytest.raises(costsim.ScenarioError):
            set_path(data, path, 1)


def test_replication_seeds_are_common_distinct_and_in_range(tmp_path, base):
    seeds = [replication_seed(3, r) for r in range(2000)]
    assert len(set(seeds)) == 2000 and all(0 <= s <= 2**63 - 1 for s in seeds)
    assert max(seeds) > 2**62  # the top of the range is used: a 63-bit value, not a small one
    assert [replication_seed(3, r) for r in range(5)] == seeds[:5]  # a pure function of (root, r)
    assert replication_seed(4, 0) != replication_seed(3, 0) and replication_seed(0, 1) != replication_seed(1, 0)
    # Common random numbers: two sweeps over the same base with different variants share the root
    # seed, so replication r simulates with the same seed in every variant of both.
    a = load_sweep(sweep_file(tmp_path, "grid:\n  options.own-a.gpus: [16, 24]\n", "a.yaml"))
    b = load_sweep(sweep_file(tmp_path, "grid:\n  economics.pue: [1.1, 1.3]\n", "b.yaml"))
    assert a.seed == b.seed == 3
    # Replication 0 is the root seed itself: the run `costsim run` makes with that seed.
    assert [replication_seed(0, 0), replication_seed(3, 0), replication_seed(2**63 - 1, 0)] == [0, 3, 2**63 - 1]
    # Pinned: a seed must never change between versions, or old sweeps would not resume identically.
    # (Computed once from SeedSequence([root, r]).generate_state(1, uint64)[0] >> 1, for r >= 1.)
    assert [replication_seed(3, 1), replication_seed(12345, 7)] == [5712964121383671236, 6507740548082236446]
    assert replication_seed(2**63 - 1, 999) < 2**63
    for bad in [(-1, 0), (0, -1), (2**63, 0), (0, 1.0), (True, 0)]:
        with pytest.raises(costsim.ArgumentError):
            replication_seed(*bad)


def test_a_scenario_given_as_a_sweep_file_says_how_to_sweep_it(base):
    with pytest.raises(costsim.ScenarioError, match=r"base.yaml: this is a scenario, not a sweep file: vary it with --set"):
        load_sweep(base)


def test_sweeping_the_seed_is_refused(tmp_path):
    # Every run's seed comes from the sweep's seed and its replication: a swept scenario seed would
    # be accepted and silently ignored.
    from costsim.runs.sweepfile import load_sweep
    from costsim.scenario import ScenarioError

    (tmp_path / "s.yaml").write_text((SHIPPED / "baseline.yaml").read_text())
    (tmp_path / "sw.yaml").write_text("base: s.yaml\ngrid:\n  seed: [1, 2]\n")
    with pytest.raises(ScenarioError, match=r"sw.yaml:3:\d+: grid.seed: the seed is the sweep's"):
        load_sweep(tmp_path / "sw.yaml")
