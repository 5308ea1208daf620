"""What costsim may write, and the lock every writer of a folder takes.

- ``check_out_file``: a file a command replaces (``--out``) is a regular file or absent (never a
  folder, a symlink, a FIFO or a device, which a rename would replace by a regular file) and is
  none of the command's inputs (symlinks followed: the scenario, its trace, a sweep's manifest).
- ``FolderLock``: the lock of a folder ``DIR`` is ``PARENT/.DIR.lock``, held with ``flock``.
  ``costsim run`` holds it for ``--out`` while it simulates and swaps the folder into place
  (``costsim.runs.outdir``), a sweep for its folder (``costsim.runs.dataset``), and ``report``,
  ``import-trace`` and ``fit-workload`` for the folder of each file they write, while they write
  it. So a run never swaps away a folder another command is writing into. The kernel releases a
  lock when its process dies.
- ``publish_files``: several files replaced together, under their folders' locks.

Problems are ``OutputError`` (``costsim.errors``): the CLI prints them and exits 2.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import signal
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from costsim.errors import OutputError
from costsim.scenario.filekind import input_file_problem  # noqa: F401  (the readers' check, here too)

# Errors saying the disk, not costsim, is the problem (the advice is then to free some space).
NO_ROOM = (errno.ENOSPC, errno.EDQUOT)
# A lock file that cannot be created for these reasons is skipped by the writers that do not need
# it (``required=False``): a folder whose parent we may not write is one ``costsim run`` cannot
# replace either (it stages and locks in that parent), so there is no run to keep out.
_UNWRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


def fsync(path: Path) -> None:
    """fsync a file or a folder (so a rename in it is on disk)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def signals_held():
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


def why_not_written(err: OSError) -> str:
    """An OSError as the reason a write failed, with what to do when the disk is the problem."""
    text = err.strerror or str(err)
    if err.errno in NO_ROOM:
        return f"{text}: free some space (or write elsewhere) and run again"
    if err.errno == errno.EROFS:
        return f"{text}: write to a writable folder"
    return text


# ------------------------------------------------------------------ inputs and kinds of file


def kind_of(path: Path) -> str | None:
    """What ``path`` is when it is neither absent nor a regular file (the link itself, not its
    target): "a folder", "a symbolic link", "a FIFO", ...; None for a regular file or nothing."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError:
        return None  # a path we cannot inspect: the write itself will say why
    for test, name in ((stat.S_ISREG, None), (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def scenario_inputs(scenario, path: str | os.PathLike[str] | None = None) -> list[Path]:
    """The files a scenario is read from: ``path`` (its YAML, when given), its trace and its
    classes' scaling points files (relative paths from the scenario's folder)."""
    base = Path(scenario.base_dir)
    found = [Path(path)] if path is not None else []
    if scenario.workload.trace is not None:
        found.append(base / scenario.workload.trace)
    for cls in scenario.workload.classes:
        if cls.scaling is not None and cls.scaling.fit is not None:
            found.append(base / cls.scaling.fit)
    return found


def _resolved(path: Path) -> Path | None:
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte
        return None


def input_at(out: Path, inputs: Iterable[Path], inside: bool = False) -> Path | None:
    """The first of ``inputs`` that ``out`` is (symlinks followed) or, with ``inside``, that lies
    inside the folder ``out`` (which is replaced whole); None when there is none."""
    target = _resolved(out)
    if target is None:
        return None
    for path in inputs:
        resolved = _resolved(path)
        if resolved is not None and (resolved == target or (inside and target in resolved.parents)):
            return Path(path)
    return None


def check_out_file(flag: str, path: Path, inputs: Iterable[Path] | Path | None = None) -> None:
    """A file a command may replace (``--out``): absent or a regular file, none of ``inputs``,
    in a folder that exists; OutputError ``flag: what is wrong`` naming the path otherwise."""
    def fail(message: str):
        raise OutputError(flag, "", message)

    shown = os.fspath(path)
    if shown == "":
        fail("is empty: name the file to write")
    inputs = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs or ())
    hit = input_at(path, inputs)
    if hit is not None:
        fail(f"is the input file {hit}, which writing would destroy; choose another name")
    kind = kind_of(path)
    if kind == "a folder":
        fail(f"{shown} is a folder; give a file name")
    if kind is not None:
        fail(f"{shown} is {kind}, not a regular file: costsim writes a new file and renames it over the old "
             f"one, which would replace {kind} by a regular file; name a regular file or a new one")
    if not path.parent.is_dir():
        fail(f"folder {path.parent} does not exist")


# ------------------------------------------------------------------ the lock


class FolderLock:
    """The lock of ``folder`` (``PARENT/.NAME.lock``, flock, exclusive, never waits).

    ``required=False``: a lock file that cannot be created (the parent is not writable) is
    skipped (see ``_UNWRITABLE``); a lock held by another process is always an OutputError naming
    ``label`` and ``shown`` and the holder's pid.
    """

    def __init__(self, folder: Path, label: str, shown: str, required: bool = True):
        self.folder = Path(folder)
        self.path = self.folder.parent / f".{self.folder.name}.lock"
        self.label, self.shown, self.required = label, shown, required
        self._fd: int | None = None

    def _fail(self, message: str):
        raise OutputError(self.label, self.shown, message)

    def __enter__(self) -> FolderLock:
        import fcntl  # POSIX only; imported here so the rest of costsim loads anywhere

        if self.folder.parent == self.folder or not self.folder.name:
            return self  # the root folder has no parent to lock in
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as err:
                if not self.required and err.errno in _UNWRITABLE + (errno.ENOENT,):
                    return self
                self._fail(f"cannot write in {self.folder.parent} ({err.strerror or err}); the results are "
                           "written beside the folder first, then moved into place")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                holder = os.read(fd, 32).decode(errors="replace").strip()
                os.close(fd)
                if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    self._fail(f"cannot lock {self.path}: {err.strerror or err}")
                who = f" (pid {holder})" if holder.isdigit() else ""
                self._fail(f"another costsim run, sweep or report{who} is writing {self.folder}; wait for it "
                           f"to finish or choose another {self.label}")
            try:  # the previous holder may have removed the file between our open and flock
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self._fd = fd
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)  # while still holding it: see the inode check on entry
            os.close(self._fd)
            self._fd = None


# ------------------------------------------------------------------ several files at once


def publish_files(writers: dict[Path, Callable[[Path], object]], inputs: Iterable[Path] = (),
                  labels: dict[Path, str] | None = None) -> None:
    """Several files replaced together: each ``write(temp)`` into a hidden temporary file beside its
    path (the writer may check what it wrote and raise), flushed to disk; only when every one was
    written are they all renamed into place, with Ctrl-C held back so the renames are not cut in
    half. The folders' locks are held throughout, and each path is checked again under them
    (``check_out_file``: a FIFO or a symlink put there meanwhile is refused, not replaced). On any
    error (KeyboardInterrupt included) no file is replaced and the temporaries are removed; an
    OSError is an OutputError naming the path (``labels[path]``, default ``--out``), never the
    temporary file."""
    labels = labels or {}
    inputs = list(inputs)
    temps = {path: path.with_name(f".{path.name}.tmp-{secrets.token_hex(4)}") for path in writers}
    with contextlib.ExitStack() as locks:
        for folder in dict.fromkeys(path.parent.resolve() for path in writers):
            first = next(p for p in writers if p.parent.resolve() == folder)
            locks.enter_context(FolderLock(folder, labels.get(first, "--out"), os.fspath(first), required=False))
        path = next(iter(writers), Path("--out"))
        try:
            for path, write in writers.items():
                check_out_file(labels.get(path, "--out"), path, inputs)
                write(temps[path])
                fsync(temps[path])
            with signals_held():
                for path, temp in temps.items():
                    os.replace(temp, path)
        except OSError as exc:
            raise OutputError(labels.get(path, "--out"), os.fspath(path),
                              f"could not be written ({why_not_written(exc)}); nothing was replaced") from None
        finally:
            for temp in temps.values():
                with contextlib.suppress(OSError):  # gone after a rename; a read-only folder refuses even this
                    temp.unlink()
    for folder in {path.parent for path in writers}:
        with contextlib.suppress(OSError):
            fsync(folder)  # the renames themselves are on disk
