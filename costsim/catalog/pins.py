"""A scenario's pinned catalog values (its ``catalog:`` section and ``catalog_version``) laid over
the installed catalog (``costsim.catalog``).

``effective_catalog`` is the catalog a run reads: the installed one with every value the scenario
pins in place of the catalog's. ``version_note`` says when the scenario was filled in from another
catalog version than the installed one.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from costsim.catalog.load import Catalog
    from costsim.scenario import Scenario


class CatalogVersionWarning(UserWarning):
    """A scenario records a catalog version other than the installed catalog's."""


def effective_catalog(scenario: Scenario, catalog: Catalog) -> Catalog:
    """``catalog`` with the scenario's pinned GPU specs, on-demand prices, fabric efficiencies and
    RL constants in place of its own (``catalog`` itself when the scenario pins none)."""
    pins = scenario.catalog
    if pins is None:
        return catalog
    gpus = dict(catalog.gpus)
    for name, given in (pins.gpus.model_dump(exclude_none=True) if pins.gpus else {}).items():
        spec = gpus[name]
        on_demand = given.pop("on_demand", {})
        price = {tier: ({**table, "on_demand": on_demand[tier]} if tier in on_demand else dict(table))
                 for tier, table in spec.price.items()}
        gpus[name] = replace(spec, price=price, **given)
    fabrics = {name: dict(values) for name, values in catalog.fabrics.items()}
    for name, given in (pins.fabrics.model_dump(exclude_none=True) if pins.fabrics else {}).items():
        fabrics[name].update(given)
    rl = {**catalog.rl, **(pins.rl.model_dump(exclude_none=True) if pins.rl else {})}
    return replace(catalog, gpus=gpus, fabrics=fabrics, rl=rl)


def version_note(scenario: Scenario, catalog: Catalog) -> str | None:
    """Why the scenario's ``catalog_version`` is worth a word, or None when it matches (or is not
    recorded). Not an error: the values the scenario writes out are its own whatever the catalog;
    only those it leaves blank change with it."""
    given = scenario.catalog_version
    if given is None or given == catalog.version:
        return None
    return (f"scenario {scenario.name!r} was filled in from catalog {given}; the installed catalog is "
            f"{catalog.version}: the values the scenario writes out are kept, any it leaves blank take catalog "
            f"{catalog.version}'s (costsim catalog lists them)")


def warn_version(scenario: Scenario, catalog: Catalog) -> None:
    """``version_note`` as a ``CatalogVersionWarning`` (printed once per place by Python's filter)."""
    note = version_note(scenario, catalog)
    if note is not None:
        warnings.warn(note, CatalogVersionWarning, stacklevel=3)
