"""Runs kept on disk between dashboard server starts, so a server started again shows a scenario it
has run before (the first screen's baseline above all) without simulating it again.

A run is a pure function of its scenario, its seed and the code that ran it: an entry is found by
the run's cache key (``bounded.run_key``: every field at its exact value, the trace file's size and
modification time, the seed) together with ``code_identity`` (every file of the costsim package and
the versions of the libraries a run or its pickle depends on). Code that changed, or a library
upgraded, never finds an older entry; those are dropped as the folder passes its byte limit, least
recently used first.

The folder is the user's own (``default_folder``: ``COSTSIM_CACHE_DIR``, else the XDG cache
folder), created private (mode 0700): its files are pickles, which run code when loaded, so it
must be no one else's to write. Imports nothing heavy: the dashboard's workers check it before
their first run.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import tempfile
from collections.abc import Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

LIBRARIES = ("numpy", "pandas", "pyarrow", "scipy", "simpy", "pydantic")  # what a run or its pickle reads
SUFFIX = ".run"


@functools.cache
def code_identity() -> str:
    """``identity_of`` the installed costsim package: about 10 ms, once per process."""
    return identity_of(resources.files("costsim"))


def identity_of(package: Traversable) -> str:
    """A hex digest of the code a run depends on: every file under ``package`` (its relative path
    and bytes; compiled caches left out) and the versions of Python and of ``LIBRARIES``."""
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.sha256(sys.version.encode())
    for name in LIBRARIES:
        try:
            digest.update(f"\0{name}={version(name)}".encode())
        except PackageNotFoundError:
            digest.update(f"\0{name}=absent".encode())
    for relative, item in sorted(_files(package, "")):
        digest.update(b"\0" + relative.encode() + b"\0")
        digest.update(item.read_bytes())
    return digest.hexdigest()


def _files(folder: Traversable, prefix: str) -> list[tuple[str, Traversable]]:
    """Every file under ``folder`` with its path from there (``a/b.py``), ``__pycache__`` left out."""
    out = []
    for item in folder.iterdir():
        if item.is_file():
            out.append((prefix + item.name, item))
        elif item.is_dir() and item.name != "__pycache__":
            out += _files(item, f"{prefix}{item.name}/")
    return out


def server_disk(environ: Mapping[str, str]) -> DiskRuns | None:
    """The dashboard server's runs on disk: ``default_folder`` within ``Limits.disk_cache_mb``
    (``COSTSIM_DISK_CACHE_MB``); None when that is 0 or the limits are misconfigured (the
    dashboard says so itself)."""
    from costsim.dashboard.limits import Limits
    from costsim.errors import CostsimError

    try:
        limits = Limits.from_env(environ)
    except CostsimError:
        return None
    if limits.disk_cache_mb <= 0:
        return None
    return DiskRuns(default_folder(environ), int(limits.disk_cache_mb * 2**20))


def default_folder(environ: Mapping[str, str]) -> Path:
    """Where the runs are kept: ``COSTSIM_CACHE_DIR``; else ``$XDG_CACHE_HOME/costsim/runs``;
    else ``~/.cache/costsim/runs``."""
    if environ.get("COSTSIM_CACHE_DIR", "").strip():
        return Path(environ["COSTSIM_CACHE_DIR"]).expanduser()
    base = environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".cache") / "costsim" / "runs"


class DiskRuns:
    """Pickled runs (the bytes ``bounded.simulate_many`` returns) in ``folder``, by their cache key,
    at most ``max_bytes`` together. Each entry is one file named by a digest of the code identity
    and the key, holding the key too (read back and compared: a file is never taken for another
    key). Written atomically (a temporary file renamed into place), so a reader never sees half a
    run; a file that cannot be read is a miss. Safe across threads and processes."""

    def __init__(self, folder: Path, max_bytes: int, identity: str | None = None):
        self.folder = folder
        self.max_bytes = max_bytes
        self.identity = code_identity() if identity is None else identity

    def _path(self, key: str) -> Path:
        name = hashlib.sha256(f"{self.identity}\0{key}".encode()).hexdigest()
        return self.folder / f"{name}{SUFFIX}"

    def get(self, key: str) -> bytes | None:
        """The run kept under ``key``, or None; a hit counts as a use (its file's time is set now)."""
        path = self._path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        head = key.encode() + b"\0"
        if not data.startswith(head):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)
        return data[len(head):]

    def has(self, key: str) -> bool:
        """Whether a run is kept under ``key`` (its file exists; ``get`` reads it)."""
        return self._path(key).is_file()

    def put(self, key: str, blob: bytes) -> None:
        """Keep ``blob`` under ``key`` (not when it alone passes the limit), then drop the least
        recently used runs until the folder is within ``max_bytes``. A folder that cannot be
        written keeps nothing: the disk is a convenience, never a reason for a run to fail."""
        if len(blob) > self.max_bytes:
            return
        temporary = None
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.folder, suffix=".part")
            with os.fdopen(handle, "wb") as out:
                out.write(key.encode() + b"\0")
                out.write(blob)
            os.replace(temporary, self._path(key))
        except OSError:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
            return
        self.trim()

    def forget(self, key: str) -> None:
        """Drop the run kept under ``key`` (one that would not unpickle)."""
        with contextlib.suppress(OSError):
            self._path(key).unlink()

    def trim(self) -> None:
        """Drop runs, least recently used first, until those left take at most ``max_bytes``."""
        entries = []
        for path in self.folder.glob(f"*{SUFFIX}"):
            with contextlib.suppress(OSError):
                info = path.stat()
                entries.append((info.st_mtime_ns, info.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            with contextlib.suppress(OSError):
                path.unlink()
            total -= size


__all__ = ["DiskRuns", "code_identity", "default_folder", "identity_of", "server_disk"]
