"""The dashboard's Sensitivity and Sweep tabs (costsim.dashboard.decision_tabs) through AppTest
(harness tests/apps/decision_tabs_app.py), and the safe reading of uploaded sweep output.

The scenario is tiny: one owned node of 8 H100s against on-demand H100s over 120 days, an 8-GPU
job of 5 h every 10 h (nothing queues on the node). Over 120 days the owned node's capital is
80,000 × 120/365 ≈ $26.3k against 288 jobs × 40 GPU-h × $2.99 ≈ $34.4k of rent, so the cloud
price crosses the verdict inside its range (×0.83 between ×0.67 and ×1.17): the tornado has a
flipping input to mark. Expected values come from the library called directly (tornado, sweep,
decide, read_sweep_folder), never from the tab's own code path.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from helpers import one_node_scenario_file
from paths import HARNESSES
from streamlit.testing.v1 import AppTest

import costsim
from costsim.dashboard import Upload, literal_markdown
from costsim.dashboard.decision_runs import grid_sweep, numeric_paths
from costsim.dashboard.sweep_upload import read_sweep_uploads
from costsim.decisions.pareto import sweep_table
from costsim.decisions.sensitivity import tornado
from costsim.present.tornado import sentence as tornado_sentence
from costsim.present.verdict import decide
from costsim.report.sweep import read_sweep_folder
from costsim.runs.sweepfile import sweep_from_sets
from costsim.scenario import ScenarioError

HARNESS = str(HARNESSES / "decision_tabs_app.py")
ECONOMICS = {"electricity_usd_per_kwh": 0.10, "pue": 1.3, "depreciation_years": 1.0, "cost_of_capital": 0.0,
             "colo_usd_per_kw_month": 0.0, "maintenance_frac_per_year": 0.0, "staff_usd_per_fte_year": 0.0,
             "setup_usd": 0.0, "residual_value_frac": 0.0}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return one_node_scenario_file(tmp_path_factory.mktemp("tiny"), 120, jobs=120 * 24 // 10, economics=ECONOMICS,
                                  own={"capex_usd_per_gpu": 10000.0}, rented={"price_per_gpu_hour": 2.99})


@pytest.fixture(scope="module")
def swept(tiny, tmp_path_factory):
    """A real small sweep written by costsim.sweep --out: (its folder, its SweepResults)."""
    out = tmp_path_factory.mktemp("sweep") / "out"
    spec = sweep_from_sets(tiny, ["options.own.gpus=8,16"], replications=2)
    return out, costsim.sweep(spec, out=out, executor="local")


def app(monkeypatch, tiny: Path, which: str) -> AppTest:
    monkeypatch.setenv("COSTSIM_TABS_SCENARIO", str(tiny))
    monkeypatch.setenv("COSTSIM_TABS_WHICH", which)
    return AppTest.from_file(HARNESS, default_timeout=60).run()


def frame(at: AppTest, column: str) -> pd.DataFrame:
    (df,) = [d.value for d in at.dataframe if column in d.value.columns]
    return df


# ------------------------------------------------------------------ Sensitivity


@pytest.mark.slow
def test_sensitivity_tab_shows_the_sentence_figure_and_flips(monkeypatch, tiny):
    at = app(monkeypatch, tiny, "sensitivity")
    assert not at.exception and not at.get("plotly_chart")  # nothing runs before the button
    at.button(key="tabs:sensitivity:run").click().run()
    assert not at.exception and not at.error
    expected = tornado(costsim.load_scenario(tiny), executor="local")  # the library, in this process
    assert "cloud price is ×0.67" in tornado_sentence(expected)  # the crossing the module docstring computes
    assert f"**{literal_markdown(tornado_sentence(expected))}**" in [m.value for m in at.markdown]
    assert len(at.get("plotly_chart")) == 1
    table = frame(at, "swing")
    assert list(table["input"]) == list(expected.table["input"])
    assert list(table["flips"] == "⚑ flips") == list(expected.table["flips"])
    cloud = table.set_index("input").loc["cloud price"]
    assert cloud["swing"] == f"${expected.table.set_index('input').loc['cloud price', 'swing_usd']:,.0f}"
    # Kept for this scenario: a rerun shows it again without running (no button any more).
    at.run()
    assert not at.button and len(at.get("plotly_chart")) == 1


# ------------------------------------------------------------------ Sweep: a grid run here


@pytest.mark.slow
def test_grid_run_shows_a_means_row_per_variant_and_option_and_a_frontier(monkeypatch, tiny):
    at = app(monkeypatch, tiny, "sweep")
    assert at.multiselect(key="tabs:grid:paths").value == ["options.own.gpus"]
    at.text_input(key="tabs:grid:values:options.own.gpus").input("8, 16")
    at.number_input(key="tabs:grid:reps").set_value(2)
    at.button(key="tabs:grid:run").click().run()
    assert not at.exception and not at.error
    # Truth: the same grid through sweep_from_sets on the file (the CLI's path), run in this process.
    truth = costsim.sweep(sweep_from_sets(tiny, ["options.own.gpus=8,16"], replications=2), executor="local")
    means = frame(at, "amortised total")
    assert len(means) == 4 == len(truth.means)  # 2 variants × 2 options
    assert (list(zip(means["variant"], means["option"], strict=True))
            == list(zip(truth.means["variant"], truth.means["option"], strict=True)))
    assert list(means["options.own.gpus"]) == [8, 8, 16, 16]
    for shown, (_, row) in zip(means["amortised total"], truth.means.iterrows(), strict=True):
        half = (row["total_cost_usd_high"] - row["total_cost_usd_low"]) / 2
        assert shown == f"${row['total_cost_usd']:,.0f} ± {half:,.0f}"
    verdicts = frame(at, "recommended")
    assert list(verdicts["recommended"]) == [decide(truth, variant=v).option or "none keeps up" for v in ("v000", "v001")]
    assert len(at.get("plotly_chart")) == 1
    on = frame(at, "fair_total_usd")
    # Independent truth for the frontier: by hand, a row is on it iff no row is no worse in both
    # fair total and p95 delay and better in one.
    table = sweep_table(truth)
    def dominated(r):
        return any((o.fair_total_usd <= r.fair_total_usd and o.queue_delay_p95_h <= r.queue_delay_p95_h)
                   and (o.fair_total_usd < r.fair_total_usd or o.queue_delay_p95_h < r.queue_delay_p95_h)
                   for o in table.itertuples())
    by_hand = {(r.variant, r.option) for r in table.itertuples() if not dominated(r)}
    assert by_hand and set(zip(on["variant"], on["option"], strict=True)) == by_hand


def test_a_bad_grid_value_is_one_clear_message_naming_the_field(monkeypatch, tiny):
    at = app(monkeypatch, tiny, "sweep")
    at.text_input(key="tabs:grid:values:options.own.gpus").input("8, 0")
    at.button(key="tabs:grid:run").click().run()
    assert not at.exception and at.error
    assert "options.own.gpus" in at.code[0].value and "options.0" not in at.code[0].value


# ------------------------------------------------------------------ Sweep: uploads


def zipped(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def folder_zip(out: Path) -> bytes:
    return zipped({f"out/{p.relative_to(out).as_posix()}": p.read_bytes() for p in out.rglob("*") if p.is_file()})


def upload(monkeypatch, tiny, files: list[tuple[str, bytes]]) -> AppTest:
    at = app(monkeypatch, tiny, "sweep")
    at.radio(key="tabs:sweep:source").set_value("Load a sweep's output").run()
    at.file_uploader(key="tabs:sweep:upload").set_value([(n, d, "application/octet-stream") for n, d in files]).run()
    return at


@pytest.mark.slow
def test_uploaded_runs_parquet_files_of_a_real_sweep_are_shown(monkeypatch, tiny, swept):
    out, truth = swept
    files = [(p.name, p.read_bytes()) for p in sorted((out / "runs").rglob("*.parquet"))]
    assert len(files) == 4 and len({n for n, _ in files}) == 2  # same names, told apart by their metadata
    at = upload(monkeypatch, tiny, files)
    assert not at.exception and not at.error
    means = frame(at, "amortised total")
    assert (list(zip(means["variant"], means["option"], strict=True))
            == list(zip(truth.means["variant"], truth.means["option"], strict=True)))
    assert list(means["options.own.gpus"]) == [8, 8, 16, 16]
    assert list(means["n"]) == [2, 2, 2, 2]
    assert len(at.get("plotly_chart")) == 1


@pytest.mark.slow
def test_the_zipped_folder_reads_as_the_folder_does(swept):
    out, _ = swept
    from_zip, notes = read_sweep_uploads([Upload("out.zip", folder_zip(out))])
    from_folder, _ = read_sweep_folder(out)  # the report's reader, on disk
    assert notes == []
    pd.testing.assert_frame_equal(from_zip.means, from_folder.means)
    pd.testing.assert_frame_equal(from_zip.runs, from_folder.runs, check_categorical=False)
    assert from_zip.variants.to_dict("records") == from_folder.variants.to_dict("records")


@pytest.mark.slow
@pytest.mark.parametrize("member, why", [("../evil/runs/variant=v000/replication=0.parquet", "climbs out"),
                                         ("/etc/runs/variant=v000/replication=0.parquet", "absolute"),
                                         ("out\\..\\x.parquet", "Windows")])
def test_a_zip_with_an_unsafe_member_is_refused_on_the_page(monkeypatch, tiny, swept, member, why):
    out, _ = swept
    good = next((out / "runs").rglob("*.parquet")).read_bytes()
    at = upload(monkeypatch, tiny, [("out.zip", zipped({"out/sweep.json": b"{}", member: good}))])
    assert not at.exception and "cannot be read" in at.error[0].value
    assert why in at.code[0].value and "the zip is refused" in at.code[0].value
    assert not at.dataframe


@pytest.mark.slow
def test_a_symlink_member_is_refused():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        info = zipfile.ZipInfo("runs/variant=v000/replication=0.parquet")
        info.external_attr = (0o120777 << 16)  # a symbolic link to /etc/passwd
        z.writestr(info, "/etc/passwd")
    with pytest.raises(ScenarioError, match="symbolic link"):
        read_sweep_uploads([Upload("out.zip", buf.getvalue())])


@pytest.mark.slow
def test_uploads_over_the_limits_are_refused_with_the_limit(monkeypatch, tiny, swept):
    monkeypatch.setenv("COSTSIM_TRACE_UPLOAD_MB", "0.05")  # 51 kB an upload, 205 kB unpacked
    bomb = zipped({"runs/variant=v000/replication=0.parquet": bytes(1_000_000)})  # 1 MB of zeros, ~1 kB zipped
    assert len(bomb) < 5_000
    at = upload(monkeypatch, tiny, [("bomb.zip", bomb)])
    assert not at.exception and at.error
    assert "unpacks to 1.0 MiB; the dashboard reads at most 0.2 MiB" in at.code[0].value
    big = ("big.parquet", bytes(60_000))
    at = upload(monkeypatch, tiny, [big])
    assert "is 0.1 MiB; the dashboard accepts at most 0.05 MiB" in at.code[0].value


@pytest.mark.slow
def test_not_a_sweep_is_refused_naming_the_file():
    plain = io.BytesIO()
    pd.DataFrame({"a": [1]}).to_parquet(plain)
    with pytest.raises(ScenarioError, match="mine.parquet: is not a task file of a costsim sweep"):
        read_sweep_uploads([Upload("mine.parquet", plain.getvalue())])
    with pytest.raises(ScenarioError, match="holds no runs/variant="):
        read_sweep_uploads([Upload("empty.zip", zipped({"readme.txt": b"hi"}))])


def edited(path: Path, column: str = "total_cost_usd", value: float = 1.0) -> bytes:
    """A task file with one column's values set to ``value``, its metadata (and checksum) kept."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    i = table.schema.get_field_index(column)
    table = table.set_column(i, table.schema.field(i), pa.array([value] * table.num_rows, table.schema.field(i).type))
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


@pytest.mark.slow
def test_an_edited_value_in_a_zipped_sweep_is_refused_naming_the_file(swept):
    """``costsim report`` refuses a folder whose task file was edited; the upload of the same
    folder zipped is refused too, naming the member, and so is the file uploaded alone."""
    out, _ = swept
    task = "runs/variant=v000/replication=1.parquet"
    members = {f"out/{p.relative_to(out).as_posix()}": p.read_bytes() for p in out.rglob("*") if p.is_file()}
    members[f"out/{task}"] = edited(out / task)
    with pytest.raises(ScenarioError) as err:
        read_sweep_uploads([Upload("out.zip", zipped(members))])
    assert str(err.value).startswith(f"out.zip: out/{task}: its contents differ from the checksum")
    with pytest.raises(ScenarioError, match="replication=1.parquet: its contents differ from the checksum"):
        read_sweep_uploads([Upload("replication=1.parquet", edited(out / task))])


@pytest.mark.slow
def test_a_second_copy_a_stray_or_a_renamed_task_file_is_refused_by_name(swept):
    out, _ = swept
    members = {f"out/{p.relative_to(out).as_posix()}": p.read_bytes() for p in out.rglob("*") if p.is_file()}
    first, other = "out/runs/variant=v000/replication=0.parquet", "out/runs/variant=v001/replication=0.parquet"
    twice = [Upload("out.zip", zipped(members)), Upload("replication=0.parquet", members[first])]
    with pytest.raises(ScenarioError, match=r"replication=0.parquet: is a second copy of variant v000, replication 0 "
                                            r"\(also in out.zip: out/runs/variant=v000/replication=0.parquet\)"):
        read_sweep_uploads(twice)
    stray = {**members, "out/runs/variant=v000/replication=0 (copy).parquet": members[first]}
    with pytest.raises(ScenarioError, match=r"out.zip: holds files in runs/ that are not a sweep's tasks "
                                            r"\(out/runs/variant=v000/replication=0 \(copy\).parquet\)"):
        read_sweep_uploads([Upload("out.zip", zipped(stray))])
    renamed = {**members, first: members[other]}
    with pytest.raises(ScenarioError, match=rf"out.zip: {first}: holds variant v001, replication 0: not the task"):
        read_sweep_uploads([Upload("out.zip", zipped(renamed))])
    manifest = json.loads(members["out/sweep.json"])
    manifest["variants"] = manifest["variants"][:1]  # a manifest that lists v000 only: v001's files are strays
    with pytest.raises(ScenarioError, match=r"out.zip: out/runs/variant=v001/replication=[01].parquet: "
                                            r"is not a task of this sweep \(its manifest lists no variant v001"):
        read_sweep_uploads([Upload("out.zip", zipped({**members, "out/sweep.json": json.dumps(manifest).encode()}))])


# ------------------------------------------------------------------ the grid's fields and limits


def test_numeric_paths_offer_the_knobs_named_in_the_issue(tiny):
    paths = numeric_paths(costsim.load_scenario(tiny))
    for p in ("options.own.gpus", "options.cloud.price_per_gpu_hour", "workload.arrival_scale",
              "economics.electricity_usd_per_kwh", "horizon_days"):
        assert p in paths
    assert "options.own.gpu_type" not in paths and "name" not in paths and "seed" not in paths


def test_grid_limits(tiny):
    sc = costsim.load_scenario(tiny)
    with pytest.raises(ScenarioError, match="25 variants: the dashboard runs at most 24"):
        grid_sweep(sc, {"options.own.gpus": ",".join(str(8 * k) for k in range(1, 26))})
    with pytest.raises(ScenarioError, match="replications: must be 1 … 5"):
        grid_sweep(sc, {"options.own.gpus": "8"}, replications=6)
    with pytest.raises(ScenarioError, match="'x' is not a number"):
        grid_sweep(sc, {"options.own.gpus": "8, x"})
    spec = grid_sweep(sc, {"options.own.gpus": "8, 16", "economics.electricity_usd_per_kwh": "0.1, 0.2, 0.1"}, 2)
    assert [v.params for v in spec.variants] == [  # product, last fastest, the repeated 0.1 once
        {"options.own.gpus": g, "economics.electricity_usd_per_kwh": e} for g in (8, 16) for e in (0.1, 0.2)]
    assert spec.variants[3].scenario.options[0].gpus == 16 and spec.replications == 2
