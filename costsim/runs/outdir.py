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

``DIR`` is replaced as a whole, so a folder holding files costsim did not write is refused rather
than deleted. Problems are ``OutputError`` (a ``ScenarioError``): the CLI prints them and exits 2.
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
import signal
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NoReturn

from costsim.scenario.errors import Problem, ScenarioError

MANIFEST = "costsim-run.json"  # what a run wrote (file names and sizes in bytes), written last
_SUFFIX = r"[0-9a-f]{8}"  # secrets.token_hex(4): the random part of staging and old folder names
_UNSAFE = re.compile(r"[^\w.-]+")  # anything but letters, digits, '_', '.', '-' (no separators)
MAX_NAME_BYTES = 100  # a safe name stays well under the 255-byte file name limit with our suffixes


class OutputError(ScenarioError):
    """The output folder cannot be used or written: ``label folder: what is wrong``."""

    def __init__(self, label: str, folder: str, message: str):
        super().__init__(f"{label} {folder}", [Problem((), message)])


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


def fsync(path: Path) -> None:
    """fsync a file or a folder (so a rename in it is on disk); shared by the sweep dataset."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_out_file(flag: str, path: Path, source: Path | None = None) -> None:
    """A file a command may replace (``--out``): not its input ``source``, not a folder, in a folder
    that exists; ScenarioError naming ``flag`` otherwise."""
    if source is not None and path.exists() and source.exists() and path.resolve() == source.resolve():
        raise ScenarioError(flag, [Problem((), "is the input file; choose another name")])
    if path.is_dir():
        raise ScenarioError(flag, [Problem((), f"{path} is a folder; give a file name")])
    if not path.parent.is_dir():
        raise ScenarioError(flag, [Problem((), f"folder {path.parent} does not exist")])


def publish_files(writers: dict[Path, Callable[[Path], object]]) -> None:
    """Several files replaced together: each ``write(temp)`` into a hidden temporary file beside its
    path (the writer may check what it wrote and raise), flushed to disk; only when every one was
    written are they all renamed into place, with Ctrl-C held back so the renames are not cut in
    half. On any error (KeyboardInterrupt included) no file is replaced and the temporaries are
    removed; an OSError becomes a ScenarioError naming the file. ``runs.dataset.write_atomic`` is
    the one-file case without the ScenarioError."""
    temps = {path: path.with_name(f".{path.name}.tmp-{secrets.token_hex(4)}") for path in writers}
    try:
        for path, write in writers.items():
            write(temps[path])
            fsync(temps[path])
        with _signals_held():
            for path, temp in temps.items():
                os.replace(temp, path)
    except OSError as exc:
        raise ScenarioError(str(exc.filename or next(iter(writers), "--out")),
                            [Problem((), f"cannot write: {exc.strerror or exc}")]) from None
    finally:
        for temp in temps.values():
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
    for folder in {path.parent for path in writers}:
        with contextlib.suppress(OSError):
            fsync(folder)  # the renames themselves are on disk


@contextlib.contextmanager
def _signals_held():
    """Hold Ctrl-C and SIGTERM back (delivered afterwards) so a swap is never cut in half."""
    held = {signal.SIGINT, signal.SIGTERM}
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _first_file_on_the_way(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` (itself excluded) when it is not a folder."""
    for parent in path.parents:
        if parent.exists() or parent.is_symlink():
            return None if parent.is_dir() else parent
    return None


class OutputFolder:
    """Context manager for writing a run's results into ``path`` all at once.

    On entry (before simulating): checks the path, creates its parent, takes the lock, recovers
    from a killed run and creates the staging folder. ``publish(write)`` calls ``write(staging)``
    and swaps the result into place. On exit the lock is released and, unless published, the
    staging folder removed: ``path`` is then exactly as it was.

    ``ours`` are the file names costsim writes; a folder holding anything else is not replaced.
    ``label`` names the setting in messages (``--out`` for the CLI).
    """

    def __init__(self, path: str | os.PathLike[str], *, ours: Iterable[str] = (), label: str = "--out"):
        self.shown = os.fspath(path)
        self.label = label
        self.ours = frozenset(ours) | {MANIFEST}
        self.published = False
        self.staging: Path | None = None
        self._lock_fd: int | None = None
        if self.shown == "":
            self._fail("is empty: name a folder to write the results into")
        try:  # symlinks followed: the swap happens where the files live
            self.target = Path(self.shown).resolve()
        except (OSError, ValueError, RuntimeError) as err:  # a NUL byte, a symlink loop
            self._fail(f"is not a usable path: {err}")
        self.parent = self.target.parent
        self.name = self.target.name
        self.lock_path = self.parent / f".{self.name}.lock"

    def _fail(self, message: str) -> NoReturn:
        raise OutputError(self.label, self.shown or '""', message)

    # -- entry: checks, lock, recovery, staging ------------------------------------------------

    def __enter__(self) -> OutputFolder:
        self._check_path()
        try:
            self._lock()
            self._recover()
            self._check_contents()
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
        try:
            self.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            self._fail(f"cannot create the folder {self.parent}: {err.strerror or err}")

    def _lock(self) -> None:
        import fcntl  # POSIX only; imported here so the rest of costsim loads anywhere

        while True:
            try:
                fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as err:
                self._fail(f"cannot write in {self.parent} ({err.strerror or err}); the results are "
                           "written beside the folder first, then moved into place")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                holder = os.read(fd, 32).decode(errors="replace").strip()
                os.close(fd)
                if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    self._fail(f"cannot lock {self.lock_path}: {err.strerror or err}")
                who = f" (pid {holder})" if holder.isdigit() else ""
                self._fail(f"another costsim run{who} is writing this folder; wait for it to "
                           f"finish or choose another {self.label}")
            try:  # the previous holder may have removed the file between our open and flock
                same = os.fstat(fd).st_ino == os.stat(self.lock_path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self._lock_fd = fd
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())

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
            for leftover in olds + self._siblings("tmp"):
                shutil.rmtree(leftover)
        except OSError as err:
            self._fail(f"cannot clean up after an earlier run in {self.parent}: {err.strerror or err}")

    def _check_contents(self) -> None:
        if not self.target.is_dir():
            return
        names = {p.name for p in self.target.iterdir()}
        foreign = sorted(names - self.ours - self._manifest_names())
        if foreign:
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            self._fail(f"holds files costsim did not write ({shown}); the folder is replaced as a whole, "
                       "so choose a new or empty folder, or move them")

    def _manifest_names(self) -> set[str]:
        try:
            files = json.loads((self.target / MANIFEST).read_text(encoding="utf-8"))["files"]
            return {str(name) for name in files}
        except (OSError, ValueError, KeyError, TypeError):
            return set()

    # -- publish and exit -------------------------------------------------------------------------

    def publish(self, write: Callable[[Path], object], info: dict | None = None) -> list[Path]:
        """Call ``write(staging)``, record what it wrote and swap it into place; the final paths.

        ``info`` (JSON-able) goes into the manifest beside the file sizes. Any OSError (full disk,
        permissions) is an ``OutputError`` and leaves the previous results untouched.
        """
        assert self.staging is not None, "publish() outside the with block"
        try:
            write(self.staging)
            files = sorted(p for p in self.staging.iterdir() if p.name != MANIFEST)
            manifest = {**(info or {}), "files": {p.name: p.stat().st_size for p in files}}
            (self.staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
            for path in [*files, self.staging / MANIFEST, self.staging]:
                fsync(path)  # the data is on disk before the swap makes it visible
            self._swap()
        except OSError as err:
            where = f" ({err.filename})" if err.filename else ""
            self._fail(f"could not write the results: {err.strerror or err}{where}; the folder is unchanged")
        return [self.target / p.name for p in files] + [self.target / MANIFEST]

    def _swap(self) -> None:
        staging = self.staging
        with _signals_held():
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
            shutil.rmtree(retired, ignore_errors=True)  # a leftover is removed by the next run
        with contextlib.suppress(OSError):
            fsync(self.parent)

    def __exit__(self, *exc) -> None:
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.lock_path)  # while still holding it: see _lock's inode check
            os.close(self._lock_fd)
            self._lock_fd = None
