"""The shipped catalog reads the same through ruamel.yaml's C parser (ruamel.yaml.clib, a
dependency: ten times the pure parser's speed) as through its pure parser: every value, of the
same type; and the C parser is the one ``load_catalog`` uses where it is installed."""

from __future__ import annotations

import platform
from importlib import resources

import pytest
from ruamel.yaml import YAML

from costsim.catalog import load


def leaves(node, path=""):
    """(path, type name, value) of every scalar, in document order."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from leaves(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, type(node).__name__, node


def test_the_c_parser_reads_the_shipped_catalog_as_the_pure_one_does():
    text = resources.files("costsim.catalog").joinpath("catalog.yaml").read_text(encoding="utf-8")
    if platform.python_implementation() != "CPython":
        pytest.skip("ruamel.yaml.clib is a dependency on CPython only")
    fast = YAML(typ="safe")
    if fast.Parser.__module__.startswith("ruamel.yaml.parser"):
        pytest.fail("ruamel.yaml.clib is a dependency: its C parser should be installed")
    pure = list(leaves(YAML(typ="safe", pure=True).load(text)))
    assert len(pure) > 500
    assert list(leaves(fast.load(text))) == pure


def test_load_catalog_uses_the_c_parser(monkeypatch):
    if platform.python_implementation() != "CPython":
        pytest.skip("ruamel.yaml.clib is a dependency on CPython only")
    parsers = []
    real = YAML.__init__

    def seen(self, *args, **kwargs):
        real(self, *args, **kwargs)
        parsers.append(self.Parser.__name__)

    monkeypatch.setattr(YAML, "__init__", seen)
    load.load_catalog()
    assert parsers == ["CParser"]
