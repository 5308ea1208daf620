"""Reading a sweep's output folder (``costsim sweep --out SWEEP_DIR``, ``costsim.runs.dataset``)
back into ``SweepResults`` for the report.

The folder holds every finished task's summary rows (``runs/``, a Hive-partitioned Parquet
dataset), the manifest (``sweep.json``: the base scenario's path, each variant's swept values and
the fingerprint of its inputs) and the tables. The variants' scenarios are rebuilt from the base
scenario and the swept values; when the base has moved or changed since the sweep (its fingerprint
differs), they are left out and the report names options by their names alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from costsim.runs.dataset import MANIFEST, RUNS
from costsim.runs.outdir import OutputError
from costsim.scenario import ScenarioError


def is_sweep_folder(path: Path) -> bool:
    """Whether ``path`` is a folder holding a sweep's manifest."""
    return path.is_dir() and (path / MANIFEST).is_file()


def _manifest(folder: Path, label: str) -> dict:
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise OutputError(label, str(folder), f"has an unreadable {MANIFEST} ({err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("variants"), list):
        raise OutputError(label, str(folder), f"has a {MANIFEST} that is not a costsim sweep manifest")
    return data


def _runs(folder: Path, order: list[str], label: str) -> pd.DataFrame:
    """Every finished task's rows, in variant (manifest order), replication and option order."""
    if not any((folder / RUNS).glob("variant=*/*.parquet")):
        raise OutputError(label, str(folder), f"holds no finished runs ({RUNS}/ is empty): run the sweep first")
    try:
        runs = pd.read_parquet(folder / RUNS)
    except (OSError, ValueError) as err:
        raise OutputError(label, str(folder), f"has unreadable runs in {RUNS}/ ({err})") from None
    runs["variant"] = runs["variant"].astype(str)  # a Hive partition reads back as a category
    rank = {v: i for i, v in enumerate(order)}
    key = runs["variant"].map(lambda v: rank.get(v, len(rank))) * 1_000_000 + runs["replication"]
    runs = runs.iloc[key.argsort(kind="stable")].reset_index(drop=True)  # stable: option order kept
    return runs[["variant", *[c for c in runs.columns if c != "variant"]]]


def _scenarios(manifest: dict, notes: list[str]) -> dict:
    """Each variant's Scenario rebuilt from the base and its swept values; {} with a note when the
    base cannot be read or no longer gives the scenarios the sweep ran."""
    from costsim.runs import api
    from costsim.runs.paths import set_path
    from costsim.runs.sweep import inputs_sha256

    base_path = manifest.get("base")
    try:
        base = api.load_scenario(base_path)
    except (ScenarioError, TypeError, OSError):
        notes.append(f"the base scenario {base_path} cannot be read now: options are named, not described, "
                     "and the scenario is not shown")
        return {}
    data = base.model_dump(mode="json")
    out = {}
    for v in manifest["variants"]:
        try:
            copy = json.loads(json.dumps(data))
            for path, value in (v.get("params") or {}).items():
                set_path(copy, path, value)
            sc = api.scenario_from_data(copy, f"{base_path} variant {v['id']}", base.base_dir)
        except (ScenarioError, KeyError, TypeError):
            sc = None
        if sc is None or inputs_sha256(sc) != v.get("scenario_sha256"):
            notes.append(f"the base scenario {base_path} (or its trace or the catalog) has changed since the sweep: "
                         "options are named, not described, and the scenario is not shown")
            return {}
        out[v["id"]] = sc
    return out


def read_sweep_folder(path: str | Path, label: str = "SWEEP_DIR"):
    """(SweepResults, notes) from a sweep's output folder; ``notes``: what the report should say
    (tasks not finished, scenarios not rebuilt). OutputError (a ScenarioError) naming ``label``
    and the folder when it is not a sweep's."""
    from costsim.runs.stats import means_table, differences_table
    from costsim.runs.sweep import METRICS, SweepResults

    folder = Path(path)
    if not is_sweep_folder(folder):
        raise OutputError(label, str(folder), f"is not a costsim sweep folder (no {MANIFEST}): give a scenario "
                          "file or the --out folder of costsim sweep")
    manifest = _manifest(folder, label)
    order = [str(v.get("id")) for v in manifest["variants"]]
    runs = _runs(folder, order, label)
    notes: list[str] = []
    expected = len(order) * int(manifest.get("replications") or 1)
    done = runs.groupby(["variant", "replication"]).ngroups
    if done < expected:
        notes.append(f"{done} of {expected} tasks of this sweep have finished: the tables cover those only")
    variants = pd.DataFrame([{"variant": v["id"], **(v.get("params") or {})} for v in manifest["variants"]])
    variants = variants[variants["variant"].isin(set(runs["variant"]))].reset_index(drop=True)
    results = SweepResults(runs, means_table(runs, METRICS), differences_table(runs, METRICS), variants,
                           _scenarios(manifest, notes))
    return results, notes
