"""The report's "Assumptions" section: every value the numbers rest on, with its source and date
(``costsim.results.assumptions``), so a reader can audit the report without the catalog."""

from __future__ import annotations

from costsim.catalog.load import default_catalog
from costsim.present.assumptions import shown
from costsim.report import html as h
from costsim.results.assumptions import assumptions

COLUMNS: list[h.Column] = [
    ("assumption", "assumption", str, None), ("value", "value", lambda v: v, None), ("unit", "unit", str, None),
    ("from", "from", str, None), ("source", "source", str, None), ("date", "date", str, None),
]


def assumptions_section(scenario) -> str:
    """The section for ``scenario`` under the installed catalog ("" without a scenario)."""
    if scenario is None:
        return ""
    cat = default_catalog()
    note = h.para(f"Every value the numbers above rest on, as the run used it: set by the scenario, taken from "
                  f"catalog {cat.version} (each with its source and date), or a costsim default. "
                  "scenario.resolved.yaml (costsim run --out) writes them all, so a rerun under a later catalog "
                  "gives these numbers again.", "note")
    return h.section("Assumptions", note, h.table(shown(assumptions(scenario, cat)), COLUMNS, wrap=("source",),
                                                 nowrap=("date",)),
                     anchor="assumptions")
