"""Every benchmark imports against the package as it is: `make bench` is not part of `make test`,
so a name moved between modules would otherwise break a benchmark unnoticed (each one runs its
work under ``if __name__ == "__main__"``; importing runs none of it)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("*.py")), ids=lambda p: p.stem)
def test_the_benchmark_imports(path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # a benchmark may import its sibling helpers (timing.py)
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    before = set(os.environ)
    try:
        spec.loader.exec_module(module)
    finally:
        for name in set(os.environ) - before:  # what a benchmark sets for its own workers stays with it
            del os.environ[name]
