"""Which code made a run: a digest of the sources its numbers come from and of the versions of the
libraries that can change them. A stored run (a sweep's task, a dashboard run kept on disk) is
used only by the same code. Imports nothing heavy (the dashboard asks before its spares start).
"""

from __future__ import annotations

import functools
import hashlib
import json
from importlib import resources
from pathlib import Path

LIBRARIES = ("numpy", "pandas", "scipy", "simpy", "pyarrow")  # their versions can change the numbers


# The parts of costsim a stored run's numbers come from: the layers a simulation runs through and
# the catalog. The wording, figures, report, CLI and dashboard do not change a stored task, so an
# edited label or chart does not make a sweep start again.
SIMULATION_SOURCES = ("units.py", "errors.py", "scenario", "catalog", "models", "plan", "workload", "engine",
                      "results", "runs")


def source_identity(root: Path) -> str:
    """SHA-256 of the ``.py`` and ``.yaml`` files under ``SIMULATION_SOURCES`` of the package at ``root``."""
    digest = hashlib.sha256()
    for part in SIMULATION_SOURCES:
        top = root / part
        paths = [top] if top.is_file() else sorted(top.rglob("*"))
        for path in paths:
            if path.suffix in (".py", ".yaml") and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def code_identity() -> str:
    """SHA-256 of the sources a run's numbers come from (``source_identity``) and of Python's and
    ``LIBRARIES``' versions: runs made by other code are never taken for this code's (a sweep's
    tasks resumed, a dashboard run read from disk)."""
    import platform
    from importlib import metadata

    digest = hashlib.sha256(source_identity(Path(str(resources.files("costsim")))).encode())
    versions = {name: metadata.version(name) for name in LIBRARIES}
    digest.update(json.dumps({"python": platform.python_version(), **versions}, sort_keys=True).encode())
    return digest.hexdigest()


__all__ = ["LIBRARIES", "SIMULATION_SOURCES", "code_identity", "source_identity"]
