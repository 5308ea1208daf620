"""The report's "Capacity over time" section (costsim.report.capacity): drawn for a scenario that
changes over time (tranches, growth, a price trend) with its three figures, left out otherwise."""

from __future__ import annotations

import pytest
from helpers import short_shipped

import costsim
from costsim.report.build import build_report
from costsim.report.capacity import capacity_section, changes_over_time


@pytest.fixture(scope="module")
def growing(tmp_path_factory):
    return costsim.simulate(short_shipped(tmp_path_factory, "growing-lab", 30))


@pytest.fixture(scope="module")
def flat(tmp_path_factory):
    return costsim.simulate(short_shipped(tmp_path_factory, "baseline", 10))


def test_what_changes_over_time(growing, flat):
    assert changes_over_time(growing.scenario) and not changes_over_time(flat.scenario)
    data = flat.scenario.model_dump(mode="json", exclude_unset=True)
    data["options"][-1]["price_change_per_year"] = -0.1  # a cloud price trend alone is enough
    assert changes_over_time(costsim.scenario_from_data(data, "trend", flat.scenario.base_dir))


def test_the_section_draws_three_figures_for_a_growing_lab_and_none_for_a_flat_one(growing, flat):
    html = capacity_section(growing, 1)
    assert 'id="capacity-over-time"' in html and html.count('class="figure"') == 3
    assert "demand (held + queued GPUs)" in html and "paid on order" in html
    assert capacity_section(flat, 1) == ""


@pytest.mark.slow
def test_the_page_has_it_between_break_even_and_the_frontier(growing):
    page = build_report(growing)
    assert page.count('id="capacity-over-time"') == 1
    assert page.index('id="breakeven"') < page.index('id="capacity-over-time"') < page.index('id="pareto"')
