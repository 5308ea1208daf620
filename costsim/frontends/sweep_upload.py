"""Uploaded sweep output for the dashboard's Sweep tab, read in memory and refused when unsafe.

What an upload may be: the zipped output folder of ``costsim sweep --out DIR`` or task files
``runs/variant=<id>/replication=<r>.parquet`` from it (or one Parquet table of a sweep's runs with a
``variant`` column). Nothing is extracted to disk; a zip with a member that is absolute, climbs out
(``..``), is a link or is encrypted is refused whole, as is one bigger than the limits when unpacked
(the dashboard's trace upload limit per file, ``UNPACKED_FACTOR`` times it unpacked). The variants'
scenarios are not rebuilt: that would read the base scenario the manifest names on the server.
"""

from __future__ import annotations

import io
import json
import re
import stat
import zipfile
from pathlib import PurePosixPath

import pandas as pd

from costsim.frontends.dashboard import Limits, Upload
from costsim.runs.dataset import MANIFEST, META_KEY
from costsim.scenario import Problem, ScenarioError

UNPACKED_FACTOR = 4  # a zip may unpack to this many times the upload limit
MAX_MEMBERS = 20_000  # zip members (a 1,000-variant × 10-replication sweep is 10,000 task files)
MAX_ROWS = 5_000_000  # summary rows of an uploaded sweep, all files together
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


def _parquet(name: str, data: bytes, rows_left: int, unpacked_cap: int) -> tuple[pd.DataFrame, dict]:
    """A Parquet file's table and its ``costsim.sweep`` metadata, refused before reading when its
    footer promises more rows or bytes than allowed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        f = pq.ParquetFile(io.BytesIO(data))
        meta = f.metadata
        size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if meta.num_rows > rows_left or size > unpacked_cap:
            raise _refused(name, f"holds {meta.num_rows:,} rows ({size / 2**20:.1f} MiB): more than the dashboard "
                                 f"reads ({MAX_ROWS:,} rows, {unpacked_cap / 2**20:.1f} MiB in all)")
        table = f.read()
        info = json.loads((table.schema.metadata or {}).get(META_KEY, b"{}"))
        return table.to_pandas(), info if isinstance(info, dict) else {}
    except (pa.ArrowException, OSError, ValueError) as err:
        raise _refused(name, f"is not a readable Parquet file ({err})") from None


def _required() -> list[str]:
    """The summary columns the tab's tables and verdicts read (``fair.fair_rows``, ``verdict.MEANS``)."""
    from costsim.decisions.verdict import MEANS
    from costsim.runs.sweep import METRICS

    derived = {"fair_total_usd", "completion", "cost_per_work_gpu_hour_usd", "waiting_cost_usd"}
    base = ["replication", "option", "kind", "pricing", "jobs_submitted", "jobs_completed", "offered_load",
            "stale_share", "unfinished_rent_usd", "work_submitted_gpu_hours", "work_unfinished_gpu_hours"]
    return list(dict.fromkeys([*base, *METRICS, *(m for m in MEANS if m not in derived)]))


def _frames(uploads: list[Upload], limits: Limits) -> tuple[list[tuple[str, pd.DataFrame]], dict | None, dict]:
    """Every uploaded task's (where, rows with ``variant``), the manifest if one came, and params by variant."""
    upload_cap, unpacked_cap = _caps(limits)
    frames, manifest, params, rows = [], None, {}, 0
    for up in uploads:
        if len(up.data) > upload_cap:
            raise _refused(up.name, f"is {len(up.data) / 2**20:.1f} MiB; the dashboard accepts at most "
                                    f"{limits.trace_upload_mb:g} MiB")
        if up.name.lower().endswith(".zip"):
            members = _zip_members(up, unpacked_cap)
        elif up.name.lower().endswith(".parquet"):
            members = {up.name: up.data}
        else:
            raise _refused(up.name, "is neither a .zip of a sweep's folder nor a .parquet file")
        for name, data in members.items():
            where = f"{up.name}: {name}" if name != up.name else up.name
            if PurePosixPath(name).name == MANIFEST:
                try:
                    manifest = json.loads(data.decode("utf-8"))
                except ValueError as err:
                    raise _refused(where, f"is not a sweep manifest ({err})") from None
                continue
            frame, info = _parquet(where, data, MAX_ROWS - rows, unpacked_cap)
            rows += len(frame)
            task = _TASK.search(name)
            if "variant" not in frame:
                variant = task.group(1) if task else info.get("variant")
                if variant is None:
                    raise _refused(where, "is not a task file of a costsim sweep (no variant in its name or metadata): "
                                          "upload runs/variant=<id>/replication=<r>.parquet files or the zipped folder")
                frame.insert(0, "variant", str(variant))
                if isinstance(info.get("params"), dict):
                    params.setdefault(str(variant), info["params"])
            frames.append((where, frame))
    return frames, manifest if isinstance(manifest, dict) else None, params


def read_sweep_uploads(uploads: list[Upload], limits: Limits = Limits()):
    """(SweepResults, notes) from uploaded sweep output (see the module); ScenarioError naming the
    file (and zip member) when it is too large, unsafe or not a sweep's. Options are named, not
    described: the variants' scenarios are not rebuilt (that would read the base on the server)."""
    from costsim.runs.stats import differences_table, means_table
    from costsim.runs.sweep import METRICS, SweepResults, _cell  # a swept value as a cell, as sweep() shows it

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
    listed = [v for v in (manifest or {}).get("variants", []) if isinstance(v, dict) and "id" in v]
    order = [str(v["id"]) for v in listed] or sorted(set(runs["variant"]))
    params = {**params, **{str(v["id"]): v.get("params") or {} for v in listed}}
    rank = {v: i for i, v in enumerate(order)}
    key = runs["variant"].map(lambda v: rank.get(v, len(rank))) * 1_000_000 + runs["replication"].astype("int64")
    runs = runs.iloc[key.argsort(kind="stable")].reset_index(drop=True)  # stable: option order kept
    runs = runs[["variant", *[c for c in runs.columns if c != "variant"]]]
    present = list(dict.fromkeys(runs["variant"]))
    variants = pd.DataFrame([{"variant": v, **{k: _cell(x) for k, x in params.get(v, {}).items()}} for v in present])
    notes = []
    if manifest is not None:
        expected = len(listed) * int(manifest.get("replications") or 1)
        done = runs.groupby(["variant", "replication"]).ngroups
        if done < expected:
            notes.append(f"{done} of {expected} tasks of this sweep are in the upload: the tables cover those only")
    return SweepResults(runs, means_table(runs, METRICS), differences_table(runs, METRICS), variants, {}), notes


__all__ = ["MAX_MEMBERS", "MAX_ROWS", "UNPACKED_FACTOR", "read_sweep_uploads"]
