"""Checks of the arguments of costsim's public functions.

A wrong argument is an ``ArgumentError`` naming the function and the argument —
``simulate(): seed: must be a whole number from 0 to 2^63 - 1 or None (got 'x')`` — never a
TypeError or AttributeError from deep inside. Each check returns the argument as used.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from costsim.errors import ArgumentError
from costsim.scenario.bounds import MAX_SEED


def error(function: str, argument: str, message: str) -> ArgumentError:
    """``function(): argument: message``."""
    return ArgumentError(function, argument, message)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _whole(value: Any) -> int | None:
    """``value`` as an int if it is a whole number type (int, numpy integer; never bool), else None."""
    if isinstance(value, bool) or isinstance(value, float):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def seed(value: Any, function: str = "simulate") -> int | None:
    """None (the scenario's seed) or a whole number from 0 to ``MAX_SEED`` (2^63 - 1, as in scenario files)."""
    if value is None:
        return None
    n = _whole(value)
    if n is None or not 0 <= n <= MAX_SEED:
        raise error(function, "seed", f"must be a whole number from 0 to 2^63 - 1 or None (got {_shown(value)})")
    return n


def max_events(value: Any, function: str = "simulate") -> int | None:
    """None (no limit) or a whole number ≥ 1."""
    if value is None:
        return None
    n = _whole(value)
    if n is None or n < 1:
        raise error(function, "max_events", f"must be a whole number >= 1, or None for no limit (got {_shown(value)})")
    return n


def callback(value: Any, argument: str, function: str = "simulate") -> Callable[..., Any] | None:
    """None or something callable."""
    if value is not None and not callable(value):
        raise error(function, argument, f"must be a function or None (got {_shown(value)})")
    return value


def path(value: Any, argument: str, function: str) -> Path:
    """A str or os.PathLike naming a file or folder (not empty, no NUL character)."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise error(function, argument, f"must be a path (str or pathlib.Path), got {type(value).__name__} {_shown(value)}")
    if not value.strip():
        raise error(function, argument, "is empty: name a file or folder")
    if "\0" in value:
        raise error(function, argument, "contains a NUL character, which no path can")
    return Path(value)


def text(value: Any, argument: str, function: str) -> str:
    """A str (bytes must be decoded by the caller, who knows their encoding)."""
    if isinstance(value, (bytes, bytearray)):
        raise error(function, argument, "must be str: decode the bytes first (scenario files are UTF-8)")
    if not isinstance(value, str):
        raise error(function, argument, f"must be str, got {type(value).__name__} {_shown(value)}")
    return value


def scenario_like(value: Any, function: str = "simulate") -> None:
    """Raise unless ``value`` is a path of a scenario file; called when it is not a ``Scenario``."""
    if isinstance(value, dict):
        raise error(function, "scenario", "got a dict: make a checked Scenario of it first with "
                    "costsim.scenario_from_data(data, source, base_dir)")
    if not isinstance(value, (str, os.PathLike)):
        raise error(function, "scenario", "must be a costsim.Scenario (costsim.load_scenario) or the path "
                    f"of a scenario file, got {type(value).__name__} {_shown(value)}")
