"""A sweep's task files, ``runs/variant=<id>/replication=<r>.parquet``: written with a checksum,
verified against the manifest and that checksum before a resume or a report trusts them.

Each file's metadata (key ``costsim.sweep``) holds the sweep's source, the variant's id and swept
values, the replication, its seed, the variant's ``scenario_sha256`` and ``task_sha256``: the
SHA-256 of the task's identity (variant, replication, seed, scenario_sha256, params) and of its table
(every column's name, Arrow type and values: numbers as their bytes, text as JSON). A file is
trusted only when it is a regular file at its task's path, its metadata names that task and its
checksum is that of its identity and table: a value edited by hand, one flipped bit anywhere, a
copy of another task's file or a file whose metadata was edited to claim another task all fail,
and the file is named. The table is rebuilt without the pandas metadata (``ignore_metadata``), so
the part of the file the checksum does not cover cannot change the values either.

Entries of ``runs/`` that are not task files of the sweep (another sweep's, a second copy of a
task, a folder where a file should be) are ``strays``. Names starting with ``.`` or ``_`` are
skipped, as Parquet readers skip them (a sweep's temporary files are such names).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from costsim.runs.outfiles import kind_of

META_KEY = b"costsim.sweep"
RUNS = "runs"
HIDDEN = (".", "_")  # name prefixes pyarrow's dataset discovery ignores
SHOWN = 3  # file names quoted in a message; the rest are counted
_MAX_REASON = 200  # characters of a library's error message quoted about a damaged file


@dataclass(frozen=True)
class TaskId:
    """What a task file must say about itself: its variant, replication, seed, the variant's
    inputs fingerprint (``scenario_sha256`` in the manifest) and its swept values (``params`` in
    the manifest, JSON data; None only to recognise the checksums of an older costsim, which did
    not cover them), so that a report never labels a task's runs with values it was not run with."""

    variant: str
    replication: int
    seed: int
    scenario_sha256: str
    params: dict | None = None

    @property
    def name(self) -> str:
        """Its path inside the sweep folder."""
        return task_name(self.variant, self.replication)

    def fields(self) -> dict:
        out = {"variant": self.variant, "replication": self.replication, "seed": self.seed,
               "scenario_sha256": self.scenario_sha256}
        return out if self.params is None else {**out, "params": self.params}


def task_name(variant: str, replication: int) -> str:
    return f"{RUNS}/variant={variant}/replication={replication}.parquet"


def task_sha256(task: TaskId, table: pa.Table) -> str:
    """SHA-256 of ``task``'s identity and of ``table``'s content (row count, column names, Arrow
    types and values; independent of how the table is split into chunks)."""
    digest = hashlib.sha256(json.dumps(task.fields(), sort_keys=True).encode() + b"\0")
    digest.update(f"{table.num_rows}\0".encode())
    for field, column in zip(table.schema, table.columns, strict=True):
        digest.update(json.dumps([field.name, str(field.type)]).encode() + b"\0")
        kind = field.type
        if column.null_count == 0 and (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                                       or pa.types.is_boolean(kind)):
            digest.update(np.ascontiguousarray(column.to_numpy()).tobytes())  # bit for bit (NaN, -0.0)
        else:
            digest.update(json.dumps(column.to_pylist(), default=str).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def write_task_file(frame: pd.DataFrame, path: Path, task: TaskId, meta: dict) -> None:
    """``frame`` (without the ``variant`` column: it is the folder's name) as Parquet at ``path``,
    with ``meta`` and the checksum in its metadata."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    meta = {**meta, **task.fields(), "task_sha256": task_sha256(task, table)}
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), META_KEY: json.dumps(meta).encode()})
    pq.write_table(table, path)


def _differs(meta: dict, task: TaskId) -> list[str]:
    """The identity fields ``meta`` gives other values (or types: true is not 1) than ``task``'s."""
    return [k for k, v in task.fields().items() if type(meta.get(k)) is not type(v) or meta.get(k) != v]


def claimed_task(meta) -> TaskId | None:
    """The task a file's ``costsim.sweep`` metadata (parsed JSON) says it holds; None when the
    metadata lacks any identity field or gives one of the wrong type."""
    if not isinstance(meta, dict):
        return None
    fields = {"variant": str, "replication": int, "seed": int, "scenario_sha256": str}
    if any(type(meta.get(k)) is not t for k, t in fields.items()):
        return None
    params = meta.get("params") if isinstance(meta.get("params"), dict) else None  # covered by its checksum
    return TaskId(meta["variant"], meta["replication"], meta["seed"], meta["scenario_sha256"], params)


def table_problem(table: pa.Table, task: TaskId) -> str | None:
    """Why ``table`` (a task file as read, its metadata included) is not ``task``'s runs as the
    sweep wrote them: no costsim metadata, another task's identity, no checksum or a checksum its
    contents do not match; None when it is. A few words, for ``PATH why``."""
    raw = (table.schema.metadata or {}).get(META_KEY)
    meta = json.loads(raw) if raw is not None else None
    if not isinstance(meta, dict):
        return "has no costsim sweep metadata: it was not written by a sweep, or is damaged"
    wrong = _differs(meta, task)
    if wrong:
        verb = "differs" if len(wrong) == 1 else "differ"
        return f"is not this task's file (its {', '.join(wrong)} {verb} from the manifest's)"
    if "task_sha256" not in meta:
        return "has no checksum (an older costsim wrote it)"
    if meta["task_sha256"] != task_sha256(task, table):
        if task.params is not None and meta["task_sha256"] == task_sha256(replace(task, params=None), table):
            return ("has a checksum that does not cover its swept values (an older costsim wrote it): "
                    "run the sweep again into a new folder")
        return "its contents differ from the checksum written with them: it changed after the sweep wrote it"
    return None


def frame_problem(frame: pd.DataFrame, task: TaskId) -> str | None:
    """Why a task file's rows (checksum verified) are not ``task``'s runs: none, or another
    replication's seed or number; None when they are."""
    if len(frame) == 0 or not {"replication", "seed"} <= set(frame.columns):
        return "holds no runs"
    if not ((frame["seed"] == task.seed).all() and (frame["replication"] == task.replication).all()):
        return "holds runs of another replication"
    return None


def read_task_file(path: Path, task: TaskId) -> tuple[pd.DataFrame | None, str | None]:
    """``(table, None)`` when ``path`` holds ``task``'s runs as the sweep wrote them (``variant``
    not included); ``(None, why)`` otherwise, ``why`` saying what is wrong in a few words."""
    kind = kind_of(path)
    if kind is not None:
        return None, f"is {kind}, not a task file"
    try:
        table = pq.read_table(path)
        why = table_problem(table, task)
        if why is not None:
            return None, why
        frame = table.to_pandas(ignore_metadata=True)
    except Exception as err:  # noqa: BLE001 — a damaged file can fail anywhere in a reader; never trusted
        text = " ".join(str(err).split())[:_MAX_REASON]
        return None, f"cannot be read ({type(err).__name__}: {text})"
    why = frame_problem(frame, task)
    return (None, why) if why is not None else (frame, None)


def strays(folder: Path, variants: list[str], replications: int) -> list[str]:
    """Entries of ``folder/runs`` that are not task files of a sweep of ``variants`` ×
    ``replications`` (paths relative to ``folder``, a kind added when not a regular file)."""
    runs = folder / RUNS
    if kind_of(runs) not in (None, "a folder"):
        return [f"{RUNS} ({kind_of(runs)})"]
    if not runs.is_dir():
        return []
    dirs = {f"variant={v}" for v in variants}
    files = {f"replication={r}.parquet" for r in range(replications)}
    found = []
    for sub in sorted(runs.iterdir()):
        if sub.name.startswith(HIDDEN):
            continue
        kind = kind_of(sub)
        if sub.name not in dirs or kind != "a folder":
            found.append(f"{RUNS}/{sub.name}" + (f" ({kind})" if kind not in (None, "a folder") else ""))
            continue
        for entry in sorted(sub.iterdir()):
            kind = kind_of(entry)
            if not entry.name.startswith(HIDDEN) and (entry.name not in files or kind is not None):
                found.append(f"{RUNS}/{sub.name}/{entry.name}" + (f" ({kind})" if kind else ""))
    return found


def listed(names: list[str]) -> str:
    """Names for a message: the first few, then how many in all."""
    return ", ".join(names[:SHOWN]) + (f", ... ({len(names)} in all)" if len(names) > SHOWN else "")


__all__ = ["META_KEY", "RUNS", "TaskId", "claimed_task", "frame_problem", "listed", "read_task_file", "strays",
           "table_problem", "task_name", "task_sha256", "write_task_file"]
