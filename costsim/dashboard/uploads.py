"""Scenarios a dashboard user brings: the shipped ones, uploads and their traces, within the limits
on what one session may ask of the server (``Limits``, from ``costsim.dashboard.limits``).

What a dashboard scenario may read (``check_file_fields``, the one rule for uploads, ``?s=`` links
and the editor): its own YAML, a trace CSV uploaded beside it (kept in a private temporary
folder) and the shipped traces by name (``traces/<file>.csv``); any other path in a file field
(``workload.trace``, a class's ``scaling.fit``) is refused before anything is opened, so no error
can show a server file's contents.

What an upload may write: only its trace, under the last component of the name the browser sent
(``safe_upload_name``: ``../../x.csv`` and ``C:\\x.csv`` are ``x.csv``), in a folder of its own
inside the private folder; the name is never joined to a path as sent. Messages name files as the
user knows them: server paths are replaced (``public_text``).
"""

from __future__ import annotations

import atexit
import hashlib
import math
import os
import re
import shutil
import tempfile
import threading
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from costsim.dashboard.limits import DEFAULT_LIMITS, Limits
from costsim.dashboard.shipped import SCENARIO_DIR, shipped_traces
from costsim.errors import CostsimError
from costsim.runs import api
from costsim.scenario import Problem, Scenario, ScenarioError, scenario_from_yaml
from costsim.scenario import scenario_from_data as schema_from_data  # schema only: reads no file

# --- Uploads --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Upload:
    """A file a user uploaded: its name as the browser sent it, and its bytes."""

    name: str
    data: bytes


_ROOTS: list[Path] = []  # every upload folder this process made: ``public_text`` takes them out of any text


def make_upload_root() -> Path:
    """A private folder (mode 0700) for this server's uploaded traces, removed at exit."""
    root = Path(tempfile.mkdtemp(prefix="costsim-uploads-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    _ROOTS.append(root)
    return root


def _too_big(upload: Upload, limit_mb: float, what: str) -> ScenarioError | None:
    if len(upload.data) <= limit_mb * 2**20:
        return None
    return ScenarioError(upload.name, [Problem((), f"{what} is {len(upload.data) / 2**20:.1f} MiB; the dashboard "
                                                   f"accepts at most {limit_mb:g} MiB")])


_DRIVE = re.compile(r"^[A-Za-z]:")
MAX_NAME_BYTES = 255  # a file name's length on Linux and macOS file systems


def safe_upload_name(raw: str, what: str = "trace upload") -> str:
    """The name an uploaded file is known and stored by: the last component of the name the
    browser sent, split at ``/`` and ``\\`` with a Windows drive (``C:``) dropped, so
    ``../../x.csv``, ``/abs/x.csv`` and ``C:\\Users\\x.csv`` are all ``x.csv``. A browser sends
    no folders; a hand-made request may. ScenarioError naming ``what`` when nothing usable is
    left: empty, ``.`` or ``..``, a control character (NUL included), longer than
    ``MAX_NAME_BYTES`` in UTF-8."""
    name = _DRIVE.sub("", re.split(r"[/\\]", _DRIVE.sub("", str(raw)))[-1])
    shown = repr(str(raw)[:80]) + ("…" if len(str(raw)) > 80 else "")
    why = None
    if name in ("", ".", ".."):
        why = "has no file name"
    elif any(unicodedata.category(c) in ("Cc", "Cs") for c in name):
        why = "holds a control character"
    elif len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        why = f"is longer than {MAX_NAME_BYTES} bytes"
    if why is not None:
        raise ScenarioError(what, [Problem((), f"the file name {shown} {why}: rename the file and upload it again")])
    return name


def public_text(text: str, root: Path | None = None) -> str:
    """``text`` without this server's paths: a stored upload's folder (``root/<hash>/``) and the
    shipped scenarios' folder are dropped from the names after them, any other mention of
    ``root`` becomes ``<uploads>``. ``root`` None: every upload folder ``make_upload_root`` made in
    this process (for code that does not hold the root, such as the decision tabs)."""
    roots = [root] if root is not None else list(_ROOTS)
    for spelling in dict.fromkeys(s for r in roots for s in (str(r), str(r.resolve()))):  # as given, links followed
        text = re.sub(re.escape(spelling) + r"[/\\][0-9a-f]{32}[/\\]", "", text)
        text = text.replace(spelling, "<uploads>")
    return text.replace(str(SCENARIO_DIR) + os.sep, "").replace(str(SCENARIO_DIR), "scenarios")


def public_error(err: CostsimError, root: Path) -> ScenarioError:
    """``err`` with ``public_text`` applied to its source and every message."""
    return ScenarioError(public_text(err.source, root),
                         [replace(p, message=public_text(p.message, root)) for p in err.problems])


def _trace_folder(data: bytes, root: Path) -> Path:
    """The folder of ``root`` an uploaded trace with these bytes is stored in (named by their hash)."""
    return root / hashlib.sha256(data).hexdigest()[:32]


def _store_trace(name: str, data: bytes, root: Path) -> Path:
    """The uploaded trace saved as ``name`` (from ``safe_upload_name``) in a folder under ``root``
    named by its content's hash: the same upload reuses the folder (and the cached run), a
    different one never shares it. Nothing is written anywhere else: the path is checked to be
    directly in that folder before writing."""
    folder = _trace_folder(data, root)
    path = folder / name
    if path.parent != folder or folder.parent != root or name != path.name:  # belt and braces
        raise ScenarioError("trace upload", [Problem((), f"the file name {name!r} is not usable")])
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        if not path.is_file():
            part = folder / f".{os.getpid()}.{threading.get_ident()}.part"
            part.write_bytes(data)
            os.replace(part, path)  # concurrent sessions never see half a file
    except OSError as exc:  # a name the file system refuses, a full disk: no path or traceback shown
        raise ScenarioError(name, [Problem((), f"the uploaded trace could not be stored ({exc.strerror})")]) from None
    return folder


def _nonfinite(value: Any, loc: tuple[str | int, ...]) -> Iterator[Problem]:
    """Every infinite or NaN number in validated scenario data, by field path. The schema may
    accept them (``.inf``, ``1e400``); a run with them hangs or prices nonsense."""
    if isinstance(value, float) and not math.isfinite(value):
        yield Problem(loc, f"must be a finite number (got {value})")
    elif isinstance(value, dict):
        for key, sub in value.items():
            yield from _nonfinite(sub, (*loc, key))
    elif isinstance(value, list | tuple):
        for i, sub in enumerate(value):
            yield from _nonfinite(sub, (*loc, i))


# --- What a scenario may read --------------------------------------------------------------------

Loc = tuple[str | int, ...]
_HASH_FOLDER = re.compile(r"[0-9a-f]{32}")


def file_fields(scenario: Scenario) -> list[tuple[Loc, str]]:
    """Every file a scenario names, by field path: ``workload.trace`` and each RL class's
    ``scaling.fit`` (the schema's only path fields); fields left null are not listed."""
    named: list[tuple[Loc, str | None]] = [(("workload", "trace"), scenario.workload.trace)]
    named += [(("workload", "classes", k, "scaling", "fit"), c.scaling.fit if c.scaling is not None else None)
              for k, c in enumerate(scenario.workload.classes)]
    return [(loc, value) for loc, value in named if value is not None]


def session_upload(scenario: Scenario, root: Path) -> Path | None:
    """The uploaded file a scenario from ``load_upload`` reads (its trace, in its folder of
    ``root``), None when the scenario reads no upload (shipped, a link, an upload without trace)."""
    folder = scenario.base_dir
    if scenario.workload.trace is None or folder.parent != root.resolve() or not _HASH_FOLDER.fullmatch(folder.name):
        return None
    return folder / scenario.workload.trace


def check_file_fields(scenario: Scenario, source: str, root: Path, uploaded: Path | None = None) -> Scenario:
    """The dashboard's one rule on files: every file field (``file_fields``) names the session's
    ``uploaded`` file by its name (read from its folder, which must be in ``root``) or a shipped
    trace by name (``traces/<file>.csv``, read from the shipped scenarios' folder). Returns the
    scenario reading its files from that folder (as it is when it names none). Anything else is a
    ScenarioError naming each field, raised from the names alone: no file is opened or looked up,
    so no message can say what a server file holds or whether it exists."""
    shipped = shipped_traces()
    mine = uploaded is not None and uploaded.parent.parent in (root, root.resolve())
    upload_name = uploaded.name if mine else None  # type: ignore[union-attr]
    named = file_fields(scenario)
    kinds = {loc: "upload" if value == upload_name else "shipped" if value in shipped else None for loc, value in named}
    readable = ", ".join([*([repr(upload_name)] if upload_name else []), *shipped]) or "none"
    problems = [Problem(loc, f"{value!r} is not read: the dashboard reads only the file uploaded with the scenario "
                             f"(by its name) and shipped files by name ({readable})")
                for loc, value in named if kinds[loc] is None]
    if "upload" in kinds.values():  # one folder per scenario: the upload's holds no shipped file
        problems += [Problem(loc, f"{value!r}: a scenario that reads an uploaded file reads no shipped file beside it; "
                                  "upload this one too, or name only shipped files")
                     for loc, value in named if kinds[loc] == "shipped"]
    if problems:
        raise ScenarioError(source, problems)
    if "upload" in kinds.values():
        return scenario.with_base_dir(uploaded.parent)  # type: ignore[union-attr]
    return scenario.with_base_dir(SCENARIO_DIR) if kinds else scenario


def dashboard_scenario(data: dict, base: Scenario, root: Path) -> Scenario:
    """An edited copy of ``base`` (plain data) validated and checked (``costsim.scenario_from_data``),
    its file fields checked by ``check_file_fields`` before any file is read (the session's upload
    being ``base``'s); every message without server paths (``public_error``)."""
    source = "scenario"
    try:
        edited = check_file_fields(schema_from_data(data, source, base.base_dir), source, root, session_upload(base, root))
        return api.check(edited, source)
    except CostsimError as err:
        raise public_error(err, root) from None


def load_upload(upload: Upload, trace: Upload | None, root: Path, limits: Limits = DEFAULT_LIMITS) -> Scenario:
    """An uploaded scenario, validated and checked like a file (ScenarioError), reading only the
    uploaded ``trace`` (saved under ``root``) or shipped traces named ``traces/<file>.csv``.

    Any other file (``workload.trace`` or a class's ``scaling.fit``: absolute, ``../``, a folder of
    the server) is refused by ``check_file_fields`` before anything is opened, so no message can
    carry a server file's contents. A link (``?s=``) is loaded the same way."""
    for up, limit, what in ((upload, limits.upload_mb, "the scenario"), (trace, limits.trace_upload_mb, "the trace")):
        err = _too_big(up, limit, what) if up is not None else None
        if err is not None:
            raise err
    text = upload.data.decode("utf-8", errors="replace")
    source = safe_upload_name(upload.name, "scenario upload")  # named as the user knows it, never a path
    scenario, lines = scenario_from_yaml(text, source, SCENARIO_DIR)  # schema only: reads no file
    problems = list(_nonfinite(scenario.model_dump(mode="python"), ()))
    if problems:
        raise ScenarioError(source, problems).with_lines(lines)
    trace_name = safe_upload_name(trace.name) if trace is not None else None
    if trace is not None and scenario.workload.trace != trace_name:
        raise ScenarioError(source, [Problem(("workload", "trace"), f"the uploaded trace {trace_name!r} is not used: set "
                                             f"`workload.trace: {trace_name}` to use it, or remove it")]).with_lines(lines)
    folder = _trace_folder(trace.data, root) if trace is not None else None
    try:
        scenario = check_file_fields(scenario, source, root,
                                     folder / trace_name if folder is not None and trace_name is not None else None)
    except CostsimError as err:
        raise public_error(err, root).with_lines(lines) from None
    if trace is not None:
        _store_trace(trace_name, trace.data, root)  # type: ignore[arg-type]
    try:
        return api.check(scenario, source, lines)
    except CostsimError as err:  # name the trace as the user knows it, not by its temporary path
        raise public_error(err, root) from None
