"""Writing a run's tables: CSV and Parquet (with provenance) plus the resolved scenario."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from costsim.results import Results
from costsim.scenario import dump_scenario

TABLES = ("summary", "jobs", "timeseries", "costs", "phases", "cashflow", "breakeven", "advice")


def resolved_scenario_yaml(results: Results) -> str:
    """The scenario as run: seed filled in, the trace as an absolute path so it loads from anywhere."""
    sc = results.scenario
    trace = str((sc.base_dir / sc.workload.trace).resolve()) if sc.workload.trace else None
    resolved = sc.model_copy(update={
        "seed": results.seed,
        "workload": sc.workload.model_copy(update={"trace": trace}),
    })
    return dump_scenario(resolved)


def write_results(results: Results, out_dir: Path | str) -> list[Path]:
    """Write every table as ``<name>.csv`` and ``<name>.parquet`` and ``scenario.resolved.yaml``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    meta = json.dumps({
        "scenario": results.scenario.name,
        "seed": results.seed,
        "scenario_json": results.scenario.model_dump_json(),
    }).encode()
    written = []
    for name in TABLES:
        df = getattr(results, name)
        csv_path = out / f"{name}.csv"
        df.to_csv(csv_path, index=False)
        table = pa.Table.from_pandas(df, preserve_index=False)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"costsim.run": meta})
        pq_path = out / f"{name}.parquet"
        pq.write_table(table, pq_path)
        written += [csv_path, pq_path]
    scenario_path = out / "scenario.resolved.yaml"
    scenario_path.write_text(resolved_scenario_yaml(results), encoding="utf-8")
    written.append(scenario_path)
    return written
