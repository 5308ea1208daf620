"""The scenario editor (costsim.dashboard.editor) through Streamlit's AppTest, on the harness
tests/apps/editor_app.py, plus its pure operations on plain data.

Truth is independent of the editor's code: help texts are compared with the pydantic models'
own field descriptions, catalog defaults with catalog.yaml read directly, and edited scenarios
with what the schema (costsim.scenario_from_data) accepts."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from paths import HARNESSES
from ruamel.yaml import YAML
from streamlit.testing.v1 import AppTest

import costsim
from costsim.dashboard import SCENARIO_DIR
from costsim.dashboard import editor_ops as ops
from costsim.scenario import Scenario

HARNESS = str(HARNESSES / "editor_app.py")


def app(scenario: str = "baseline") -> AppTest:
    at = AppTest.from_file(HARNESS, default_timeout=60)
    at.session_state["scenario"] = scenario
    at.run()
    assert not at.exception
    return at


def result(at):
    return at.session_state["result"]


def widget(at, kind: str, loc: str, suffix: str = ""):
    """The widget of ``kind`` whose key ends with the field path ``loc`` (any generation)."""
    found = [w for w in getattr(at, kind) if w.key and w.key.split(":", 2)[-1] == loc + suffix]
    assert len(found) == 1, (loc, [w.key for w in getattr(at, kind)])
    return found[0]


def button(at, name: str):
    (b,) = [b for b in at.button if b.key.endswith(f":{name}")]
    return b


def in_order(at) -> list:
    """Every element of the page in document order."""
    out: list = []

    def walk(node):
        children = getattr(node, "children", None)
        if isinstance(children, dict):
            for i in sorted(children):
                walk(children[i])
        else:
            out.append(node)

    walk(at._tree)
    return out


def error_after(at, key: str) -> str | None:
    """The text of the error shown right under the widget ``key`` (the next element), if any."""
    els = in_order(at)
    i = next(i for i, e in enumerate(els) if getattr(e, "key", None) == key)
    nxt = els[i + 1]
    return nxt.value if nxt.type == "error" else None


def pick(at, what: str, name: str) -> None:
    """Choose the option or class called ``name`` in its picker."""
    sel = next(s for s in at.selectbox if s.key.endswith(f":pick:{what}"))
    items = result(at).data["options"] if what == "option" else result(at).data["workload"]["classes"]
    sel.set_value([x["name"] for x in items].index(name)).run()


def add_option(at, kind: str) -> None:
    next(s for s in at.selectbox if s.key.endswith(":newkind")).set_value(kind).run()
    button(at, "add_option").click().run()


def checked(data: dict) -> Scenario:
    return costsim.scenario_from_data(copy.deepcopy(data), "test", SCENARIO_DIR)


@pytest.mark.parametrize("name", ["baseline", "hybrid-burst", "train-and-serve", "reserved-vs-on-demand",
                                  "spot-rollouts", "lab-trace"])
def test_editing_nothing_returns_the_input(name):
    at = app(name)
    at.run()  # a rerun: widget values now come from their state, not from the data
    r = result(at)
    assert r.data == at.session_state["input"]
    assert r.errors == {} and r.scenario is not None and not at.error
    assert r.scenario.model_dump(mode="json") == at.session_state["input"]


TRANCHED = """\
name: tranched
horizon_days: 60
workload:
  classes:
    - {name: grpo, arrivals_per_day: 2, gpus: 8, iterations: 20, model_params_b: 7}
options:
  - name: own
    kind: owned
    gpu_type: H100
    tranches: [{gpus: 8}, {gpus: 8, order_day: 20, payment: lease, lease_term_months: 24}]
    resale_curve: [{age_years: 1, value_frac: 0.7}, {age_years: 3, value_frac: 0.4}]
"""


def test_tranches_and_a_resale_curve_are_edited_as_yaml(tmp_path):
    (tmp_path / "tranched.yaml").write_text(TRANCHED)
    at = app(str(tmp_path / "tranched"))
    at.run()
    r = result(at)
    assert r.data == at.session_state["input"] and r.errors == {} and r.scenario is not None
    area = widget(at, "text_area", "options.0.tranches")
    area.set_value("[{gpus: 8}, {gpus: 16, order_day: 30, payment: delivery}]").run()
    r = result(at)
    assert r.errors == {}
    assert [(t.gpus, t.order_day, t.payment) for t in r.scenario.options[0].tranches] == [
        (8, 0, "order"), (16, 30, "delivery")]
    assert r.scenario.options[0].gpus == 24 and "gpus" not in r.data["options"][0]  # their total, not written
    # Order days that do not ascend are named under the field.
    widget(at, "text_area", "options.0.tranches").set_value("[{gpus: 8, order_day: 9}, {gpus: 8, order_day: 3}]").run()
    assert any("order days must ascend" in m for m in result(at).errors.values())


def _field_description(scenario: Scenario, loc: list[str]) -> str:
    """The pydantic description of the field at ``loc`` among the loaded scenario's objects."""
    obj = scenario
    for part in loc[:-1]:
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
    return type(obj).model_fields[loc[-1]].description


@pytest.mark.parametrize("name", ["baseline", "spot-rollouts"])
def test_help_texts_are_the_schema_descriptions(name):
    at = app(name)
    sc = costsim.load_scenario(SCENARIO_DIR / f"{name}.yaml")
    checked_widgets = 0
    for kind in ("number_input", "selectbox", "text_input", "text_area", "checkbox", "toggle"):
        for w in getattr(at, kind):
            path = w.key.split(":", 2)[-1].split(":")[0]
            if not (path.startswith(("options.", "workload.", "economics.")) or path in Scenario.model_fields):
                continue  # pickers and buttons
            parts = path.split(".")
            if parts[-1] == "value":
                parts = parts[:-1]
            expected = _field_description(sc, parts)
            assert expected and w.help.startswith(expected), (w.key, w.help, expected)
            checked_widgets += 1
    assert checked_widgets > 40
    # units and ranges reach the user: the help of own-256's gpus names its range
    assert "(0.0416667 … 10,950)" in widget(at, "number_input", "horizon_days").help


@pytest.mark.parametrize("kind,expect", [("owned", {"kind": "owned"}),
                                         ("on_demand", {"kind": "cloud", "pricing": "on_demand"}),
                                         ("reserved", {"kind": "cloud", "pricing": "reserved"}),
                                         ("spot", {"kind": "cloud", "pricing": "spot"}),
                                         ("hybrid", {"kind": "hybrid"})])
def test_every_kind_can_be_added(kind, expect):
    at = app("baseline")
    n = len(result(at).data["options"])
    add_option(at, kind)
    r = result(at)
    assert len(r.data["options"]) == n + 1
    new = r.data["options"][-1]
    assert {k: new[k] for k in expect} == expect
    assert r.errors == {} and r.scenario is not None, r.errors
    # the picker is on the new option and its fields are shown
    assert widget(at, "text_input", f"options.{n}.name").value == new["name"]
    if kind == "hybrid":  # built on the scenario's own owned base and on-demand burst
        assert (new["base"], new["burst"]) == ("own-256", "cloud-od")


def test_a_hybrid_added_without_a_base_brings_one():
    data = checked_scenario_data("baseline")
    data["options"] = [o for o in data["options"] if o["kind"] == "cloud"]
    out, i = ops.add_option(data, "hybrid")
    added = out["options"][len(data["options"]):]
    assert [o["kind"] for o in added] == ["owned", "hybrid"]
    assert out["options"][i]["base"] == added[0]["name"]
    assert checked(out).options[i].base == added[0]["name"]


def checked_scenario_data(name: str) -> dict:
    return costsim.load_scenario(SCENARIO_DIR / f"{name}.yaml").model_dump(mode="json")


def test_renaming_an_option_moves_the_hybrids_with_it():
    at = app("hybrid-burst")
    widget(at, "text_input", "options.0.name").set_value("own-320").run()
    r = result(at)
    assert [o["name"] for o in r.data["options"]][:1] == ["own-320"]
    hybrids = [o for o in r.data["options"] if o["kind"] == "hybrid"]
    assert [h["base"] for h in hybrids] == ["own-320", "own-320"]
    assert r.scenario is not None and r.scenario.options[0].name == "own-320"
    pick(at, "option", "burst-bridged")
    assert widget(at, "selectbox", "options.3.base").value == "own-320"


def test_duplicating_an_option_copies_every_setting():
    at = app("hybrid-burst")
    pick(at, "option", "own-384")
    button(at, "dup_option").click().run()
    r = result(at)
    opts = r.data["options"]
    assert opts[2]["name"] == "own-384-copy" and {**opts[2], "name": "own-384"} == opts[1]
    assert widget(at, "text_input", "options.2.name").value == "own-384-copy"  # the copy is picked
    assert r.scenario is not None and len(r.scenario.options) == 6


def test_removing_an_option_removes_the_hybrids_built_on_it():
    at = app("hybrid-burst")
    pick(at, "option", "on-demand")
    assert "burst-bridged, burst-no-bridge" in button(at, "rm_option").help
    button(at, "rm_option").click().run()
    r = result(at)
    assert [o["name"] for o in r.data["options"]] == ["own-256", "own-384"]
    assert r.scenario is not None
    assert any("Removed on\\-demand and the hybrids built on it" in i.value for i in at.info)


def test_classes_added_duplicated_renamed_removed():
    at = app("baseline")
    names = lambda: [c["name"] for c in result(at).data["workload"]["classes"]]  # noqa: E731
    before = names()
    button(at, "add_class").click().run()
    assert names() == [*before, "class"] and result(at).scenario is not None
    k = len(before)
    widget(at, "text_input", f"workload.classes.{k}.name").set_value("probe-1b").run()
    assert names()[-1] == "probe-1b"
    button(at, "dup_class").click().run()
    assert names()[-2:] == ["probe-1b", "probe-1b-copy"]
    button(at, "rm_class").click().run()
    assert names() == [*before, "probe-1b"] and result(at).scenario is not None


def test_a_bad_value_shows_its_error_under_its_field():
    at = app("baseline")
    w = widget(at, "number_input", "options.0.gpus")
    w.set_value(250).run()  # not a whole number of 8-GPU nodes (the catalog's H100 node)
    r = result(at)
    assert r.scenario is None and ("options", 0, "gpus") in r.errors
    shown = error_after(at, widget(at, "number_input", "options.0.gpus").key)
    assert shown is not None and shown.startswith("gpus:") and "250" in shown
    # only that field has an error under it; the summary names the field in words
    assert error_after(at, widget(at, "number_input", "horizon_days").key) is None
    assert any("option own\\-256 › gpus" in w.value for w in at.warning)
    w = widget(at, "number_input", "options.0.gpus")
    w.set_value(256).run()
    assert result(at).scenario is not None and not at.error


def test_an_object_level_error_goes_to_the_field_it_names():
    at = app("baseline")
    widget(at, "number_input", "warmup_days").set_value(400.0).run()  # longer than the 365-day horizon
    r = result(at)
    assert () in r.errors and "warmup_days" in r.errors[()]
    shown = error_after(at, widget(at, "number_input", "warmup_days").key)
    assert shown is not None and shown.startswith("warmup\\_days:")


def test_switching_pricing_keeps_the_option_valid():
    at = app("baseline")
    pick(at, "option", "cloud-od")
    i = [o["name"] for o in result(at).data["options"]].index("cloud-od")
    sel = widget(at, "selectbox", f"options.{i}.pricing")
    assert sel.options == ["on_demand", "reserved", "spot"]
    sel.set_value("reserved").run()
    r = result(at)
    assert r.data["options"][i]["reserved_gpus"] == ops.NEW_OPTION_GPUS and r.scenario is not None, r.errors
    widget(at, "selectbox", f"options.{i}.pricing").set_value("on_demand").run()
    assert result(at).data["options"][i]["reserved_gpus"] is None and result(at).scenario is not None


def _catalog_yaml() -> dict:
    path = Path(costsim.__file__).parent / "catalog" / "catalog.yaml"
    return YAML(typ="safe").load(path.read_text())


def test_use_default_names_the_catalog_value_and_can_be_overridden():
    at = app("baseline")
    electricity = _catalog_yaml()["economics"]["electricity_usd_per_kwh"]["value"]
    toggle = widget(at, "toggle", "economics.electricity_usd_per_kwh", ":default")
    assert toggle.value is True and f"({electricity:g})" in toggle.label
    toggle.set_value(False).run()
    num = widget(at, "number_input", "economics.electricity_usd_per_kwh")
    assert num.value == electricity
    num.set_value(0.2).run()
    r = result(at)
    assert r.data["economics"]["electricity_usd_per_kwh"] == 0.2 and r.scenario.economics.electricity_usd_per_kwh == 0.2
    price = _catalog_yaml()["gpus"]["H100"]["price"]["neocloud"]["on_demand"]["value"]
    pick(at, "option", "cloud-od")
    i = [o["name"] for o in result(at).data["options"]].index("cloud-od")
    assert f"({price:g})" in widget(at, "toggle", f"options.{i}.price_per_gpu_hour", ":default").label


def test_a_new_scenario_shows_its_own_values():
    """The same session switches scenario: the editor key (a content hash) changes, so no widget
    keeps the old scenario's value."""
    at = app("baseline")
    widget(at, "number_input", "options.0.gpus").set_value(320).run()
    at.session_state["scenario"] = "hybrid-burst"
    at.run()
    r = result(at)
    assert r.data == at.session_state["input"]
    assert widget(at, "text_input", "name").value == "hybrid-burst"
    at.session_state["scenario"] = "baseline"
    at.run()  # back to the first: its edits are kept under its own key
    assert result(at).data["options"][0]["gpus"] == 320


def test_reset_returns_to_the_loaded_scenario():
    at = app("baseline")
    widget(at, "number_input", "options.0.gpus").set_value(320).run()
    button(at, "reset").click().run()
    assert result(at).data == at.session_state["input"]
    assert widget(at, "number_input", "options.0.gpus").value == 256


def test_rename_and_remove_are_pure():
    data = checked_scenario_data("hybrid-burst")
    frozen = copy.deepcopy(data)
    out = ops.rename_option(data, 2, "od")
    assert data == frozen  # the input is never changed
    assert [(o.get("base"), o.get("burst")) for o in out["options"][3:]] == [("own-256", "od")] * 2
    checked(out)
    assert ops.dependents(data, 0) == ["burst-bridged", "burst-no-bridge"]
    assert ops.dependents(data, 1) == []
    assert [o["name"] for o in ops.remove_option(data, 1)["options"]] == [
        "own-256", "on-demand", "burst-bridged", "burst-no-bridge"]
