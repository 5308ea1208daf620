"""Writing a run's tables: CSV and Parquet (with provenance) plus the resolved scenario, all at once."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from costsim.catalog.load import default_catalog
from costsim.plan.resolved import resolve_scenario
from costsim.results.assumptions import assumptions
from costsim.results.contract import Results
from costsim.runs.outdir import MANIFEST, OutputFolder
from costsim.scenario import dump_scenario
from costsim.traces.csvcells import write_csv

TABLES = ("summary", "jobs", "timeseries", "costs", "phases", "cashflow", "breakeven", "advice", "to_target", "reward_by_day")
RESOLVED_SCENARIO = "scenario.resolved.yaml"
ASSUMPTIONS = "assumptions.csv"  # every value the numbers rest on, with source and date (costsim.results.assumptions)
# Every name costsim writes into an output folder (a folder holding others is not replaced).
REPORT = "report.html"  # costsim run --out writes it beside the tables (costsim.report.build)
OUTPUT_NAMES = frozenset({f"{t}.{ext}" for t in TABLES for ext in ("csv", "parquet")} | {RESOLVED_SCENARIO, ASSUMPTIONS, MANIFEST, REPORT})


def resolved_scenario_yaml(results: Results) -> str:
    """The scenario as run: seed filled in, the trace and scaling points files as absolute paths so
    it loads from anywhere, and every value the run took from the catalog written in with the
    catalog's version (``costsim.plan.resolved``), so a later catalog does not change a rerun."""
    sc = results.scenario
    trace = str((sc.base_dir / sc.workload.trace).resolve()) if sc.workload.trace else None
    classes = tuple(
        c.model_copy(update={"scaling": c.scaling.model_copy(update={"fit": str((sc.base_dir / c.scaling.fit).resolve())})})
        if c.scaling is not None and c.scaling.fit is not None else c
        for c in sc.workload.classes)
    resolved = sc.model_copy(update={
        "seed": results.seed,
        "workload": sc.workload.model_copy(update={"trace": trace, "classes": classes}),
    })
    return dump_scenario(resolve_scenario(resolved, default_catalog()))


def write_tables(results: Results, folder: Path | str,
                 on_table: Callable[[str, int, int], None] | None = None) -> list[Path]:
    """Write every table as ``<name>.csv`` and ``<name>.parquet``, ``scenario.resolved.yaml`` and
    ``assumptions.csv`` into an existing ``folder`` (no atomicity: ``write_results`` and the CLI give it a staging folder).
    ``on_table(name, done, total)`` is called before each table (for a progress bar)."""
    out = Path(folder)
    meta = json.dumps({
        "scenario": results.scenario.name,
        "seed": results.seed,
        "scenario_json": results.scenario.model_dump_json(),
    }).encode()
    written = []
    for k, name in enumerate(TABLES):
        if on_table is not None:
            on_table(name, k, len(TABLES))
        df = getattr(results, name)
        csv_path = out / f"{name}.csv"
        write_csv(df, csv_path)  # formula-like text cells guarded (costsim.traces.csvcells)
        table = pa.Table.from_pandas(df, preserve_index=False)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"costsim.run": meta})
        pq_path = out / f"{name}.parquet"
        pq.write_table(table, pq_path)
        written += [csv_path, pq_path]
    scenario_path = out / RESOLVED_SCENARIO
    scenario_path.write_text(resolved_scenario_yaml(results), encoding="utf-8")
    written.append(scenario_path)
    assumptions_path = out / ASSUMPTIONS
    write_csv(assumptions(results.scenario, default_catalog()), assumptions_path)
    written.append(assumptions_path)
    return written


def run_info(results: Results) -> dict:
    """What the manifest records about the run besides its files: scenario name and seed."""
    return {"scenario": results.scenario.name, "seed": results.seed}


def write_results(results: Results, out_dir: Path | str) -> list[Path]:
    """Write a run's tables into ``out_dir`` all at once: the paths written.

    The files go to a staging folder beside ``out_dir`` that then replaces it whole, under a lock
    (``costsim.runs.outdir``): ``out_dir`` never holds a mix of two runs. Raises ``OutputError`` (a
    ``ScenarioError``) when the folder cannot be used or written; it is then left as it was.
    """
    with OutputFolder(out_dir, ours=OUTPUT_NAMES, label="out_dir") as folder:
        return folder.publish(lambda staging: write_tables(results, staging), run_info(results))
