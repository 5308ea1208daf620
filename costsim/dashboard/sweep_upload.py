"""Uploaded sweep output for the dashboard's Sweep tab, read in memory and refused when unsafe.

What an upload may be: the zipped output folder of ``costsim sweep --out DIR`` or task files
``runs/variant=<id>/replication=<r>.parquet`` from it (or one Parquet table of a sweep's runs with a
``variant`` column). Nothing is extracted to disk; a zip with a member that is absolute, climbs out
(``..``), is a link or is encrypted is refused whole, as is one bigger than the limits when unpacked
(the dashboard's trace upload limit per file, ``UNPACKED_FACTOR`` times it unpacked). The variants'
scenarios are not rebuilt: that would read the base scenario the manifest names on the server.

Everything is read in a worker process (``workers.read_in_worker``: one of the server's worker
processes, the per-process memory limit, the run time limit), never in the server. There a Parquet file is refused from its
footer when it declares more than ``MAX_ROWS`` rows, ``MAX_COLUMNS`` columns or more bytes than the
unpacked limit (rows × columns × 8 counting too); its text columns are read dictionary-encoded and
their decoded size counted exactly before any is decoded, so a few kilobytes of one long string
repeated millions of times are refused, not inflated. JSON metadata (the manifest, ``costsim.sweep``,
``pandas``) nesting deeper than ``MAX_JSON_DEPTH`` or of the wrong shape is refused by name; any
other damage is a refusal naming the upload, never an error page.

A task file is trusted as ``costsim report`` trusts it (``costsim.runs.taskfiles``): its checksum
must match its contents and the task its metadata names, that task must be the one its name says and
the manifest lists (when one came), and no task may come twice. A zip member under ``runs/`` that is
not a task file (another name, a second copy) is a stray, and the zip is refused naming it. Only a
plain table with a ``variant`` column, which has no checksum, is read as it is.
"""

from __future__ import annotations

import io
import json
import re
import stat
import sys
import zipfile
from pathlib import PurePosixPath
from typing import Any

import pandas as pd

from costsim.dashboard import Limits, Upload
from costsim.dashboard.uploads import DEFAULT_LIMITS
from costsim.dashboard.workers import WorkStopped, read_in_worker
from costsim.errors import CostsimError
from costsim.runs.dataset import MANIFEST, META_KEY
from costsim.runs.isolated import Call
from costsim.runs.isolated_child import Child
from costsim.runs.taskfiles import HIDDEN, TaskId, claimed_task, frame_problem, listed, table_problem
from costsim.runs.workerpool import WorkerPool
from costsim.scenario import Problem, ScenarioError

UNPACKED_FACTOR = 4  # a zip may unpack (and its tables decode) to this many times the upload limit
MAX_MEMBERS = 20_000  # zip members (a 1,000-variant × 10-replication sweep is 10,000 task files)
MAX_ROWS = 1_000_000  # summary rows of an uploaded sweep, all files together (10,000 tasks × 100 options)
MAX_COLUMNS = 1_000  # columns of one Parquet file (a sweep's runs have about 60)
MAX_JSON_DEPTH = 32  # nesting of the manifest and of a task file's metadata (a sweep's is 3)
REPLY_FACTOR = 3  # the child's tables may pickle to this many times the unpacked limit
READ = "costsim.dashboard.sweep_upload:read_in_child"  # what the reading worker runs
# What reading needs, imported before the worker's memory limit is set: the limit bounds the reading.
READ_IMPORTS = ("pyarrow.compute", "pyarrow.parquet", "costsim.runs.stats", "costsim.runs.sweep")
_TASK = re.compile(r"(?:^|/)runs/variant=([^/]+)/replication=(\d+)\.parquet$")


def _refused(name: str, message: str) -> ScenarioError:
    return ScenarioError(name, [Problem((), message)])


def _caps(limits: Limits) -> tuple[int, int]:
    """(bytes an upload may have, bytes its zip may unpack to): the trace upload limit, the
    dashboard's largest (a sweep's runs are about 10 kB per task)."""
    upload = int(limits.trace_upload_mb * 2**20)
    return upload, upload * UNPACKED_FACTOR


def _member_problem(info: zipfile.ZipInfo) -> str:
    """Why a zip member is refused; "" if it is fine (nothing is extracted: this is belt and braces)."""
    name = info.filename
    parts = PurePosixPath(name).parts
    if "\\" in name or "\0" in name or name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return "has an absolute or Windows path"
    if ".." in parts:
        return "climbs out of the folder (..)"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "is a symbolic link"
    if info.flag_bits & 0x1:
        return "is encrypted"
    return ""


def _is_stray(name: str) -> bool:
    """Whether a zip member is under a ``runs/`` folder without being a task file there (names
    starting with ``.`` or ``_`` skipped, as the report and Parquet readers skip them)."""
    parts = PurePosixPath(name).parts
    if "runs" not in parts[:-1] or any(p.startswith(HIDDEN) for p in parts):
        return False
    return not _TASK.search(name)


def _zip_members(upload: Upload, unpacked_cap: int) -> dict[str, bytes]:
    """The task files and manifest of a zipped sweep folder, read into memory within the caps."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(upload.data))
    except (zipfile.BadZipFile, ValueError, OSError) as err:
        raise _refused(upload.name, f"is not a readable zip file ({err})") from None
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise _refused(upload.name, f"holds {len(infos):,} files; the dashboard reads at most {MAX_MEMBERS:,}")
    for info in infos:
        why = _member_problem(info)
        if why:
            raise _refused(upload.name, f"member {info.filename!r} {why}: the zip is refused")
    stray = [i.filename for i in infos if not i.is_dir() and _is_stray(i.filename)]
    if stray:
        raise _refused(upload.name, f"holds files in runs/ that are not a sweep's tasks ({listed(stray)}): another "
                                    "sweep's, or a second copy of a task; zip the folder without them")
    wanted = [i for i in infos if not i.is_dir() and (_TASK.search(i.filename) or PurePosixPath(i.filename).name == MANIFEST)]
    declared = sum(i.file_size for i in wanted)
    if declared > unpacked_cap:
        raise _refused(upload.name, f"unpacks to {declared / 2**20:.1f} MiB; the dashboard reads at most "
                                    f"{unpacked_cap / 2**20:.1f} MiB")
    out, total = {}, 0
    for info in wanted:
        try:
            with archive.open(info) as f:
                data = f.read(unpacked_cap - total + 1)  # a header may lie about the size: read bounded
        except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError, ValueError) as err:
            raise _refused(upload.name, f"member {info.filename!r} cannot be read ({err})") from None
        total += len(data)
        if total > unpacked_cap:
            raise _refused(upload.name, f"unpacks to more than {unpacked_cap / 2**20:.1f} MiB; the dashboard reads "
                                        "at most that")
        out[info.filename] = data
    return out


def _json(where: str, raw: bytes | str, what: str) -> Any:
    """JSON text as data, refused (naming ``where`` and ``what``) when it is not JSON or nests
    deeper than ``MAX_JSON_DEPTH``."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise _refused(where, f"{what} nests deeper than {MAX_JSON_DEPTH} levels: not a costsim sweep's") from None
    except ValueError as err:
        raise _refused(where, f"{what} is not JSON ({err})") from None
    stack = [(value, 1)]
    while stack:  # iteratively: a deep value must not exhaust the stack here either
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise _refused(where, f"{what} nests deeper than {MAX_JSON_DEPTH} levels: not a costsim sweep's")
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((c, depth + 1) for c in children)
    return value


def _is_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _task_info(where: str, metadata: dict | None) -> dict:
    """A task file's ``costsim.sweep`` metadata ({} when absent); refused when it is damaged: not a
    JSON object, a ``variant`` that is not text or a number, ``params`` that are not an object."""
    raw = (metadata or {}).get(META_KEY)
    if raw is None:
        return {}
    info = _json(where, raw, "its costsim.sweep metadata")
    if not isinstance(info, dict) or ("variant" in info and not _is_id(info["variant"])) or \
            not isinstance(info.get("params", {}), dict):
        raise _refused(where, "has damaged costsim.sweep metadata (not the variant and params a sweep writes)")
    return info


def _decoded_bytes(table) -> int:
    """Bytes ``table`` takes once every dictionary-encoded column is decoded, counted from the
    dictionary's value lengths and the indices (nothing is decoded to count it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = 0
    for column in table.columns:
        for chunk in column.chunks:
            if pa.types.is_dictionary(chunk.type) and (pa.types.is_binary(chunk.type.value_type) or
                                                       pa.types.is_string(chunk.type.value_type)):
                lengths = pc.binary_length(chunk.dictionary).take(chunk.indices)
                total += int(pc.sum(lengths).as_py() or 0) + 4 * len(chunk)  # values and their offsets
            else:
                total += chunk.nbytes
    return total


def _parquet(name: str, data: bytes, rows_left: int,
             bytes_left: int) -> tuple[pd.DataFrame, dict, int, TaskId | None]:
    """A Parquet file's table, its ``costsim.sweep`` metadata, the bytes it decodes to and the task
    it holds (None for a file without that metadata), refused from its footer when it declares more
    rows, columns or bytes than are left, before decoding its text columns when they would decode
    to more, and when it has that metadata but its checksum does not match (see the module)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(io.BytesIO(data)).metadata
        declared = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        least = max(declared, meta.num_rows * meta.num_columns * 8)  # a table cell is at least 8 bytes in pandas
        if meta.num_columns > MAX_COLUMNS:
            raise _refused(name, f"has {meta.num_columns:,} columns; the dashboard reads at most {MAX_COLUMNS:,}")
        if meta.num_rows > rows_left or least > bytes_left:
            raise _refused(name, f"holds {meta.num_rows:,} rows × {meta.num_columns:,} columns ({least / 2**20:,.1f} MiB "
                                 f"at least): more than the dashboard reads ({MAX_ROWS:,} rows, {bytes_left / 2**20:,.1f} "
                                 "MiB left of its limit)")
        schema = pq.ParquetFile(io.BytesIO(data)).schema_arrow
        info = _task_info(name, schema.metadata)
        if b"pandas" in (schema.metadata or {}):
            _json(name, schema.metadata[b"pandas"], "its pandas metadata")
        text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_binary(f.type) or
                pa.types.is_large_string(f.type) or pa.types.is_large_binary(f.type)]
        table = pq.ParquetFile(io.BytesIO(data), read_dictionary=text).read(use_threads=False)
        decoded = _decoded_bytes(table)
        if decoded > bytes_left:
            raise _refused(name, f"decodes to {decoded / 2**20:,.1f} MiB; the dashboard reads at most "
                                 f"{bytes_left / 2**20:,.1f} MiB more")
        for i, field in enumerate(table.schema):  # decode what was read encoded only to count it
            if field.name in text and pa.types.is_dictionary(field.type):
                table = table.set_column(i, schema.field(i), table.column(i).cast(schema.field(i).type))
        task = _verified(name, table, info)
        frame = table.to_pandas()
        why = frame_problem(frame, task) if task is not None else None
        if why is not None:
            raise _refused(name, f"{why}: not as the sweep wrote it")
    except (CostsimError, MemoryError):  # our own refusal (a ValueError too); Arrow's MemoryError: the limit
        raise
    except (pa.ArrowException, OSError, ValueError) as err:
        raise _refused(name, f"is not a readable Parquet file ({err})") from None
    except (KeyError, TypeError, IndexError, AttributeError) as err:  # pandas metadata of the wrong shape
        raise _refused(name, f"has damaged pandas metadata ({type(err).__name__}: {err})") from None
    return frame, info, decoded, task


def _verified(name: str, table, info: dict) -> TaskId | None:
    """The task a file with ``costsim.sweep`` metadata holds, once its checksum is checked against
    its contents and that task; None for a file without that metadata."""
    if not info:
        return None
    task = claimed_task(info)
    if task is None:
        raise _refused(name, "has costsim.sweep metadata that names no task (variant, replication, seed and "
                             "scenario_sha256): not a task file a sweep wrote")
    why = table_problem(table, task)
    if why is not None:
        raise _refused(name, f"{why}; the upload is refused (run the sweep again, or leave that file out)")
    return task


def _manifest(where: str, data: bytes) -> tuple[list[tuple[str, dict]], int, dict[tuple[str, int], TaskId]]:
    """A sweep manifest's (variant id, params) in order, its replications and every task it lists
    by (variant, replication); refused naming the field when it is not the shape ``costsim sweep``
    writes."""
    from costsim.runs.sweepfile import replication_seed

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _refused(where, "is not a sweep manifest (not UTF-8 text)") from None
    manifest = _json(where, text, "the manifest")
    if not isinstance(manifest, dict):
        raise _refused(where, "is not a sweep manifest (not a JSON object)")
    variants, replications = manifest.get("variants", []), manifest.get("replications", 1)
    if not isinstance(variants, list):
        raise _refused(where, "is not a sweep manifest: variants is not a list")
    if replications is None:
        replications = 1
    if isinstance(replications, bool) or not isinstance(replications, int) or replications < 1:
        raise _refused(where, f"is not a sweep manifest: replications must be a whole number ≥ 1 (got {replications!r:.40})")
    ids = []
    for i, v in enumerate(variants):
        if not isinstance(v, dict) or not _is_id(v.get("id")) or not isinstance(v.get("params") or {}, dict):
            raise _refused(where, f"is not a sweep manifest: variants.{i} is not an id with params")
        if not isinstance(v.get("scenario_sha256"), str):
            raise _refused(where, f"is not a sweep manifest: variants.{i}.scenario_sha256 is missing")
        ids.append((str(v["id"]), v.get("params") or {}))
    seed = manifest.get("seed")
    if ids and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63):
        raise _refused(where, "is not a sweep manifest: seed is missing or not a whole number")
    root_seed = seed if isinstance(seed, int) else 0  # checked above whenever there are variants
    tasks = {(str(v["id"]), r): TaskId(str(v["id"]), r, replication_seed(root_seed, r), v["scenario_sha256"],
                                       v.get("params") or {})
             for v in variants for r in range(replications)} if ids else {}
    return ids, replications, tasks


def _required() -> list[str]:
    """The summary columns the tab's tables and verdicts read (``fair.fair_rows``, ``verdict.MEANS``)."""
    from costsim.decisions.verdict import MEANS
    from costsim.runs.sweep import METRICS

    derived = {"fair_total_usd", "completion", "cost_per_work_gpu_hour_usd", "waiting_cost_usd"}
    base = ["replication", "option", "kind", "pricing", "jobs_submitted", "jobs_completed", "offered_load",
            "stale_share", "unfinished_rent_usd", "work_submitted_gpu_hours", "work_unfinished_gpu_hours"]
    return list(dict.fromkeys([*base, *METRICS, *(m for m in MEANS if m not in derived)]))


def _check_sizes(uploads: list[Upload], limits: Limits) -> None:
    """Each upload within the upload limit and of a kind read here (cheap: before any reading)."""
    upload_cap, _ = _caps(limits)
    for up in uploads:
        if len(up.data) > upload_cap:
            raise _refused(up.name, f"is {len(up.data) / 2**20:.1f} MiB; the dashboard accepts at most "
                                    f"{limits.trace_upload_mb:g} MiB")
        if not up.name.lower().endswith((".zip", ".parquet")):
            raise _refused(up.name, "is neither a .zip of a sweep's folder nor a .parquet file")


def _frames(uploads: list[Upload], limits: Limits) -> tuple[list[tuple[str, pd.DataFrame]], tuple | None, dict]:
    """Every uploaded task's (where, rows with ``variant``), the manifest's (variants, replications)
    if one came, and params by variant."""
    _check_sizes(uploads, limits)
    _, unpacked_cap = _caps(limits)
    frames, manifest, rows, decoded = [], None, 0, 0
    params: dict[str, dict] = {}
    tasks: dict[tuple[str, int], str] = {}  # each task file's (variant, replication): where it came from
    claimed: list[tuple[str, TaskId]] = []
    for up in uploads:
        members = _zip_members(up, unpacked_cap) if up.name.lower().endswith(".zip") else {up.name: up.data}
        for name, data in members.items():
            where = f"{up.name}: {name}" if name != up.name else up.name
            if PurePosixPath(name).name == MANIFEST:
                got = _manifest(where, data)
                if manifest is not None and got != manifest:
                    raise _refused(where, "is a second sweep's manifest: upload one sweep's output at a time")
                manifest = got
                continue
            frame, info, size, claim = _parquet(where, data, MAX_ROWS - rows, unpacked_cap - decoded)
            rows, decoded = rows + len(frame), decoded + size
            task = _TASK.search(name)
            if task and claim is None:
                raise _refused(where, "has no costsim sweep metadata: it was not written by a sweep, or is damaged")
            if claim is not None:
                key = (claim.variant, claim.replication)
                if task and (task.group(1), int(task.group(2))) != key:
                    raise _refused(where, f"holds variant {claim.variant}, replication {claim.replication}: not the "
                                          "task its name says (a file renamed or moved)")
                if key in tasks:
                    raise _refused(where, f"is a second copy of variant {claim.variant}, replication "
                                          f"{claim.replication} (also in {tasks[key]})")
                tasks[key] = where
                claimed.append((where, claim))
            if "variant" not in frame:
                variant = task.group(1) if task else info.get("variant")
                if variant is None:
                    raise _refused(where, "is not a task file of a costsim sweep (no variant in its name or metadata): "
                                          "upload runs/variant=<id>/replication=<r>.parquet files or the zipped folder")
                frame.insert(0, "variant", str(variant))
                if isinstance(info.get("params"), dict):
                    params.setdefault(str(variant), info["params"])
            frames.append((where, frame))
    listed = manifest[2] if manifest is not None else {}
    for where, claim in claimed if listed else ():
        expected = listed.get((claim.variant, claim.replication))
        if expected is None:
            raise _refused(where, f"is not a task of this sweep (its manifest lists no variant {claim.variant}, "
                                  f"replication {claim.replication}): another sweep's file; leave it out")
        if expected != claim:
            wrong = [k for k, v in expected.fields().items() if claim.fields().get(k) != v]
            raise _refused(where, f"is not this task's file (its {', '.join(wrong)} differ from the manifest's)")
    return frames, manifest, params


def read_sweep_uploads(uploads: list[Upload], limits: Limits = DEFAULT_LIMITS, on_wait=None, *,
                       pool: WorkerPool | None = None):
    """(SweepResults, notes) from uploaded sweep output (see the module), read in a worker process
    holding one of ``pool``'s processes (the server's; None: a pool of this call's own);
    ScenarioError naming the file (and zip member) when it is too large, unsafe, damaged or not a
    sweep's, or when reading it passed the memory or time limit. Options are named, not described:
    the variants' scenarios are not rebuilt (that would read the base on the server).
    ``on_wait(seconds)`` while it waits for a worker or reads."""
    if not uploads:
        raise _refused("sweep upload", "no file: upload the zipped folder of costsim sweep --out or its Parquet files")
    _check_sizes(uploads, limits)
    names = ", ".join(u.name for u in uploads[:3]) + (" …" if len(uploads) > 3 else "")
    try:
        return read_in_worker(upload_call(uploads, limits), limits=limits, what="the upload", pool=pool,
                              on_wait=on_wait)
    except WorkStopped as err:
        raise _refused(names, str(err)) from None


def upload_call(uploads: list[Upload], limits: Limits) -> Call:
    """The call that reads ``uploads`` in a worker: the per-process memory limit, a backstop past
    the run time limit, the reading's imports first, a reply of at most ``REPLY_FACTOR`` times
    the unpacked limit."""
    return Call(target=READ, payload=(uploads, limits), memory_bytes=int(limits.process_memory_gb * 2**30),
                backstop_s=int(limits.run_seconds) + 30, imports=READ_IMPORTS,
                max_reply_bytes=REPLY_FACTOR * _caps(limits)[1])


def read_in_child(payload: tuple[list[Upload], Limits], child: Child):
    """``read_uploads_here`` in the reading worker; damage no check above foresaw is a refusal
    naming the uploads (the traceback goes to the server's log), never an error page."""
    uploads, limits = payload
    try:
        return read_uploads_here(uploads, limits)
    except (CostsimError, MemoryError):
        raise
    except Exception as exc:
        import traceback

        traceback.print_exc(file=sys.stderr)
        names = ", ".join(u.name for u in uploads[:3]) + (" …" if len(uploads) > 3 else "")
        raise _refused(names, f"could not be read as a costsim sweep's output ({type(exc).__name__}): upload the "
                              "zipped folder costsim sweep --out wrote, or its runs Parquet files") from None


def read_uploads_here(uploads: list[Upload], limits: Limits = DEFAULT_LIMITS):
    """``read_sweep_uploads`` in this process (the child's work; tests call it directly)."""
    from costsim.runs.stats import differences_table, means_table
    from costsim.runs.sweep import METRICS, SweepResults, variant_cell  # a swept value as a cell, as sweep() shows it

    if not uploads:
        raise _refused("sweep upload", "no file: upload the zipped folder of costsim sweep --out or its Parquet files")
    frames, manifest, params = _frames(uploads, limits)
    if not frames:
        raise _refused(uploads[0].name, "holds no runs/variant=<id>/replication=<r>.parquet files: zip the whole "
                                        "folder costsim sweep --out wrote")
    need = _required()
    for where, frame in frames:
        missing = [c for c in need if c not in frame]
        if missing:
            raise _refused(where, f"has no column {', '.join(missing[:4])}{' …' if len(missing) > 4 else ''}: "
                                  "not a sweep's runs, or written by an older costsim (run the sweep again)")
    runs = pd.concat([f for _, f in frames], ignore_index=True)
    runs["variant"] = runs["variant"].astype(str)
    twice = runs.duplicated(["variant", "replication", "option"])
    if twice.any():
        r = runs[twice].iloc[0]
        raise _refused("sweep upload", f"variant {r['variant']}, replication {r['replication']} was uploaded twice")
    listed, replications, _ = manifest if manifest is not None else ([], 1, {})
    order = [vid for vid, _ in listed] or sorted(set(runs["variant"]))
    params = {**params, **dict(listed)}
    rank = {v: i for i, v in enumerate(order)}
    key = runs["variant"].map(lambda v: rank.get(v, len(rank))) * 1_000_000 + runs["replication"].astype("int64")
    runs = runs.iloc[key.argsort(kind="stable")].reset_index(drop=True)  # stable: option order kept
    runs = runs[["variant", *[c for c in runs.columns if c != "variant"]]]
    present = list(dict.fromkeys(runs["variant"]))
    variants = pd.DataFrame([{"variant": v, **{k: variant_cell(x) for k, x in params.get(v, {}).items()}} for v in present])
    notes = []
    if manifest is not None:
        expected = len(listed) * replications
        done = runs.groupby(["variant", "replication"]).ngroups
        if done < expected:
            notes.append(f"{done} of {expected} tasks of this sweep are in the upload: the tables cover those only")
    return SweepResults(runs, means_table(runs, METRICS), differences_table(runs, METRICS), variants, {}), notes


__all__ = ["MAX_COLUMNS", "MAX_JSON_DEPTH", "MAX_MEMBERS", "MAX_ROWS", "UNPACKED_FACTOR", "read_in_child",
           "read_sweep_uploads", "read_uploads_here", "upload_call"]
