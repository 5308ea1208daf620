"""Reading a sweep's output folder (``costsim sweep --out SWEEP_DIR``, ``costsim.runs.dataset``)
back into ``SweepResults`` for the report.

The folder holds every finished task's summary rows (``runs/``, a Hive-partitioned Parquet
dataset), the manifest (``sweep.json``: the base scenario's absolute path, each variant's swept
values and the fingerprint of its inputs) and the tables. A report's ``--out`` may be none of the
files any variant reads (``sweep_inputs``), and is refused when the base cannot be read. Only the task files the manifest names are read,
each checked against the manifest and the checksum written with it (``costsim.runs.taskfiles``):
a file that fails, and any other file in ``runs/`` (another sweep's, a second copy of a task), is
refused with its name, never mixed into the verdict. The variants' scenarios are rebuilt from the
base scenario and the swept values; when the base has moved or changed since the sweep (its
fingerprint differs), they are left out and the report names options by their names alone.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd

from costsim.errors import CostsimError
from costsim.runs.dataset import MANIFEST, RUNS, TABLES
from costsim.runs.outfiles import OutputError, kind_of, scenario_inputs
from costsim.runs.taskfiles import TaskId, listed, read_task_file, strays, task_name

_ID = re.compile(r"[A-Za-z0-9][\w-]{0,99}")  # a variant id as sweeps write them (v000): a safe folder name
_SHA = re.compile(r"[0-9a-f]{64}")


def is_sweep_folder(path: Path) -> bool:
    """Whether ``path`` is a folder holding a sweep's manifest."""
    return path.is_dir() and (path / MANIFEST).is_file()


def _manifest(folder: Path, label: str) -> dict:
    """The manifest, its fields checked (a damaged one is refused by name, never a traceback)."""
    path = folder / MANIFEST
    if kind_of(path) is not None:  # a FIFO would block the read
        raise OutputError(label, str(folder), f"has a {MANIFEST} that is {kind_of(path)}, not a file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise OutputError(label, str(folder), f"has an unreadable {MANIFEST} ({err})") from None
    variants = data.get("variants") if isinstance(data, dict) else None
    reps, seed = (data.get("replications"), data.get("seed")) if isinstance(data, dict) else (None, None)
    bad = ("variants" if not isinstance(variants, list) or not variants or not all(
               isinstance(v, dict) and isinstance(v.get("id"), str) and _ID.fullmatch(v["id"])
               and isinstance(v.get("scenario_sha256"), str) and _SHA.fullmatch(v["scenario_sha256"])
               and isinstance(v.get("params") or {}, dict) for v in variants)
           else "replications" if type(reps) is not int or not 1 <= reps <= 1000
           else "seed" if type(seed) is not int or not 0 <= seed < 2**63 else None)
    # bad is None only when variants is a list; the isinstance says so to the type checker
    if bad is None and isinstance(variants, list) and len({v["id"] for v in variants}) != len(variants):
        bad = "variants"
    if bad is not None:
        raise OutputError(label, str(folder), f"has a {MANIFEST} that is not a costsim sweep manifest (its {bad} "
                          "field is missing or damaged); run the sweep again into a new folder")
    return data


def _tasks(manifest: dict) -> list[TaskId]:
    """Every task the manifest describes, in variant (manifest order) and replication order."""
    from costsim.runs.sweepfile import replication_seed

    seeds = [replication_seed(manifest["seed"], r) for r in range(manifest["replications"])]
    return [TaskId(v["id"], r, seeds[r], v["scenario_sha256"], v.get("params") or {}) for v in manifest["variants"]
            for r in range(manifest["replications"])]


def _runs(folder: Path, manifest: dict, label: str) -> pd.DataFrame:
    """Every finished task's rows, in variant (manifest order), replication and option order; an
    OutputError naming the file when one is not the sweep's as it wrote it."""
    found = strays(folder, [v["id"] for v in manifest["variants"]], manifest["replications"])
    if found:
        raise OutputError(label, str(folder), f"holds files in {RUNS}/ that are not this sweep's tasks "
                          f"({listed(found)}): another sweep's, or a second copy of a task; move them out of the "
                          "folder so that the report reads this sweep's runs only")
    frames = []
    for task in _tasks(manifest):
        path = folder / task_name(task.variant, task.replication)
        if not os.path.lexists(path):
            continue  # not finished (yet)
        frame, why = read_task_file(path, task)
        if frame is None:
            raise OutputError(label, str(folder), f"{task.name} {why}; run the same sweep again to redo that "
                              "task (costsim sweep ... --out this folder), or remove the file")
        frame.insert(0, "variant", task.variant)
        frames.append(frame)
    if not frames:
        raise OutputError(label, str(folder), f"holds no finished runs ({RUNS}/ is empty): run the sweep first")
    return pd.concat(frames, ignore_index=True)


def base_paths(manifest: dict, folder: Path) -> list[Path]:
    """Where the manifest's base scenario may be: its path when absolute (as sweeps record it); a
    relative one (written by an older costsim, as typed) from the current folder, then from the
    sweep folder's parent (where a sweep is usually started); [] when it names none."""
    base = manifest.get("base") if isinstance(manifest, dict) else None
    if not isinstance(base, str) or not base or "\0" in base:
        return []
    if Path(base).is_absolute():
        return [Path(base)]
    return list(dict.fromkeys([Path(base), Path(folder).parent / base]))


def _variant_data(data: dict, variant: dict) -> dict:
    """The base's data with the variant's swept values set (KeyError, TypeError, ScenarioError when
    they no longer apply)."""
    from costsim.runs.paths import set_path

    copy = json.loads(json.dumps(data))
    for path, value in (variant.get("params") or {}).items():
        set_path(copy, path, value)
    return copy


def sweep_inputs(folder: Path, label: str = "SWEEP_DIR") -> list[Path]:
    """What a report on the sweep folder reads, or must not overwrite: the manifest, the tables,
    the base scenario and every variant's trace and points files (a swept trace gives several).

    An OutputError naming ``label`` and the folder when the base cannot be read: the files the
    sweep read are then unknown, and a report must not write over one of them."""
    from costsim.scenario import read_scenario
    from costsim.scenario import scenario_from_data as schema_from_data

    found = [folder / MANIFEST, *(folder / f"{t}.{ext}" for t in TABLES for ext in ("csv", "parquet"))]
    if kind_of(folder / MANIFEST) is not None:
        return found  # refused, by name, when the folder is read (reading a FIFO would block)
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return found  # a damaged manifest is refused, by name, when the folder is read
    if not isinstance(manifest, dict):
        return found
    source = manifest.get("source")
    if isinstance(source, str) and source and "\0" not in source and Path(source).is_file():
        found.append(Path(source))  # the sweep file, when the sweep was started from one here
    loaded = []
    for path in base_paths(manifest, folder):
        try:
            loaded.append((path, read_scenario(path)[0]))  # the schema only: no trace is read
        except (CostsimError, OSError, ValueError):
            continue
    if not loaded:
        shown = manifest.get("base")
        what = (f"names the base scenario {shown!r} in its {MANIFEST}, which cannot be read from here"
                if isinstance(shown, str) and shown else f"names no base scenario in its {MANIFEST}")
        raise OutputError(label, str(folder), f"{what}, so the files the sweep read are unknown and a report "
                          "could overwrite one: run the report from the folder the sweep was started in")
    variants = [v for v in manifest.get("variants") or () if isinstance(v, dict)]
    for path, base in loaded:
        found += scenario_inputs(base, path)
        data = base.model_dump(mode="json")
        for v in variants:
            try:
                sc = schema_from_data(_variant_data(data, v), f"{path} variant {v.get('id')}", base.base_dir)
                found += scenario_inputs(sc)
            except (CostsimError, KeyError, TypeError, ValueError, AttributeError):
                # Not a scenario any more (the base changed): any swept text may still name a file.
                found += [Path(base.base_dir) / x for x in (v.get("params") or {}).values()
                          if isinstance(x, str) and x and "\0" not in x]
    return list(dict.fromkeys(found))


def _scenarios(manifest: dict, folder: Path, notes: list[str]) -> dict:
    """Each variant's Scenario rebuilt from the base and its swept values; {} with a note when the
    base cannot be read or no longer gives the scenarios the sweep ran."""
    from costsim.runs import api
    from costsim.runs.sweep import inputs_sha256

    shown = manifest.get("base")
    paths = base_paths(manifest, folder)
    readable = False
    for base_path in paths:
        try:
            base = api.load_scenario(base_path)
        except (CostsimError, TypeError, OSError):
            continue
        readable = True
        data = base.model_dump(mode="json")
        out = {}
        for v in manifest["variants"]:
            try:
                sc = api.scenario_from_data(_variant_data(data, v), f"{base_path} variant {v['id']}", base.base_dir)
            except (CostsimError, KeyError, TypeError):
                sc = None
            if sc is None or inputs_sha256(sc) != v.get("scenario_sha256"):
                break
            out[v["id"]] = sc
        else:
            return out
    if not readable:
        notes.append(f"the base scenario {shown} cannot be read now: options are named, not described, "
                     "and the scenario is not shown")
    else:
        notes.append(f"the base scenario {shown} (or its trace or the catalog) has changed since the sweep: "
                     "options are named, not described, and the scenario is not shown")
    return {}


def read_sweep_folder(path: str | os.PathLike[str], label: str = "SWEEP_DIR"):
    """(SweepResults, notes) from a sweep's output folder; ``notes``: what the report should say
    (tasks not finished, scenarios not rebuilt). OutputError (a ScenarioError) naming ``label``
    and the folder when it is not a sweep's."""
    from costsim.runs.stats import differences_table, means_table
    from costsim.runs.sweep import METRICS, SweepResults

    folder = Path(path)
    if not is_sweep_folder(folder):
        raise OutputError(label, str(folder), f"is not a costsim sweep folder (no {MANIFEST}): give a scenario "
                          "file or the --out folder of costsim sweep")
    manifest = _manifest(folder, label)
    order = [v["id"] for v in manifest["variants"]]
    runs = _runs(folder, manifest, label)
    notes: list[str] = []
    expected = len(order) * int(manifest.get("replications") or 1)
    done = runs.groupby(["variant", "replication"]).ngroups
    if done < expected:
        notes.append(f"{done} of {expected} tasks of this sweep have finished: the tables cover those only")
    variants = pd.DataFrame([{"variant": v["id"], **(v.get("params") or {})} for v in manifest["variants"]])
    variants = variants[variants["variant"].isin(set(runs["variant"]))].reset_index(drop=True)
    results = SweepResults(runs, means_table(runs, METRICS), differences_table(runs, METRICS), variants,
                           _scenarios(manifest, folder, notes))
    return results, notes
