"""The one variant builder: a base scenario with dotted paths set to values, built and checked the
same way wherever variants are made (a sweep file's grid and sample, ``--set``, the tornado's low
and high ends, the dashboard's small grid).

A variant is a fresh copy of the base's data (``Scenario.model_dump(mode="json")``, dumped once per
base) with each path set (``costsim.runs.paths``: options by name, a null section created), its
resized options renamed by the one naming rule (``costsim.scenario.naming``: ``own-256`` at 320
GPUs is ``own-320``, the options that refer to it following), validated and checked
(``api.scenario_from_data``) under a source naming the variant. A refused variant raises the
ScenarioError of the variant as written (``naming.build_resized``), its problems located in the
data ``edited`` gives, so a caller can name them as the user wrote them (``paths.named``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from costsim.plan.resize import scale_tranches
from costsim.runs import api
from costsim.runs.paths import resolve, set_loc
from costsim.scenario import Scenario
from costsim.scenario.errors import Loc
from costsim.scenario.naming import build_resized


@dataclass(frozen=True)
class Variant:
    """One scenario of a sweep: ``params`` (dotted path -> value, empty for the base) applied to the base."""

    id: str
    params: dict[str, object]
    scenario: Scenario


class VariantBuilder:
    """Variants of ``base``, each named ``"<source> variant <id>"`` in its errors (``source``: what
    made them: a sweep file's path, "--set", "tornado", "sweep grid")."""

    def __init__(self, base: Scenario, *, source: str) -> None:
        self.base = base
        self.source = source
        self._json = json.dumps(base.model_dump(mode="json"))
        self._data = json.loads(self._json)  # the base as data, never edited: what a rename compares with

    def locate(self, path: str) -> Loc:
        """Where the dotted ``path`` points in the base's data (``paths.PathError`` when nowhere):
        a caller setting the same paths in many variants resolves them once."""
        return resolve(self._data, path)[0]

    def edited(self, *, params: Mapping[str, object], locs: Mapping[str, Loc] | None = None) -> dict[str, Any]:
        """A fresh copy of the base's data with each path of ``params`` set to its value, in order
        (``locs``: each path's location from ``locate``; None: resolved here, path by path)."""
        data = json.loads(self._json)  # a fresh copy, faster than deepcopy
        for path, value in params.items():
            set_loc(data, locs[path] if locs is not None else resolve(data, path)[0], value)
        return data

    def build(self, *, vid: str, params: Mapping[str, object], locs: Mapping[str, Loc] | None = None,
              note: str = "") -> Variant:
        """Variant ``vid``: ``edited(params=params, locs=locs)`` with resized options renamed,
        validated and checked, relative paths read from the base's folder. Its source is
        ``"<source> variant <vid>"``, followed by `` (<note>)`` when a note is given. Raises the
        ScenarioError of the variant as written when it is refused."""
        data = scale_tranches(self._data, self.edited(params=params, locs=locs))  # a tranched option resized
        source = f"{self.source} variant {vid}" + (f" ({note})" if note else "")
        scenario, _ = build_resized(self._data, data,
                                    lambda d: api.scenario_from_data(d, source, self.base.base_dir))
        return Variant(vid, dict(params), scenario)


__all__ = ["Variant", "VariantBuilder"]
