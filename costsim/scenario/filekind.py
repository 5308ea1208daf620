"""Why a path cannot be read as an input file, said without opening it.

Opening a FIFO blocks until someone writes to it and a device may never end, so every reader of an
input file (a trace, a sweep's base scenario, ``import-trace``'s and ``fit-workload``'s files)
asks ``input_file_problem`` first, which only calls ``stat``. It lives in the schema layer so the
trace reader can use it; ``costsim.runs.outfiles`` uses the same words. ``file_identity`` says
whether a file is still the one read before (the run memo's key for a trace)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

# (test of the mode, what such a path is), for each kind that is neither a file nor a folder
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def input_file_problem(path: Path | str) -> str | None:
    """Why ``path`` cannot be read as an input file: "file not found", "is a folder, not a file:
    ...", "is a FIFO, not a regular file: ..." (likewise a device or socket); None when it is a
    regular file (symlinks followed: a link to a file is that file). Never opens ``path``."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "file not found"
    except OSError as err:
        return f"cannot be read: {err.strerror or err}"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a folder, not a file: name a file in it"
    kind = next((name for test, name in _KINDS if test(mode)), "something else")
    return f"is {kind}, not a regular file: reading it could block or never end; name a file"


def file_identity(path: Path | str) -> tuple[int, ...] | None:
    """Device, inode, size, mtime and ctime (ns) of a file, None if it cannot be read: a changed file
    (even one whose mtime a tool restored) has another identity. Taken BEFORE the file is read, so
    an edit during the read can only cause a miss later, never a stale hit."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
