"""Runs kept on disk between dashboard server starts, so a server started again shows a scenario it
has run before (the first screen's baseline above all) without simulating it again.

A run is a pure function of its scenario, the files it reads, its seed and the code that ran it: an
entry is found by the run's cache key (``bounded.run_key``: every field at its exact value, each file
the scenario names stamped by device, inode, size and modification and change times, the seed)
together with the code's identity (``costsim.runs.identity.code_identity``, as a sweep's stored
tasks: the sources a run's numbers come from and the versions of the libraries that can change
them). Code that changed, or a library upgraded, never finds an older entry; those are dropped as
the folder passes its byte limit, least recently used first.

The folder is the user's own (``default_folder``: ``COSTSIM_CACHE_DIR``, else the XDG cache
folder). Its files are pickles, which run code when loaded, so it is used only while it is a
folder (not a link) owned by this user that no one else may write or read (``private``): one made
here is created so (mode 0700); any other is left unused. Imports nothing heavy: the server asks
it before its spares start.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

NAME = re.compile(r"costsim-[0-9a-f]{64}\.run")  # an entry's file; nothing else in the folder is touched
PART = re.compile(r"costsim-[0-9a-f]{64}\.run\.[^/]*\.part")  # an entry being written
STALE_PART_S = 3600.0  # a write this old was cut short (a killed process): its part is dropped


def private(folder: Path) -> bool:
    """Whether ``folder`` is a directory (not a link) owned by this user that no one else may
    write or read: the only kind whose pickles are loaded."""
    try:
        info = os.stat(folder, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and info.st_mode & 0o077 == 0


class DiskRuns:
    """Pickled runs (the bytes ``bounded.simulate_many`` returns) in ``folder``, by their cache key,
    at most ``max_bytes`` together. Each entry is one file named by a digest of the code's identity
    and the key, holding the key too (read back and compared: a file is never taken for another
    key). Written whole (a temporary file flushed to disk, then renamed), so a reader never sees half
    a run; a file that cannot be read is a miss, a folder that cannot be written keeps nothing: the
    disk is a convenience, never a reason for a run to fail. Safe across threads and processes."""

    def __init__(self, folder: Path, max_bytes: int, identity: str | None = None):
        from costsim.runs.identity import code_identity

        self.folder = folder
        self.max_bytes = max_bytes
        self.identity = code_identity() if identity is None else identity

    def file_for(self, key: str) -> Path:
        """Where the run kept under ``key`` is (or would be)."""
        name = hashlib.sha256(f"{self.identity}\0{key}".encode()).hexdigest()
        return self.folder / f"costsim-{name}.run"

    def get(self, key: str) -> bytes | None:
        """The run kept under ``key``, or None; a hit counts as a use (its file's time is set now)."""
        path = self.file_for(key)
        if not private(self.folder):
            return None
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
        try:
            return private(self.folder) and self.file_for(key).is_file()
        except OSError:
            return False

    def put(self, key: str, blob: bytes) -> None:
        """Keep ``blob`` under ``key`` (not when it alone passes the limit), then drop the least
        recently used runs until the folder is within ``max_bytes``."""
        if len(blob) > self.max_bytes:
            return
        path = self.file_for(key)
        temporary = None
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not private(self.folder):
                return
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=f"{path.name}.", suffix=".part")
            with os.fdopen(handle, "wb") as out:
                out.write(key.encode() + b"\0")
                out.write(blob)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
            temporary = None
        except OSError:
            return
        finally:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
        self.trim()

    def forget(self, key: str) -> None:
        """Drop the run kept under ``key`` (one that would not unpickle)."""
        with contextlib.suppress(OSError):
            self.file_for(key).unlink()

    def trim(self) -> None:
        """Drop runs, least recently used first, until those left take at most ``max_bytes``; and
        the parts of writes cut short (``STALE_PART_S`` old). Only costsim's own files are looked at."""
        entries = []
        now = time.time()
        try:
            names = os.listdir(self.folder)
        except OSError:
            return
        for name in names:
            path = self.folder / name
            with contextlib.suppress(OSError):
                if PART.fullmatch(name) and now - path.stat().st_mtime > STALE_PART_S:
                    path.unlink()
                elif NAME.fullmatch(name):
                    info = path.stat()
                    entries.append((info.st_mtime_ns, info.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            with contextlib.suppress(OSError):
                path.unlink()
            total -= size


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


__all__ = ["DiskRuns", "default_folder", "private", "server_disk"]
