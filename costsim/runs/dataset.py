"""A sweep's output folder: a manifest, one Parquet file per finished task, the summary tables.

Layout of ``OUT``::

    sweep.json                                  the manifest, written first (``manifest``)
    runs/variant=<id>/replication=<r>.parquet   one per finished task, written as it finishes
    means.csv, means.parquet                    written at the end, as are
    differences.csv, differences.parquet        (the statistics of ``runs``)
    variants.csv, variants.parquet              (one row per variant: its swept values)
    .sweep.lock                                 held (flock) while a sweep writes the folder

``runs/`` is a Hive-partitioned Parquet dataset: ``pandas.read_parquet("OUT/runs")`` reads every
finished task, with ``variant`` (a category) taken from the folder names, as Hive partition
columns are, rather than stored in the files. Each file's metadata (key ``costsim.sweep``) holds
the sweep's source, the variant's id and swept values, the replication and its seed.

Every file is written atomically: into a hidden temporary file in the same folder
(``.NAME.tmp-XXXXXXXX``), flushed to disk, then renamed over ``NAME``. A reader, or a resumed
sweep, sees a complete file or none; an interrupted write leaves at most a hidden temporary file,
removed by the next sweep into the folder (and ignored by Parquet readers, which skip names
starting with '.').

Resume: a folder whose manifest describes the same sweep (same variants with the same scenarios,
replications, seed and costsim version) keeps its finished tasks and runs only the missing ones.
A folder holding a different sweep, or files that are not a sweep's, is refused before anything
is written.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from costsim.csvcells import write_csv
from costsim.runs.outdir import OutputError, fsync

MANIFEST = "sweep.json"
RUNS = "runs"
LOCK = ".sweep.lock"
TABLES = ("means", "differences", "variants")
META_KEY = b"costsim.sweep"
_TEMP = re.compile(r"\..+\.tmp-[0-9a-f]{8}")
# Names a sweep writes at the top of OUT: a folder without a manifest may hold only these.
OURS = frozenset({MANIFEST, RUNS, LOCK} | {f"{t}.{ext}" for t in TABLES for ext in ("csv", "parquet")})
# The manifest fields that make two sweeps the same; "source" and "base" are paths, which change
# with the folder a sweep is started from, and are kept for information only. "code": costsim's
# source and the versions of the libraries its numbers depend on (``sweep.code_identity``), so a
# resume never mixes runs of two versions of the model.
IDENTITY = ("costsim_version", "code", "replications", "seed", "variants")


def fingerprint(data: Any) -> str:
    """SHA-256 of JSON data in canonical form (sorted keys): a variant's scenario, for the manifest."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def manifest(source: str, base: str, variants: list[dict], replications: int, seed: int, version: str,
             code: str) -> dict:
    """The manifest: ``variants`` are ``{"id", "params", "scenario_sha256"}``."""
    return {"costsim_version": version, "code": code, "source": source, "base": base,
            "replications": replications, "seed": seed, "variants": variants}


def write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    """``write(temp)`` into a hidden temporary file beside ``path``, flush it to disk and rename it
    over ``path``; on any exception (KeyboardInterrupt included) the temporary file is removed and
    ``path`` is as it was."""
    temp = path.with_name(f".{path.name}.tmp-{secrets.token_hex(4)}")
    try:
        write(temp)
        fsync(temp)
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()  # gone after a successful rename
    with contextlib.suppress(OSError):
        fsync(path.parent)  # the rename itself is on disk


def _write_parquet(frame: pd.DataFrame, path: Path, meta: dict | None = None) -> None:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    if meta is not None:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), META_KEY: json.dumps(meta).encode()})
    pq.write_table(table, path)


class SweepFolder:
    """Context manager over ``OUT`` for one sweep (``manifest`` describes it).

    ``check()`` (read only, before anything starts) refuses a file, a folder of other files and a
    folder holding a different sweep. Entering creates the folder, takes the lock, checks again
    under it, removes temporary files of interrupted writes and writes the manifest if absent.
    Problems are ``OutputError`` (a ScenarioError: the CLI exits 2) naming ``label`` and the folder.
    """

    def __init__(self, path: str | os.PathLike[str], manifest: dict, label: str = "out"):
        self.shown = os.fspath(path)
        self.path = Path(self.shown)
        self.manifest = manifest
        self.label = label
        self._lock_fd: int | None = None

    def _fail(self, message: str):
        raise OutputError(self.label, self.shown or '""', message)

    # -- checks -------------------------------------------------------------------------------------

    def check(self) -> None:
        try:
            self._check()
        except OSError as err:  # a folder we may not read
            self._fail(f"cannot be read: {err.strerror or err}")

    def _check(self) -> None:
        if self.shown == "":
            self._fail("is empty: name a folder for the sweep's results")
        if self.path.exists() and not self.path.is_dir():
            self._fail("exists and is not a folder")
        for parent in self.path.parents:
            if parent.exists():
                if not parent.is_dir():
                    self._fail(f"{parent} is a file, not a folder")
                break
        if not self.path.is_dir():
            return
        theirs = self._read_manifest()
        if theirs is None:
            if any((self.path / RUNS).glob("*/*.parquet")):  # finished tasks of an unknown sweep: never reuse
                self._fail(f"holds a {RUNS}/ folder but no {MANIFEST}: its runs belong to an unknown sweep; "
                           "remove it or choose another folder")
            names = sorted(p.name for p in self.path.iterdir() if p.name not in OURS and not _TEMP.fullmatch(p.name))
            if names:
                shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
                self._fail(f"holds files that are not a costsim sweep's ({shown}); choose a new or empty folder")
            return
        differ = [k for k in IDENTITY if theirs.get(k) != self.manifest[k]]
        if differ:
            self._fail(f"holds a different sweep (from {theirs.get('source', '?')}; they differ in "
                       f"{', '.join(differ)}); choose another folder, or remove this one to start over")

    def _read_manifest(self) -> dict | None:
        path = self.path / MANIFEST
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            self._fail(f"has an unreadable {MANIFEST} ({err}); remove the folder to start over")
        if not isinstance(data, dict):
            self._fail(f"has a {MANIFEST} that is not a sweep manifest; remove the folder to start over")
        return data

    # -- entry and exit -----------------------------------------------------------------------------

    def __enter__(self) -> SweepFolder:
        self.check()
        try:
            (self.path / RUNS).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            self._fail(f"cannot be created: {err.strerror or err}")
        try:
            self._lock()
            self.check()  # again, under the lock: another sweep may have written it meanwhile
            self._remove_temporaries()
            if not (self.path / MANIFEST).exists():
                text = json.dumps(self.manifest, indent=1) + "\n"
                write_atomic(self.path / MANIFEST, lambda p: p.write_text(text, encoding="utf-8"))
        except OSError as err:
            self.__exit__()
            self._fail(f"cannot be written: {err.strerror or err}")
        except BaseException:
            self.__exit__()
            raise
        return self

    def _lock(self) -> None:
        import fcntl  # POSIX only; imported here so the rest of costsim loads anywhere

        fd = os.open(self.path / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                self._fail("another costsim sweep is writing this folder; wait for it to finish or choose another")
            raise
        self._lock_fd = fd

    def _remove_temporaries(self) -> None:
        """Temporary files left by a sweep killed mid-write (we hold the lock: none is in use)."""
        for folder in [self.path, *(p for p in (self.path / RUNS).iterdir() if p.is_dir())]:
            for p in folder.iterdir():
                if _TEMP.fullmatch(p.name):
                    p.unlink()

    def __exit__(self, *exc) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    # -- tasks and tables ---------------------------------------------------------------------------

    def task_path(self, variant: str, replication: int) -> Path:
        return self.path / RUNS / f"variant={variant}" / f"replication={replication}.parquet"

    def has(self, variant: str, replication: int) -> bool:
        return self.task_path(variant, replication).is_file()

    def read_task(self, variant: str, replication: int, seed: int, scenario_sha256: str) -> pd.DataFrame | None:
        """A finished task's table, ``variant`` column restored; None when absent, unreadable or
        not this task's (another seed, or inputs other than this variant's): the task then runs
        again and replaces it."""
        path = self.task_path(variant, replication)
        if not path.is_file():
            return None
        try:
            table = pq.read_table(path)
            meta = json.loads((table.schema.metadata or {}).get(META_KEY, b"{}"))
            frame = table.to_pandas()
        except (OSError, ValueError, pa.ArrowException):
            return None
        if meta.get("scenario_sha256") != scenario_sha256 or meta.get("seed") != seed:
            return None
        if "seed" not in frame or not (frame["seed"] == seed).all() or len(frame) == 0:
            return None
        frame.insert(0, "variant", variant)
        return frame

    def write_task(self, frame: pd.DataFrame, meta: dict) -> Path:
        """One finished task (``frame`` has ``variant`` and ``replication`` columns; ``variant`` goes
        into the folder name, not the file)."""
        variant, replication = str(frame["variant"].iloc[0]), int(frame["replication"].iloc[0])
        path = self.task_path(variant, replication)
        try:
            path.parent.mkdir(exist_ok=True)
            write_atomic(path, lambda p: _write_parquet(frame.drop(columns="variant"), p, meta))
        except OSError as err:
            self._write_failed(err)
        return path

    def write_tables(self, tables: dict[str, pd.DataFrame]) -> list[Path]:
        """``NAME.csv`` and ``NAME.parquet`` for each table, each written atomically."""
        written = []
        for name, frame in tables.items():
            csv, parquet = self.path / f"{name}.csv", self.path / f"{name}.parquet"
            try:
                write_atomic(csv, lambda p, f=frame: write_csv(f, p))  # formula-like cells guarded
                write_atomic(parquet, lambda p, f=frame: _write_parquet(f, p))
            except OSError as err:
                self._write_failed(err)
            written += [csv, parquet]
        return written

    def _write_failed(self, err: OSError):
        where = f" ({err.filename})" if err.filename else ""
        self._fail(f"could not write: {err.strerror or err}{where}; the tasks finished before are saved: "
                   "make room and run the same sweep again to resume")
