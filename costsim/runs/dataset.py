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
the sweep's source, the variant's id and swept values, the replication, its seed and a checksum
of the task and its table (``costsim.runs.taskfiles``).

Every file is written atomically: into a hidden temporary file in the same folder
(``.NAME.tmp-XXXXXXXX``), flushed to disk, then renamed over ``NAME``. A reader, or a resumed
sweep, sees a complete file or none; an interrupted write leaves at most a hidden temporary file,
removed by the next sweep into the folder (and ignored by Parquet readers, which skip names
starting with '.').

Resume: a folder whose manifest describes the same sweep (same variants with the same scenarios,
replications, seed and costsim version) keeps its finished tasks and runs only the missing ones.
A task file is kept only when it passes its checksum; one that fails is named and its task run
again. A folder holding a different sweep, files that are not a sweep's, files in ``runs/`` that
are not this sweep's tasks (another sweep's, a second copy of a task, a folder where a task file
should be) or one of the sweep's inputs (its sweep file, scenario or trace) where the sweep
writes, is refused before anything is written.

Locks: a sweep holds the folder's lock beside it (``costsim.runs.outfiles.FolderLock``, the one
``costsim run --out OUT`` takes, so neither writes into or swaps away the other's folder) and
``OUT/.sweep.lock``, which keeps two sweeps apart even where the parent is not writable.
"""

from __future__ import annotations

import contextlib
import errno
import functools
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

from costsim.runs.outfiles import NO_ROOM, FolderLock, OutputError, fsync, input_at, kind_of, why_not_written
from costsim.runs.taskfiles import META_KEY, RUNS, TaskId, listed, read_task_file, strays, write_task_file  # noqa: F401 (META_KEY, RUNS: read by the report and the dashboard)
from costsim.traces.csvcells import write_csv

MANIFEST = "sweep.json"
LOCK = ".sweep.lock"
TABLES = ("means", "differences", "variants")
_TEMP = re.compile(r"\..+\.tmp-[0-9a-f]{8}")
_TEMP_OF = re.compile(r"\.(.+)\.tmp-[0-9a-f]{8}")  # write_atomic's temporary file of NAME
# Names a sweep writes at the top of OUT: a folder without a manifest may hold only these.
OURS = frozenset({MANIFEST, RUNS, LOCK} | {f"{t}.{ext}" for t in TABLES for ext in ("csv", "parquet")})
# The manifest fields that make two sweeps the same; "source" and "base" are paths, which change
# with the folder a sweep is started from, and are kept for information only. "code": costsim's
# source and the versions of the libraries its numbers depend on (``identity.code_identity``), so a
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


def manifest_text(data: dict) -> str:
    """The manifest as JSON: compact (no indentation or spaces: a sixth smaller than indented), one
    variant a line so that it stays readable. Read back, it is the same data, so a folder whose
    manifest was written indented resumes as well."""
    if not isinstance(data.get("variants"), list):
        return json.dumps(data, separators=(",", ":")) + "\n"
    rest = {k: v for k, v in data.items() if k != "variants"}
    head = json.dumps(rest, separators=(",", ":"))[:-1]
    lines = ",\n".join(json.dumps(v, separators=(",", ":")) for v in data["variants"])
    return f'{head}{"," if rest else ""}"variants":[\n{lines}\n]}}\n'


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


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)


class SweepFolder:
    """Context manager over ``OUT`` for one sweep (``manifest`` describes it).

    ``check()`` (read only, before anything starts) refuses a file, a folder of other files, a
    folder holding a different sweep or stray files in ``runs/``, and a folder where the sweep
    would overwrite one of its ``inputs`` (paths: the sweep file, the base, its trace). Entering
    creates the folder, takes the locks, checks again under them, removes temporary files of
    interrupted writes and writes the manifest if absent.
    Problems are ``OutputError`` (a ScenarioError: the CLI exits 2) naming ``label`` and the folder.
    """

    def __init__(self, path: str | os.PathLike[str], manifest: dict, label: str = "out",
                 inputs: list[Path] | tuple = ()):
        self.shown = os.fspath(path)
        self.path = Path(self.shown)
        self.manifest = manifest
        self.label = label
        self.inputs = [Path(p) for p in inputs]
        self._lock_fd: int | None = None
        self._beside: FolderLock | None = None

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
        self._check_inputs()
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
        found = strays(self.path, [v["id"] for v in self.manifest["variants"]], self.manifest["replications"])
        if found:
            self._fail(f"holds files in {RUNS}/ that are not this sweep's tasks ({listed(found)}): another sweep's, "
                       "a second copy of a task, or not a regular file where a task's file goes; move them out of "
                       "the folder and run again")

    def _check_inputs(self) -> None:
        """None of the sweep's inputs is a file it writes (the manifest, a table, a task file)."""
        written = [self.path / MANIFEST, *(self.path / f"{t}.{ext}" for t in TABLES for ext in ("csv", "parquet"))]
        for path in written:
            hit = input_at(path, self.inputs)
            if hit is not None:
                self._fail(f"{path.name} in it is {hit}, which this sweep reads and would overwrite; choose "
                           "another folder")
        hit = input_at(self.path / RUNS, self.inputs, inside=True)
        if hit is not None:
            self._fail(f"its {RUNS}/ folder holds {hit}, which this sweep reads; choose another folder")

    def _read_manifest(self) -> dict | None:
        path = self.path / MANIFEST
        if not os.path.lexists(path):
            return None
        if kind_of(path) is not None:  # reading a FIFO would block
            self._fail(f"has a {MANIFEST} that is {kind_of(path)}, not a file; remove it or choose another folder")
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
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # The lock beside the folder first, so that nothing is created inside a folder that a
            # run is about to swap into place (it would find our runs/ there and refuse).
            self._beside = FolderLock(self.path, self.label, self.shown, required=False).__enter__()
            (self.path / RUNS).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            self.__exit__()
            self._fail(f"cannot be created or written: {why_not_written(err)}")
        except BaseException:
            self.__exit__()
            raise
        try:
            self._lock()
            self.check()  # again, under the lock: another sweep may have written it meanwhile
            self._remove_temporaries()
            if not (self.path / MANIFEST).exists():
                text = manifest_text(self.manifest)
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
        if self._beside is not None:
            self._beside.__exit__()
            self._beside = None

    # -- tasks and tables ---------------------------------------------------------------------------

    def task_path(self, variant: str, replication: int) -> Path:
        return self.path / RUNS / f"variant={variant}" / f"replication={replication}.parquet"

    def read_task(self, task: TaskId) -> tuple[pd.DataFrame | None, str | None]:
        """A finished task's table, ``variant`` column restored, and None; or None and why the
        file is not trusted (None, None: no file). A file that fails (damaged, edited, another
        task's, without a checksum) is run again and replaced (``taskfiles.read_task_file``)."""
        path = self.task_path(task.variant, task.replication)
        if not os.path.lexists(path):
            return None, None
        frame, why = read_task_file(path, task)
        if frame is None:
            return None, why
        frame.insert(0, "variant", task.variant)
        return frame, None

    def write_task(self, frame: pd.DataFrame, task: TaskId, meta: dict) -> Path:
        """One finished task (``frame`` has ``variant`` and ``replication`` columns; ``variant`` goes
        into the folder name, not the file); ``meta`` is recorded with the task's checksum."""
        path = self.task_path(task.variant, task.replication)
        try:
            path.parent.mkdir(exist_ok=True)
            write_atomic(path, lambda p: write_task_file(frame.drop(columns="variant"), p, task, meta))
        except OSError as err:
            self._write_failed(err, path)
        return path

    def write_tables(self, tables: dict[str, pd.DataFrame]) -> list[Path]:
        """``NAME.csv`` and ``NAME.parquet`` for each table, each written atomically."""
        written = []
        for name, frame in tables.items():
            csv, parquet = self.path / f"{name}.csv", self.path / f"{name}.parquet"
            try:
                write_atomic(csv, functools.partial(write_csv, frame))  # formula-like cells guarded
                write_atomic(parquet, functools.partial(_write_parquet, frame))
            except OSError as err:
                self._write_failed(err, csv)
            written += [csv, parquet]
        return written

    def _write_failed(self, err: OSError, path: Path):
        """A failed write named by the file it was for (not its hidden temporary file), with what to
        do: free some space only when the disk is full."""
        if err.filename:  # the file the error is about; a temporary file stands for the one it replaces
            failed = Path(os.fsdecode(err.filename))
            temp = _TEMP_OF.fullmatch(failed.name)
            path = failed.with_name(temp.group(1)) if temp else failed
        name = path.relative_to(self.path) if self.path in path.parents else path
        what = "free some space" if err.errno in NO_ROOM else "fix that"
        self._fail(f"could not write {name}: {err.strerror or err}; the tasks finished before are saved: "
                   f"{what} and run the same sweep again to resume")
