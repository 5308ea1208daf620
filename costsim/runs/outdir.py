"""A run's output folder: checked before simulating, locked against a concurrent run, written into
a staging folder beside it and swapped into place whole at the end.

For a folder ``DIR`` in ``PARENT`` everything happens in ``PARENT``:

- ``.DIR.lock``: the lock, held with ``flock`` for the whole run. The kernel releases it when the
  process dies, so a killed run never blocks the next one.
- ``.DIR.tmp-XXXXXXXX``: the staging folder the new results are written into.
- ``.DIR.old-XXXXXXXX``: the previous results, only between the two renames of the fallback swap.

The swap: on Linux ``renameat2(RENAME_EXCHANGE)`` exchanges the staging folder and ``DIR`` in one
step, so ``DIR`` always holds either the complete previous results or the complete new ones. Where
that call is missing (other systems, some file systems) two renames are used: ``DIR`` to
``.DIR.old-X``, then the staging folder to ``DIR``. A crash between the two leaves no ``DIR`` and
the previous results whole in ``.DIR.old-X``; the next run into ``DIR`` puts them back before it
starts. Every run also removes the leftovers (staging and old folders) of killed runs.

``DIR`` is replaced as a whole, so a folder holding files costsim did not write, or an input of the
run (its scenario, trace or points file), is refused rather than deleted. The check is made again
under the lock just before the swap (a file put there while the run simulated is kept and the swap
refused), and the previous results are then removed file by file, only the names costsim writes:
anything else found there (put in during the instant between that check and the swap) is moved
back into ``DIR``, never deleted. The lock (``costsim.runs.outfiles.FolderLock``) is the one a
sweep into ``DIR`` and a report or an imported trace written into ``DIR`` take too.

Problems are ``OutputError`` (a ``ScenarioError``): the CLI prints them and exits 2.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import re
import secrets
import shutil
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NoReturn

# check_out_file and publish_files live in costsim.runs.outfiles; imported here for older callers.
from costsim.runs.outfiles import (  # noqa: F401
    FolderLock,
    OutputError,
    check_out_file,
    fsync,
    input_at,
    kind_of,
    publish_files,
    signals_held,
    why_not_written,
)

MANIFEST = "costsim-run.json"  # what a run wrote (file names and sizes in bytes), written last
_SUFFIX = r"[0-9a-f]{8}"  # secrets.token_hex(4): the random part of staging and old folder names
_UNSAFE = re.compile(r"[^\w.-]+")  # anything but letters, digits, '_', '.', '-' (no separators)
MAX_NAME_BYTES = 100  # a safe name stays well under the 255-byte file name limit with our suffixes
SHOWN_NAMES = 3  # foreign file names quoted in a message; the rest are counted


def safe_folder_name(name: str) -> str:
    """A scenario name as a single, harmless path component (for the default ``out/<name>``).

    Every run of characters other than letters, digits, ``_``, ``.`` and ``-`` (so every ``/``)
    becomes one ``_``; leading and trailing ``.``, ``_`` and ``-`` are dropped (no ``..``, no
    hidden folder); the result is cut to 100 bytes of UTF-8, and an empty result is
    ``scenario``. ``/abs/path`` gives ``abs_path`` and ``../../x`` gives ``x``.
    """
    safe = _UNSAFE.sub("_", name).strip("._-")
    safe = safe.encode("utf-8")[:MAX_NAME_BYTES].decode("utf-8", errors="ignore").strip("._-")
    return safe or "scenario"


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths atomically (Linux renameat2); False where the system cannot."""
    func = getattr(_libc(), "renameat2", None) if sys.platform.startswith("linux") else None
    if func is None:
        return False
    at_fdcwd, rename_exchange = -100, 2  # from <fcntl.h> and <linux/fs.h>
    if func(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False  # kernel or file system without RENAME_EXCHANGE: use two renames
    raise OSError(err, os.strerror(err), str(b))


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _first_file_on_the_way(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` (itself excluded) when it is not a folder."""
    for parent in path.parents:
        if parent.exists() or parent.is_symlink():
            return None if parent.is_dir() else parent
    return None


def _listed(names: list[str]) -> str:
    return ", ".join(names[:SHOWN_NAMES]) + (f", ... ({len(names)} in all)" if len(names) > SHOWN_NAMES else "")


class OutputFolder:
    """Context manager for writing a run's results into ``path`` all at once.

    On entry (before simulating): checks the path, creates its parent, takes the lock, recovers
    from a killed run and creates the staging folder. ``publish(write)`` calls ``write(staging)``,
    checks the folder again and swaps the result into place. On exit the lock is released and,
    unless published, the staging folder removed: ``path`` is then exactly as it was.

    ``ours`` are the file names costsim writes; a folder holding anything else is not replaced.
    ``inputs``: the files the run reads (``outfiles.scenario_inputs``); a folder holding one is
    refused. ``label`` names the setting in messages (``--out`` for the CLI). ``notes``: what the
    caller should tell the user after publishing (a file kept that appeared during the swap).
    """

    def __init__(self, path: str | os.PathLike[str], *, ours: Iterable[str] = (), label: str = "--out",
                 inputs: Iterable[str | os.PathLike[str]] = ()):
        self.shown = os.fspath(path)
        self.label = label
        self.ours = frozenset(ours) | {MANIFEST}
        self.inputs = [Path(p) for p in inputs]
        self.published = False
        self.staging: Path | None = None
        self.notes: list[str] = []
        if self.shown == "":
            self._fail("is empty: name a folder to write the results into")
        try:  # symlinks followed: the swap happens where the files live
            self.target = Path(self.shown).resolve()
        except (OSError, ValueError, RuntimeError) as err:  # a NUL byte, a symlink loop
            self._fail(f"is not a usable path: {err}")
        self.parent = self.target.parent
        self.name = self.target.name
        self.lock = FolderLock(self.target, label, self.shown)
        self.lock_path = self.lock.path

    def _fail(self, message: str) -> NoReturn:
        raise OutputError(self.label, self.shown or '""', message)

    # -- entry: checks, lock, recovery, staging ------------------------------------------------

    def __enter__(self) -> OutputFolder:
        self._check_path()
        try:
            self.lock.__enter__()
            self._recover()
            foreign = self._foreign()
            if foreign:
                self._fail(f"holds files costsim did not write ({_listed(foreign)}); the folder is replaced as a "
                           "whole, so choose a new or empty folder, or move them")
            self.staging = self._new_sibling("tmp", make=True)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _check_path(self) -> None:
        if self.target == self.parent:
            self._fail("is the root folder: name a folder to create or replace")
        cwd = Path.cwd().resolve()
        if cwd == self.target or self.target in cwd.parents:
            self._fail("is the current folder or holds it; it is replaced as a whole, so name a "
                       "folder below it (e.g. out/run)")
        blocker = _first_file_on_the_way(self.target)
        if blocker is not None:
            self._fail(f"{blocker} is a file, not a folder")
        if self.target.exists() and not self.target.is_dir():
            self._fail("exists and is not a folder")
        hit = input_at(self.target, self.inputs, inside=True)
        if hit is not None:
            self._fail(f"holds {hit}, which this run reads (its scenario, trace or points file); the folder is "
                       "replaced as a whole, so choose another folder, or move the file out of it")
        try:
            self.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            self._fail(f"cannot create the folder {self.parent}: {err.strerror or err}")

    def _siblings(self, kind: str) -> list[Path]:
        pattern = re.compile(re.escape(f".{self.name}.{kind}-") + _SUFFIX)
        found = [p for p in self.parent.iterdir() if pattern.fullmatch(p.name)]
        return sorted(found, key=lambda p: p.lstat().st_mtime)

    def _new_sibling(self, kind: str, make: bool) -> Path:
        while True:
            path = self.parent / f".{self.name}.{kind}-{secrets.token_hex(4)}"
            if not make:
                if not os.path.lexists(path):
                    return path
                continue
            try:
                path.mkdir()
                return path
            except FileExistsError:
                continue
            except OSError as err:
                self._fail(f"cannot create a staging folder in {self.parent}: {err.strerror or err}")

    def _recover(self) -> None:
        """Undo what a killed run left (we hold the lock, so nothing else is using it)."""
        try:
            olds = self._siblings("old")
            if olds and not os.path.lexists(self.target):  # killed between the two renames
                os.rename(olds.pop(), self.target)
            for old in olds:
                self._retire(old)
            for staging in self._siblings("tmp"):
                shutil.rmtree(staging)  # a staging folder holds only what a run wrote into it
        except OSError as err:
            self._fail(f"cannot clean up after an earlier run in {self.parent}: {err.strerror or err}")

    def _foreign(self, folder: Path | None = None) -> list[str]:
        """Names in ``folder`` (default ``path``) that costsim did not write: not ours and not in its
        manifest, or ours but not a regular file (a folder or a link of that name is someone's)."""
        folder = self.target if folder is None else folder
        if not folder.is_dir():
            return []
        known = self.ours | self._manifest_names(folder)
        return sorted(p.name for p in folder.iterdir() if p.name not in known or kind_of(p) is not None)

    def _manifest_names(self, folder: Path) -> set[str]:
        try:
            files = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["files"]
            return {str(name) for name in files}
        except (OSError, ValueError, KeyError, TypeError):
            return set()

    # -- publish and exit -------------------------------------------------------------------------

    def publish(self, write: Callable[[Path], object], info: dict | None = None) -> list[Path]:
        """Call ``write(staging)``, record what it wrote and swap it into place; the final paths.

        ``info`` (JSON-able) goes into the manifest beside the file sizes. Any OSError (full disk,
        permissions) is an ``OutputError`` and leaves the previous results untouched; so is a file
        costsim did not write found in the folder now (it was put there while the run worked).
        """
        assert self.staging is not None, "publish() outside the with block"
        try:
            write(self.staging)
            files = sorted(p for p in self.staging.iterdir() if p.name != MANIFEST)
            manifest = {**(info or {}), "files": {p.name: p.stat().st_size for p in files}}
            (self.staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
            for path in [*files, self.staging / MANIFEST, self.staging]:
                fsync(path)  # the data is on disk before the swap makes it visible
            foreign = self._foreign()  # again, under the lock: someone may have written here meanwhile
            if foreign:
                self._fail(f"files costsim did not write appeared in it while the run worked ({_listed(foreign)}); "
                           "they are kept and the folder is unchanged: move them, or choose another folder, and "
                           "run again")
            self._swap()
        except OSError as err:
            self._fail(f"could not write the results ({self._named(err)}{why_not_written(err)}); "
                       f"{self.shown} is unchanged")
        return [self.target / p.name for p in files] + [self.target / MANIFEST]

    def _named(self, err: OSError) -> str:
        """The file an error is about, as the user knows it: its name in the results, not the
        hidden staging folder's path."""
        if not err.filename:
            return ""
        path = Path(os.fsdecode(err.filename))
        if self.staging is not None and self.staging in path.parents:
            return f"{path.relative_to(self.staging)}: "
        return f"{path}: "

    def _swap(self) -> None:
        staging = self.staging
        assert staging is not None  # publish() checked it
        with signals_held():
            if not os.path.lexists(self.target):
                os.rename(staging, self.target)
                retired = None
            elif _exchange(staging, self.target):
                retired = staging  # now holds the previous results
            else:
                retired = self._new_sibling("old", make=False)
                os.rename(self.target, retired)
                try:
                    os.rename(staging, self.target)
                except OSError:
                    os.rename(retired, self.target)  # put the previous results back, then report
                    raise
            self.published = True
            self.staging = None
        if retired is not None:
            with contextlib.suppress(OSError):  # what is left is retired by the next run, never lost
                self._retire(retired)
        with contextlib.suppress(OSError):
            fsync(self.parent)

    def _retire(self, old: Path) -> None:
        """Remove the previous results ``old`` (moved out of the way) file by file, only the names
        costsim wrote; anything else goes back into the folder (it was put there after the last
        check), or, if that name is taken now, the whole of ``old`` is kept as ``NAME.kept-X``."""
        known = self.ours | self._manifest_names(old)
        strays = []
        for entry in old.iterdir():
            if entry.name in known and kind_of(entry) is None:
                entry.unlink()
            else:
                strays.append(entry)
        for entry in strays:
            if not os.path.lexists(self.target / entry.name):
                os.rename(entry, self.target / entry.name)
                self.notes.append(f"{entry.name} was put in {self.shown} while the run wrote its results; "
                                  "it is kept there")
        try:
            old.rmdir()
        except OSError:
            kept = self.parent / f"{self.name}.kept-{secrets.token_hex(4)}"
            os.rename(old, kept)
            self.notes.append(f"files put in {self.shown} while the run wrote its results are kept in {kept}")

    def __exit__(self, *exc) -> None:
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None
        self.lock.__exit__()
