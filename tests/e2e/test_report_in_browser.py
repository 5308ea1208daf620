"""The HTML report of ``costsim report`` opened from its file in Debian's Chromium: the Assumptions
table against the catalog, and every table inside the page column at a 1,280 px window and in
print. Skipped where no chromium is installed.
"""

from __future__ import annotations

import re

import pytest
from browser_helpers import VIEW

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.e2e


def _catalog_leaves(node, out: list[dict]) -> list[dict]:
    """Every {value, source, date} leaf of the catalog file, read here as plain YAML."""
    if isinstance(node, dict) and "value" in node and "source" in node:
        out.append(node)
    elif isinstance(node, dict):
        for child in node.values():
            _catalog_leaves(child, out)
    return out


def test_report_assumptions_table_shows_every_catalog_value_used(browser, tmp_path):
    """``costsim report`` on a tiny scenario, opened from the file: its Assumptions table has a row
    for every value assumptions() lists, as shown, and each catalog value in it is a leaf of the
    catalog file with that value, source and date."""
    from importlib import resources

    from helpers import TINY_RL, invoke_cli
    from ruamel.yaml import YAML

    import costsim
    from costsim.present.assumptions import shown
    from costsim.results.assumptions import assumptions

    (tmp_path / "s.yaml").write_text(TINY_RL.replace("{name: cloud, kind: cloud, gpu_type: H100}",
                                                     "{name: cloud, kind: cloud, gpu_type: H100, pricing: spot}"))
    report = tmp_path / "report.html"
    result = invoke_cli("report", tmp_path / "s.yaml", "--out", report, "--replications", "1", "--no-tornado")
    assert result.exit_code == 0, result.output
    page = browser.new_page(viewport=VIEW)
    page.goto(report.as_uri())
    section = page.locator("section#assumptions")
    expect(section.locator("h2")).to_have_text("Assumptions")
    heads = section.locator("thead th").all_inner_texts()
    rows = [dict(zip(heads, r.locator("td").all_inner_texts(), strict=True)) for r in section.locator("tbody tr").all()]
    page.close()
    by_name = {r["assumption"]: r for r in rows}
    want = shown(assumptions(costsim.load_scenario(tmp_path / "s.yaml")))
    assert len(rows) == len(want) == len(by_name)
    for w in want.to_dict("records"):
        assert by_name[w["assumption"]] == {k: w[k] for k in heads}, w["assumption"]
    raw = YAML(typ="safe").load(resources.files("costsim.catalog").joinpath("catalog.yaml").read_text(encoding="utf-8"))
    leaves = _catalog_leaves(raw, [])
    from_catalog = [r for r in rows if r["from"] == f"catalog {raw['catalog_version']}"]
    assert len(from_catalog) >= 30  # economics, power, price, billing, spot, RL specs and constants
    for r in from_catalog:
        shown_value = float(r["value"].replace(",", ""))
        if r["assumption"].startswith("capex per GPU"):  # derived: server price ÷ 8 × (1 + 0.12 + 0.05 + 0.03)
            assert shown_value == 45_000
            continue
        assert any(leaf["value"] == shown_value and leaf["source"] == r["source"] and str(leaf["date"]) == r["date"]
                   for leaf in leaves), r
    for what, value in [("electricity price", "0.085"), ("PUE", "1.3"), ("depreciation", "5"),
                        ("price, cloud (H100, neocloud, spot)", "1.6"), ("cost of capital", "0.08"),
                        ("staff cost", "225,000"), ("spot preemptions, cloud", "0.12")]:
        assert by_name[what]["value"] == value, what


LONG_NAMES = ["owned-h100-cluster-in-the-basement-datacenter", "owned-h100-cluster-twice-as-large-colocated",
              "on-demand-cloud-h100-from-the-big-provider", "spot-cloud-h100-from-the-neocloud-provider"]

# Per table of the page: its section, its right edge, its scroll box's right edge and overflow-x,
# whether it is wider than that box; the page column's right edge (main's content box); and the
# number cells (neither text nor long text) whose text runs over more than one line.


_TABLE_BOXES = """() => {
  const main = document.querySelector('main'), css = getComputedStyle(main);
  const column = main.getBoundingClientRect().right - parseFloat(css.paddingRight);
  const tables = [...document.querySelectorAll('table')].map(t => {
    const box = t.parentElement;
    return {section: t.closest('section').id, right: t.getBoundingClientRect().right,
            box: box.className, boxRight: box.getBoundingClientRect().right,
            overflow: getComputedStyle(box).overflowX, scrolls: box.scrollWidth > box.clientWidth};
  });
  const broken = [...document.querySelectorAll('td:not(.text):not(.wrap)')].filter(td => {
    const r = document.createRange(); r.selectNodeContents(td);
    return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size > 1;
  }).map(td => td.innerText);
  return {column, tables, broken, page: document.documentElement.scrollWidth};
}"""


def test_report_tables_fit_the_page_column_at_1280_px_and_in_print(browser, tmp_path):
    """A report of four long-named options, opened from the file at a 1,280 px window: every table
    ends inside the page column (the options table one column per option), each sits in its own
    scroll box, numbers stay on one line, the page itself does not scroll sideways; printed (A4's
    width), every table fits the page too."""
    from helpers import TINY_RL, invoke_cli

    text = TINY_RL.replace("  - {name: own, kind: owned, gpu_type: H100, gpus: 16, lead_time_days: 0}\n"
                           "  - {name: cloud, kind: cloud, gpu_type: H100}\n", "".join(
        f"  - {{name: {n}, kind: {k}, gpu_type: H100{extra}}}\n" for n, k, extra in [
            (LONG_NAMES[0], "owned", ", gpus: 16, lead_time_days: 0"),
            (LONG_NAMES[1], "owned", ", gpus: 32, lead_time_days: 0"),
            (LONG_NAMES[2], "cloud", ""), (LONG_NAMES[3], "cloud", ", pricing: spot")]))
    assert all(n in text for n in LONG_NAMES)
    (tmp_path / "s.yaml").write_text(text)
    report = tmp_path / "report.html"
    result = invoke_cli("report", tmp_path / "s.yaml", "--out", report, "--replications", "1")
    assert result.exit_code == 0, result.output
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        page.goto(report.as_uri())
        heads = page.locator("section#options thead th").all_inner_texts()
        assert [re.sub(r"^★ | \(recommended\)$", "", " ".join(h.split())).replace("- ", "-")
                for h in heads[1:]] == LONG_NAMES  # one column per option, the names whole
        seen = page.evaluate(_TABLE_BOXES)
        sections = [t["section"] for t in seen["tables"]]
        assert {"options", "breakeven", "pareto", "tornado", "assumptions"} <= set(sections), sections
        for t in seen["tables"]:
            assert t["box"] == "table-wrap" and t["overflow"] == "auto", t
            assert t["boxRight"] <= seen["column"] + 0.5, t
            assert t["right"] <= seen["column"] + 0.5, t  # and nothing left to scroll to
            assert not t["scrolls"], t
        assert seen["broken"] == []
        assert seen["page"] <= 1280
        page.emulate_media(media="print")
        page.set_viewport_size({"width": 718, "height": 1000})  # A4 less 1.5 cm margins at 96 dpi
        page.wait_for_function("document.documentElement.scrollWidth <= 718", timeout=10_000)  # figures redrawn
        printed = page.evaluate(_TABLE_BOXES)
        assert all(t["right"] <= printed["column"] + 0.5 for t in printed["tables"]), printed["tables"]
    finally:
        page.close()
