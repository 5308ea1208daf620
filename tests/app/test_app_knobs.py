"""Every sidebar knob and every error path of the dashboard, through Streamlit's AppTest.

The knobs are the ones the code builds: ``knob_paths`` (the knob of each scenario field) plus the
session's replications, listed on ``TINY``. Each has a ``Case`` here, found by its id's pattern, so
a new knob without a case fails (``test_every_knob_moves_its_number`` and
``test_the_form_shows_exactly_the_listed_knobs``). A case sets a new valid value, presses Run and
checks the number that must move against a hand calculation or its direction; then an invalid
value, which must be marked under that knob and in the red box while the last results stay on
screen, marked stale. ``TINY``: one owned cluster, one cloud option, one RL class, 20 days (a run
is about half a second); one replication.

Error paths and the test that covers each (AppTest unless said):

- each knob set to an invalid value: ``test_invalid_knob_is_marked_next_to_itself`` (here); the
  8-GPU-node rule on the baseline: test_app.py::test_invalid_knob_is_named_next_to_it_and_results_stay_stale;
  knobs whose widget offers no invalid value (a select box, bounded replications):
  ``test_knobs_without_an_invalid_value_offer_none`` (here);
- upload, invalid YAML: ``test_upload_with_invalid_yaml`` (here); in the browser:
  test_e2e_browser.py::test_bad_upload_shows_error_in_the_browser;
- upload, wrong schema: a bad value: test_app.py::test_bad_upload_shows_an_inline_error; an
  unknown key: test_app_hostile.py::test_markdown_in_an_unknown_key_is_shown_literally;
  non-finite numbers: test_app_hostile.py::test_non_finite_numbers_are_field_errors;
- upload, unknown trace: ``test_upload_naming_an_unknown_trace`` (here); a path outside:
  test_app_hostile.py::test_upload_never_shows_a_server_file; a trace uploaded under another
  name: test_app_hostile.py::test_uploaded_trace_is_read_from_the_upload; bad trace rows:
  test_app_hostile.py::test_bad_uploaded_trace_is_named_as_uploaded;
- upload too large: ``test_upload_too_large`` (here, through the app); the loader's limit:
  test_app_hostile.py::test_upload_size_limit;
- bad ``?s=`` link: damaged: test_app.py::test_damaged_link_falls_back_with_a_message; a link
  whose scenario is invalid: ``test_link_with_an_invalid_scenario`` (here);
- editor field errors: an option's number: test_app_editor.py::test_an_invalid_edit_keeps_the_last_results_marked_stale;
  a class's nested field and a duplicate option name: ``test_editor_errors_by_their_fields`` (here);
- a run that does not finish: test_app_hostile.py::test_long_run_is_stopped_at_the_time_limit,
  test_app_editor.py::test_a_run_that_fails_never_shows_another_scenarios_numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest
from apptest_helpers import TINY_LAB as TINY
from paths import APP
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Error

import costsim
from costsim.dashboard import LINK, SCENARIO_DIR, SETUPS, apply_knobs, current_knobs, encode_scenario, knob_paths
from costsim.dashboard.sidebar import REPLICATIONS_KEY
from costsim.plan.resolve import economics_values, resolve
from costsim.present.headline import CARD_METRICS, DETAILS

SC = costsim.load_scenario_text(TINY, "tiny.yaml", SCENARIO_DIR)
KNOBS = sorted(set(knob_paths(SC).values())) + ["replications"]  # replications: a session setting
HOURS = SC.horizon_days * 24
YEAR_H = 8760.0
ECON = economics_values(SC)
PLANS = {p.name: p for p in resolve(SC)}


# --- Reading the page ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    """What the first screen shows: the subheader, the caption under the verdict, and per option
    (by name, in order) each card's text by label (the best-value star dropped)."""

    title: str
    caption: str
    cards: dict[str, dict[str, str]]
    verdict: str = ""

    def value(self, option: str, label: str) -> float:
        """A card's number without its unit and ± (``$265,061 ± $1,021`` -> 265061.0)."""
        text = self.cards[option][label].split(" ±")[0]
        return math.nan if text == "-" else float(re.sub(r"[$,%h ]", "", text))

    @property
    def jobs(self) -> int:
        return int(re.search(r", ([\d,]+) jobs", self.title).group(1).replace(",", ""))


_NAME = re.compile(r"^\*\*(.+?)\*\*( — recommended)?  \n")


def page(at: AppTest) -> Page:
    names = [re.sub(r"\\(.)", r"\1", m.group(1)) for m in (_NAME.match(md.value) for md in at.markdown) if m]
    metrics = list(at.metric)
    assert len(metrics) == len(names) * len(CARD_METRICS), (names, len(metrics))
    cards = {name: {m.label.rstrip(" ★"): m.value for m in metrics[i * len(CARD_METRICS):(i + 1) * len(CARD_METRICS)]}
             for i, name in enumerate(names)}
    caption = next((c.value for c in at.caption if "replication" in c.value), "")
    # the verdict as the page says it: its headline and, in the expander under it, the rest
    said = [md.value for md in at.markdown if md.value.startswith("**Verdict:**")]
    said += [md.value for e in at.expander if e.label == DETAILS for md in e.markdown]
    verdict = re.sub(r"\\(.)", r"\1", "\n".join(said))
    return Page(at.subheader[0].value, caption, cards, verdict)


def knob_widget(at: AppTest, knob: str):
    """The sidebar widget of a knob id (its key ends with ``:<id>``; the prefix is the content key)."""
    found = [w for kind in ("number_input", "selectbox") for w in getattr(at.sidebar, kind)
             if w.key and w.key.split(":", 1)[-1] == knob]
    assert len(found) == 1, (knob, [w.key for w in found])
    return found[0]


def elements(root) -> list:
    """The elements under ``root`` (``at.sidebar``, ``at.main``) in the order they are drawn, blocks flattened."""
    out = []

    def walk(node) -> None:
        for child in getattr(node, "children", {}).values():
            out.append(child)
            walk(child)

    walk(root)
    return out


def submit(at: AppTest) -> AppTest:
    return at.button(key="FormSubmitter:knobs-Run").click().run()


def opened() -> AppTest:
    """The app on a link to ``TINY`` with Replications at 1 from the first run (set through the
    session state under the widget's key, one for the whole session)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(TINY)
    at.session_state[REPLICATIONS_KEY] = 1
    at.run()
    assert not at.exception and not at.error
    assert knob_widget(at, "replications").value == 1, "the link's widget keys changed: update opened()"
    return at


# --- Hand calculations ---------------------------------------------------------------------------


def annual_capital_per_usd(years: float, rate: float, residual: float) -> float:
    """Capital cost per year of one dollar of capex: straight line to the residual at rate 0, else
    the level annuity repaying it net of the discounted residual (DESIGN.md section 7)."""
    if rate == 0:
        return (1 - residual) / years
    v = (1 + rate) ** -years
    return (1 - residual * v) * rate / (1 - v)


def owned() -> dict[str, float]:
    """Each owned option's capex (USD): GPUs × the capex per GPU the knob shows."""
    k = current_knobs(SC)
    return {name: gpus * k.capex_per_gpu[name] for name, gpus in k.owned_gpus.items()}


def same_cards(before: Page, after: Page, options, but: tuple[str, ...] = ()) -> None:
    """The cards of ``options`` unchanged (but the metrics labelled ``but``)."""
    for o in options:
        assert ({k: v for k, v in after.cards[o].items() if k not in but}
                == {k: v for k, v in before.cards[o].items() if k not in but}), o


def close(shown: float, expected: float, usd: float = 1.0) -> None:
    """Two displayed whole-dollar values differ from the exact ones by at most $0.50 each."""
    assert abs(shown - expected) <= usd, (shown, expected)


# --- One case per knob -----------------------------------------------------------------------------

FAIR, AMORTISED, CASH, P95, DONE, ITERS = (label for _, label, *_ in CARD_METRICS)


@dataclass(frozen=True)
class Case:
    """How to test a knob: ``new(old)`` a valid new value; ``check(before, after, name, old, new)``
    what must move (``name``: the option or class the knob belongs to, or ""); ``bad`` an invalid
    value the widget accepts, or None when it offers none (``no_bad`` then proves that)."""

    new: Callable[[Any], Any]
    check: Callable[[Page, Page, str, Any, Any], None]
    bad: Any = None
    no_bad: Callable[[Any, str], None] | None = None


def check_gpus(before, after, name, old, new):
    renamed = name.replace(str(old), str(new))  # own-128 -> own-96: the option follows its size
    assert renamed in after.cards and name not in after.cards
    # cash: the capex of the GPUs removed, paid up front, plus running costs that scale with size
    capex = (old - new) * current_knobs(SC).capex_per_gpu[name]
    assert 0 < before.value(name, CASH) - after.value(renamed, CASH) - capex < 0.01 * capex
    assert after.value(renamed, P95) > before.value(name, P95)  # same jobs, fewer GPUs: longer waits
    same_cards(before, after, [o for o in before.cards if o != name])


def check_price(before, after, name, old, new):
    # a rental's bill is GPU-hours × price; the schedule does not depend on the price
    close(after.value(name, AMORTISED), before.value(name, AMORTISED) * new / old, 0.5 * new / old + 0.5)
    assert after.value(name, CASH) == after.value(name, AMORTISED)
    # the others' fair totals price their unfinished work at the cheapest rent: this one's
    same_cards(before, after, [o for o in before.cards if o != name], but=(FAIR,))


def check_capex(before, after, name, old, new):
    more = current_knobs(SC).owned_gpus[name] * (new - old)
    years = HOURS / YEAR_H
    close(after.value(name, CASH) - before.value(name, CASH), more * (1 + ECON.maintenance_frac_per_year * years))
    per_usd = annual_capital_per_usd(ECON.depreciation_years, ECON.cost_of_capital, ECON.residual_value_frac)
    close(after.value(name, AMORTISED) - before.value(name, AMORTISED),
          more * (per_usd + ECON.maintenance_frac_per_year) * years)
    same_cards(before, after, [o for o in before.cards if o != name])


def check_lead(before, after, name, old, new):
    # nothing runs before delivery: the jobs wait, fewer finish; no capital or power counted before
    assert after.value(name, P95) > before.value(name, P95)
    assert after.value(name, DONE) < before.value(name, DONE)
    assert after.value(name, AMORTISED) < before.value(name, AMORTISED)
    same_cards(before, after, [o for o in before.cards if o != name])


def check_scale(before, after, name, old, new):
    assert 1.3 < after.jobs / before.jobs < 1.7  # Poisson arrivals at 1.5 × the rate, ~160 jobs


def check_work_per_iteration(before, after, name, old, new):
    # a bigger model, longer or more uneven responses: more GPU time per iteration, so the
    # rental (billed for its GPU time, never queued) costs more
    rented = [o for o in before.cards if o not in current_knobs(SC).owned_gpus]
    assert rented and all(after.value(o, AMORTISED) > before.value(o, AMORTISED) for o in rented)
    assert after.jobs == before.jobs  # the same jobs


def check_params(before, after, name, old, new):
    check_work_per_iteration(before, after, name, old, new)
    assert all(after.value(o, ITERS) < before.value(o, ITERS) for o in before.cards)  # each iteration slower


def check_setup(before, after, name, old, new):
    # async sampling runs ahead of training: more iterations per day than a synchronous setup
    faster = new.endswith("async") and not old.endswith("async")
    for o in before.cards:
        assert (after.value(o, ITERS) > before.value(o, ITERS)) == faster, o


def check_depreciation(before, after, name, old, new):
    for o, capex in owned().items():  # amortised capital over the longer life; cash unchanged
        change = capex * HOURS / YEAR_H * (annual_capital_per_usd(new, ECON.cost_of_capital, ECON.residual_value_frac)
                                           - annual_capital_per_usd(old, ECON.cost_of_capital, ECON.residual_value_frac))
        assert change < 0
        close(after.value(o, AMORTISED) - before.value(o, AMORTISED), change)
        assert after.cards[o][CASH] == before.cards[o][CASH]
    same_cards(before, after, [o for o in before.cards if o not in owned()])


def check_electricity(before, after, name, old, new):
    for o in owned():  # energy bill: kWh × PUE × price, kWh between every node idle and at full power
        plan = PLANS[o]
        kwh = [plan.nodes * kw * HOURS for kw in (plan.gpu.node_idle_kw, plan.gpu.node_max_kw)]
        low, high = (k * ECON.pue * (new - old) for k in kwh)
        more = after.value(o, AMORTISED) - before.value(o, AMORTISED)
        assert low - 1 <= more <= high + 1, (low, more, high)
        close(after.value(o, CASH) - before.value(o, CASH), more)  # paid as it is used
    same_cards(before, after, [o for o in before.cards if o not in owned()])


def check_capital_rate(before, after, name, old, new):
    for o, capex in owned().items():
        change = capex * HOURS / YEAR_H * (annual_capital_per_usd(ECON.depreciation_years, new, ECON.residual_value_frac)
                                           - annual_capital_per_usd(ECON.depreciation_years, old, ECON.residual_value_frac))
        close(after.value(o, AMORTISED) - before.value(o, AMORTISED), change)
        assert after.cards[o][CASH] == before.cards[o][CASH]
    same_cards(before, after, [o for o in before.cards if o not in owned()])


def check_horizon(before, after, name, old, new):
    assert after.title.startswith(f"tiny: {new:g} days,") and before.title.startswith(f"tiny: {old:g} days,")
    assert 0.35 < after.jobs / before.jobs < 0.65  # half the days, about half the jobs


def check_seed(before, after, name, old, new):
    assert after.jobs != before.jobs  # other random jobs (154 and 157 here)


def check_replications(before, after, name, old, new):
    assert "±" not in " ".join(v for c in before.cards.values() for v in c.values())
    assert f"Means of {new} replications" in after.caption
    for o, card in after.cards.items():
        assert all("±" in card[label] for label in (AMORTISED, CASH, ITERS)), o


def check_p95_target(before, after, name, old, new):
    # a target decides, it does not simulate: the cards stay, the verdict holds the new target
    assert re.search(rf"p95 queue delay[^;]* ≤ {new:g} h", after.verdict) and f"≤ {new:g} h" not in before.verdict
    same_cards(before, after, list(before.cards))


def check_completion_target(before, after, name, old, new):
    # The verdict states the new target, with the recommended option's completion when it compares
    # two options, or alone when it names the only option that meets the targets.
    assert re.search(rf"completion[^;]* ≥ {new:g} %", after.verdict) and f"≥ {new:g} %" not in before.verdict, \
        after.verdict
    same_cards(before, after, list(before.cards))


def check_waiting(before, after, name, old, new):
    # queued GPU-hours × the price join every fair total: never lower, and more for the owned
    # cluster, whose jobs wait hours, than for the rental, whose wait is its provisioning; the
    # amortised and cash totals do not move
    for o in before.cards:
        assert after.value(o, FAIR) >= before.value(o, FAIR)
        assert after.cards[o][AMORTISED] == before.cards[o][AMORTISED] and after.cards[o][CASH] == before.cards[o][CASH]
    rise = {o: after.value(o, FAIR) - before.value(o, FAIR) for o in before.cards}
    assert rise["own-128"] > rise["cloud-od"] > 0


def not_negative(widget, name) -> None:
    assert widget.min == 0  # Streamlit refuses anything below


def replications_bounded(widget, name) -> None:
    assert (widget.min, widget.max) == (1, 10)  # Streamlit refuses anything outside


def setups_all_valid(widget, name) -> None:
    assert tuple(widget.options) == SETUPS
    k = current_knobs(SC)
    for setup in SETUPS:  # every choice the box offers is a valid scenario
        apply_knobs(SC, replace(k, classes={**k.classes, name: replace(k.classes[name], setup=setup)}))


CASES: list[tuple[str, Case]] = [  # (pattern of the knob id, its case); <n> is the option or class
    (r"gpus:(?P<n>.+)", Case(lambda v: v - 32, check_gpus, bad=0)),
    (r"price:(?P<n>.+)", Case(lambda v: round(v + 0.5, 2), check_price, bad=-1.0)),
    (r"capex:(?P<n>.+)", Case(lambda v: round(v) + 5000.0, check_capex, bad=0.0)),
    (r"lead:(?P<n>.+)", Case(lambda v: v + 7.0, check_lead, bad=-1.0)),
    (r"scale", Case(lambda v: v * 1.5, check_scale, bad=0.0)),
    (r"(?P<n>.+):params", Case(lambda v: v * 2, check_params, bad=0.0)),
    (r"(?P<n>.+):len", Case(lambda v: v * 2, check_work_per_iteration, bad=0)),
    (r"(?P<n>.+):cv", Case(lambda v: v * 2, check_work_per_iteration, bad=-1.0)),
    (r"(?P<n>.+):setup", Case(lambda v: "disaggregated async" if v != "disaggregated async" else "colocated sync",
                              check_setup, no_bad=setups_all_valid)),
    (r"econ:depreciation_years", Case(lambda v: v + 1, check_depreciation, bad=0.0)),
    (r"econ:electricity_usd_per_kwh", Case(lambda v: round(v * 2, 3), check_electricity, bad=-0.1)),
    (r"econ:cost_of_capital", Case(lambda v: 0.0 if v else 0.08, check_capital_rate, bad=-0.5)),
    (r"horizon", Case(lambda v: v / 2, check_horizon, bad=0.0)),
    (r"seed", Case(lambda v: v + 1, check_seed, bad=-1)),
    (r"replications", Case(lambda v: v + 1, check_replications, no_bad=replications_bounded)),
    (r"target:p95", Case(lambda v: 0.5, check_p95_target, no_bad=not_negative)),
    (r"target:completion", Case(lambda v: 50.0, check_completion_target, no_bad=not_negative)),
    (r"waiting", Case(lambda v: v + 3.0, check_waiting, no_bad=not_negative)),
]


def find_case(knob: str) -> tuple[Case | None, str]:
    """The knob's case (None if it has none) and the option or class it belongs to."""
    for pattern, case in CASES:
        m = re.fullmatch(pattern, knob)
        if m:
            return case, m.groupdict().get("n") or ""
    return None, ""


def case_of(knob: str) -> tuple[Case, str]:
    case, name = find_case(knob)
    if case is None:
        pytest.fail(f"the sidebar knob {knob!r} has no case in tests/app/test_app_knobs.py: add one to CASES")
    return case, name


def set_and_run(knob: str, value: Callable[[Any], Any]) -> tuple[AppTest, Page, Any, Any, Any]:
    """``opened()``, then the knob set to ``value(its value)`` and Run: the app, the first screen
    before, the knob's widget, its value before and the value set."""
    at = opened()
    before = page(at)
    widget = knob_widget(at, knob)
    old = widget.value
    new = value(old)
    widget.set_value(new)
    submit(at)
    return at, before, widget, old, new


@pytest.mark.slow
@pytest.mark.parametrize("knob", KNOBS)
def test_every_knob_moves_its_number(knob):
    case, name = case_of(knob)
    at, before, _, old, new = set_and_run(knob, case.new)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not any(w.value.startswith("**Stale:**") for w in at.warning)
    case.check(before, page(at), name, old, new)


@pytest.mark.slow
@pytest.mark.parametrize("knob", [k for k in KNOBS if getattr(find_case(k)[0], "bad", None) is not None])
def test_invalid_knob_is_marked_next_to_itself(knob):
    case, _ = case_of(knob)
    at, before, widget, _, _ = set_and_run(knob, lambda _: case.bad)
    label = widget.label
    assert not at.exception
    # under the knob: the sidebar element right after its widget is the error
    drawn = elements(at.sidebar)
    at_knob = next(i for i, e in enumerate(drawn) if getattr(e, "key", None) == widget.key)
    assert isinstance(drawn[at_knob + 1], Error), type(drawn[at_knob + 1]).__name__
    message = drawn[at_knob + 1].value
    assert message and len(at.sidebar.error) == 1
    # the red box, naming the knob by its label and not by a field path
    assert at.error and at.error[0].value.startswith("**These settings cannot be used.**")
    shown = at.code[0].value
    assert shown.startswith(f"{label}: ") and "options." not in shown and "workload." not in shown
    # the last results stay, marked stale
    assert page(at).cards == before.cards
    assert any(w.value.startswith("**Stale:**") and "knob" in w.value for w in at.warning)


@pytest.mark.parametrize("knob", [k for k in KNOBS if find_case(k)[0] is not None and find_case(k)[0].bad is None])
def test_knobs_without_an_invalid_value_offer_none(knob):
    case, name = case_of(knob)
    assert case.no_bad is not None, f"{knob}: give the case a bad value or prove its widget has none"
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(TINY)
    case.no_bad(knob_widget(at.run(), knob), name)


def test_the_form_shows_exactly_the_listed_knobs():
    """Every widget of the knob form is a knob of ``KNOBS`` and each is shown once: a widget added
    without a ``knob_paths`` entry (so without a case here) fails."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(TINY)
    at.run()
    keys = [w.key for kind in ("number_input", "selectbox", "text_input", "checkbox", "slider", "radio")
            for w in getattr(at.sidebar, kind) if w.key and ":" in w.key]
    assert sorted(k.split(":", 1)[1] for k in keys) == sorted(KNOBS)


# --- A knob whose problem is found on its whole class -------------------------------------------------


def test_a_class_level_problem_is_marked_under_the_knob_that_caused_it():
    at, before, widget, _, _ = set_and_run("rl-7b:params", lambda _: 2000.0)  # 4,000 GB of weights: no KV cache room
    assert not at.exception and page(at).cards == before.cards
    assert at.error and at.error[0].value.startswith("**These settings cannot be used.**")
    drawn = elements(at.sidebar)
    i = next(i for i, e in enumerate(drawn) if getattr(e, "key", None) == widget.key)
    assert isinstance(drawn[i + 1], Error) and "KV cache" in drawn[i + 1].value
    assert at.code[0].value.startswith(f"{widget.label}: ") and "workload.classes" not in at.code[0].value


# --- The editor's errors, by their fields ------------------------------------------------------------


def editing() -> tuple[AppTest, Page, str]:
    """``opened()`` on the Edit scenario tab: the app, the first screen and the editor's key prefix."""
    at = opened()
    before = page(at)
    at.radio(key="tab").set_value("Edit scenario").run()
    (name,) = [w.key for w in at.text_input if w.key and w.key.startswith("ed-") and w.key.endswith(":0:name")]
    return at, before, name[:-len("name")]


def still_stale(at: AppTest, before: Page) -> None:
    assert not at.exception and page(at).cards == before.cards
    assert any(w.value.startswith("**Stale:**") and "Edit scenario" in w.value for w in at.warning)


def test_editor_errors_by_their_fields():
    """A cross-field problem of a workload class (a 2,000B model on 16 GPUs) is shown inside that
    class's form, naming the fix; the results stay, marked stale; the knobs show no error."""
    at, before, prefix = editing()
    at.number_input(key=f"{prefix}workload.classes.0.model_params_b").set_value(2000.0).run()
    still_stale(at, before)
    drawn = elements(at.main)
    start = next(i for i, e in enumerate(drawn) if getattr(e, "key", None) == f"{prefix}workload.classes.0.name")
    errors = [i for i, e in enumerate(drawn) if isinstance(e, Error)]
    assert len(errors) == 1 and errors[0] > start  # in the class's form, below its name
    assert "rl\\-7b" in drawn[errors[0]].value and "tensor\\_parallel" in drawn[errors[0]].value
    assert any("1 problem to fix" in w.value and "class rl\\-7b" in w.value for w in at.warning)
    assert not at.sidebar.error


def renamed_to_a_taken_name() -> tuple[AppTest, Page, str]:
    at, before, prefix = editing()
    at.text_input(key=f"{prefix}options.0.name").input("cloud-od").run()  # own-128 renamed to the cloud's name
    return at, before, prefix.replace(":0:", ":1:")  # a rename is a structural change: a new widget generation


def test_a_duplicate_option_name_is_shown_under_the_option_renamed():
    at, before, prefix = renamed_to_a_taken_name()
    still_stale(at, before)
    drawn = elements(at.main)
    i = next(i for i, e in enumerate(drawn) if getattr(e, "key", None) == f"{prefix}options.0.name")
    assert isinstance(drawn[i + 1], Error) and "used twice" in drawn[i + 1].value
    j = next(i for i, e in enumerate(drawn) if getattr(e, "key", None) == f"{prefix}name")
    assert not isinstance(drawn[j + 1], Error)  # the scenario's name is not at fault


def test_the_editors_summary_names_the_field_of_a_duplicate_name():
    at, _, _ = renamed_to_a_taken_name()
    (summary,) = [w.value for w in at.warning if "problem to fix" in w.value]
    assert summary.endswith("option cloud\\-od › name.")


# --- Uploads and links -----------------------------------------------------------------------------------


def upload(at: AppTest, name: str, data: bytes) -> AppTest:
    return at.sidebar.file_uploader(key="upload").upload(name, data, "application/yaml").run()


def refused(at: AppTest, title: str) -> str:
    """The problems listed under the red box ``title``, after checking nothing else went wrong."""
    assert not at.exception
    assert at.error and at.error[0].value == f"**{title}**", [e.value for e in at.error]
    return at.code[0].value


def test_upload_with_invalid_yaml():
    at = upload(opened(), "broken.yaml", b"name: broken\nhorizon_days: [\n")
    shown = refused(at, "This scenario cannot be used.")
    assert shown.startswith("broken.yaml:") and "YAML syntax error" in shown
    assert not at.metric  # another scenario's numbers are never shown under this one's name


def test_upload_naming_an_unknown_trace():
    text = TINY.replace("workload:\n", "workload:\n  trace: nope.csv\n")
    shown = refused(upload(opened(), "mine.yaml", text.encode()), "This scenario cannot be used.")
    assert "mine.yaml:6" in shown and "workload.trace" in shown and "'nope.csv'" in shown  # file, line, field
    assert "lab-year.csv" in shown  # what it may read instead


def test_upload_too_large(monkeypatch):
    monkeypatch.setenv("COSTSIM_UPLOAD_MB", "1")  # before the session starts: it sizes the uploader widget
    at = opened()
    shown = refused(upload(at, "big.yaml", (TINY + "#" + "x" * 2**20 + "\n").encode()), "This scenario cannot be used.")
    assert shown.startswith("big.yaml") and "1.0 MiB" in shown and "at most 1 MiB" in shown
    assert not at.metric


def test_link_with_an_invalid_scenario(monkeypatch):
    monkeypatch.setenv("COSTSIM_RUN_SECONDS", "1")  # the shipped scenario it falls back to need not finish
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(TINY.replace("gpus: 128,", "gpus: -128,"))
    at.run()
    shown = refused(at, "The scenario in this link cannot be used; showing a shipped scenario instead.")
    assert "options.0.gpus" in shown and "greater than or equal to 1" in shown
    assert at.sidebar.selectbox(key="scenario_choice").value == "baseline"
    assert not any(o.startswith(LINK) for o in at.sidebar.selectbox(key="scenario_choice").options)  # not offered
