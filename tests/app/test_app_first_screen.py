"""Issue 13 review findings on the first screen, its tables and the job timeline:

- the cash break-even names each pair and says in how many replications a month was seen, and
  never says "never, but only until month 0" (item 4);
- the tables name the amortised and cash totals and say they are the first replication's while
  the cards are means (item 5);
- six options in one row of cards, the recommended first, no empty boxes (item 7);
- in the Gantt each job class has its own pattern, unfinished jobs an outline (item 10).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from paths import APP
from streamlit.testing.v1 import AppTest

import costsim
from costsim.dashboard import SCENARIO_DIR, encode_scenario
from costsim.present.headline import CARD_METRICS, breakeven_sentence, breakeven_versus
from costsim.results.finance import breakeven_over
from costsim.runs.sweepfile import replication_seed

pytestmark = pytest.mark.usefixtures("fresh_cache_data")

NAN = math.nan


def cut(name: str, days: int) -> str:
    """A shipped scenario's text over ``days`` days."""
    text = (SCENARIO_DIR / f"{name}.yaml").read_text()
    assert "horizon_days: 365\n" in text
    return text.replace("horizon_days: 365\n", f"horizon_days: {days}\n")


def clauses(sentence: str) -> dict[tuple[str, str], str]:
    """``{(option, rental): what the sentence says of the pair}``; each pair said at most once."""
    body = sentence.removeprefix("Cash break-even: ").split(". Against ")[0].removesuffix(".")
    out = {}
    for clause in re.split(r"; (?![^(]*\))", body):  # "; " outside the parentheses
        head, when = clause.split(": ", 1)
        names, rental = head.rsplit(" vs ", 1)
        for option in re.split(r", | and ", names):
            assert (option, rental) not in out, sentence
            out[option, rental] = when
    return out


def table(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["option", "versus", "breakeven_month", "breakeven_month_extrapolated",
                                       "cheaper_until_month"])


# --- 4: the break-even sentence -------------------------------------------------------------------

def test_breakeven_names_each_pair_and_counts_the_replications():
    # Three replications of two options against two rentals, each outcome written out by hand
    # (month numbers as finance.breakeven writes them, counted from 1).
    reps = [table([("res", "od", NAN, NAN, NAN), ("res", "spot", NAN, NAN, NAN),
                   ("own", "od", 4.0, 4.0, NAN), ("own", "spot", NAN, 15.0, 3.0)]),
            table([("res", "od", NAN, NAN, 1.0), ("res", "spot", NAN, NAN, NAN),
                   ("own", "od", 4.0, 4.0, NAN), ("own", "spot", NAN, 17.0, 5.0)]),
            table([("res", "od", NAN, NAN, 1.0), ("res", "spot", NAN, NAN, NAN),
                   ("own", "od", NAN, NAN, 6.0), ("own", "spot", NAN, 16.0, NAN)])]
    both = breakeven_sentence(breakeven_over(reps))
    said = clauses(both)
    assert said == {
        ("res", "od"): "not within the horizon (cheaper through the first month, then dearer, in 2 of 3 replications)",
        ("res", "spot"): "not within the horizon (dearer every month)",
        # the month numbers as written: 4 and 4 are month 4
        ("own", "od"): "from month 4 (in 2 of 3 replications)",
        # 3 and 5 (mean 4) cheaper first; 15, 17, 16 (mean 16) as estimates
        ("own", "spot"): "not within the horizon (cheaper through month 4, then dearer, mean of 2 of 3 replications; "
                         "about month 16 if it went on, mean of 3 of 3 replications)",
    }
    assert "never" not in both and "only until" not in both
    only_od = breakeven_sentence(breakeven_over(reps), "od")
    assert set(clauses(only_od)) == {("res", "od"), ("own", "od")}
    assert only_od.endswith(" Against spot: see the Cost tab.")
    # one run (a plain finance.breakeven table): no counts, the same words
    one = clauses(breakeven_sentence(reps[1]))
    assert one["res", "od"] == "not within the horizon (cheaper through the first month, then dearer)"
    assert one["own", "spot"] == ("not within the horizon (cheaper through month 5, then dearer; "
                                  "about month 17 if it went on)")
    assert one["own", "od"] == "from month 4"


def test_the_sentence_is_against_the_recommended_rental_or_the_cheapest_that_keeps_up():
    pairs = breakeven_over([table([("own", "od", 4.0, 4.0, NAN), ("own", "spot", NAN, NAN, NAN)])])
    cards = pd.DataFrame({"option": ["own", "od", "spot"], "keeps_up": [True, True, False],
                          "cash_spent_usd": [5.0, 9.0, 1.0]})
    assert breakeven_versus(pairs, cards, "spot") == "spot"  # the recommendation itself
    assert breakeven_versus(pairs, cards, "own") == "od"  # spot is cheaper but cannot keep up
    assert breakeven_versus(pairs, cards.assign(keeps_up=False), None) == "spot"  # none keeps up: the cheapest
    assert breakeven_versus(pairs.iloc[0:0], cards, "own") is None


# --- 4 and 7 on the dashboard: reserved-vs-on-demand over 60 days, six options --------------------

CARD_NAME = re.compile(r"^\*\*(.+?)\*\*( — recommended)?  \n")


def card_names(at: AppTest) -> list[str]:
    return [re.sub(r"\\(.)", r"\1", m.group(1)) for m in (CARD_NAME.match(md.value) for md in at.markdown) if m]


@pytest.fixture(scope="module")
def reserved():
    """The dashboard on reserved-vs-on-demand over 60 days (three replications, the default), and
    the same replications run here with ``costsim.simulate``."""
    text = cut("reserved-vs-on-demand", 60)
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["s"] = encode_scenario(text)
    at.run()
    assert not at.exception and not at.error
    sc = costsim.load_scenario_text(text, "r.yaml", SCENARIO_DIR)
    runs = [costsim.simulate(sc, seed=replication_seed(sc.seed, r)) for r in range(3)]
    return at, runs


@pytest.mark.slow
def test_first_screen_breakeven_against_the_runs(reserved):
    at, runs = reserved
    verdict = costsim.decide(runs)
    (caption,) = [c.value for c in at.caption if c.value.startswith("Cash break")]
    sentence = re.sub(r"\\(.)", r"\1", caption)  # under the cards, on its own
    said = clauses(sentence)
    rentals = {"on-demand", "spot"}
    shown = {v for _, v in said}
    assert len(shown) == 1 and shown <= rentals  # one rental: the first screen stays short
    (versus,) = shown
    if verdict.option in rentals:
        assert versus == verdict.option
    assert f"Against {(rentals - shown).pop()}: see the Cost tab." in sentence
    committed = ["reserved-256", "reserved-384", "reserved-256-3y", "reserved-256-burst"]
    assert sorted(o for o, _ in said) == sorted(committed)  # each option once, paired
    for option in committed:  # what each replication's own table says of the pair
        rows = [r.breakeven.set_index(["option", "versus"]).loc[(option, versus)] for r in runs]
        found = sum(not math.isnan(r.breakeven_month) for r in rows)
        cheaper = [r.cheaper_until_month for r in rows if not math.isnan(r.cheaper_until_month)]
        when = said[option, versus]
        if found:
            assert when.startswith("from ") and f"{found} of 3 replications" in when
        elif cheaper:
            assert "cheaper through " in when and f"{len(cheaper)} of 3 replications" in when
        else:
            assert "cheaper" not in when
    assert "never" not in sentence and "only until" not in sentence


def test_six_cards_in_one_row_the_recommended_first(reserved):
    at, runs = reserved
    verdict = costsim.decide(runs)
    names = card_names(at)
    options = list(runs[0].summary["option"])
    assert len(options) == 6 and sorted(names) == sorted(options)
    assert names[0] == verdict.option and names[1:] == [o for o in options if o != verdict.option]
    main = [c for c in at.main.columns]  # the first screen's only columns: one per card, none empty
    assert len(main) == 6 and all(len(c.children) for c in main)
    assert len(at.metric) == 6 * len(CARD_METRICS)


def test_cards_per_row():
    from costsim.dashboard.views import cards_per_row

    assert [cards_per_row(n) for n in (1, 4, 6, 7, 8, 12, 13)] == [1, 4, 6, 4, 4, 6, 5]


# --- 5: the tables name their totals and say which replication they show -------------------------

def test_totals_are_named_as_on_the_cards():
    from costsim.dashboard.views import readable

    assert readable("total_cost_usd") == "amortised total ($)"
    assert readable("cash_spent_usd") == "cash spent ($)"
    assert readable("queue_delay_p95_h") == "queue delay p95 (h)"  # the others in their own words


@pytest.mark.parametrize("tab", ["Overview", "Failures", "Iteration speed"])
def test_first_replication_tables_say_so(reserved, tab):
    from costsim.dashboard.tabs import FIRST_REPLICATION

    at, _ = reserved
    at = at.radio(key="tab").set_value(tab).run()
    assert not at.exception and not at.error
    assert FIRST_REPLICATION in [c.value for c in at.caption]


# --- 10: the Gantt tells job classes apart without colour ------------------------------------------

@pytest.fixture(scope="module")
def baseline():
    sc = costsim.load_scenario_text(cut("baseline", 20), "b.yaml", SCENARIO_DIR)
    return costsim.simulate(sc, seed=1)


def test_gantt_classes_have_their_own_pattern_and_unfinished_jobs_an_outline(baseline):
    from costsim.plots.figures import gantt

    fig = gantt(baseline, option="own-256")
    held = [t for t in fig.data if t.name != "waiting"]
    jobs = baseline.jobs[baseline.jobs["option"] == "own-256"].set_index("job_id")
    patterns = {}
    for t in held:
        shapes = t.marker.pattern.shape
        patterns.setdefault(t.name, set()).update([shapes] if isinstance(shapes, str) else shapes)
        finished = np.array([bool(jobs.loc[c[0], "completed"]) for c in t.customdata])
        widths = np.asarray(t.marker.line.width, dtype=float)
        assert (widths[finished] == 0).all() and (widths[~finished] > 0).all(), t.name
        assert t.marker.line.color == "#000000"  # drawn only where the outline is wider than 0
    assert len(patterns) >= 2 and all(len(p) == 1 for p in patterns.values())  # one pattern per class
    shapes = [p for (p,) in patterns.values()]
    assert len(set(shapes)) == len(shapes)  # and they differ
    assert any((np.asarray(t.marker.line.width) > 0).any() for t in held)  # this run has unfinished jobs
    waiting = [t for t in fig.data if t.name == "waiting"]
    assert all(w.width < t.width for w in waiting for t in held)  # waiting told apart by its width too
    assert "outline: unfinished" in fig.layout.title.text


def test_a_narrow_card_wraps_a_value_only_before_its_interval():
    from costsim.present.headline import card_value

    # the half-width's spaces are no-break: "23.2 h ±" / "45.5 h" cannot be split apart
    assert card_value("queue_delay_p95_h", 23.2, 45.5) == "23.2 h ±\u00a045.5\u00a0h"
    assert card_value("total_cost_usd", 5_038_261.0, 59_247.0) == "$5,038,261 ±\u00a0$59,247"
    assert card_value("total_cost_usd", 5_038_261.0) == "$5,038,261"


def test_no_star_for_an_option_the_verdict_rules_out():
    # An option that keeps up but misses a target is cheaper yet cannot be recommended: the ★
    # marks the best value among those that could be, so it gets none.
    import pandas as pd

    from costsim.present.headline import best_options

    table = pd.DataFrame({"option": ["cheap-but-slow", "rent"], "keeps_up": [True, True],
                          "eligible": [False, True], **{col: [1.0, 2.0] for col, *_ in CARD_METRICS}})
    best = best_options(table)
    assert all(best[col] == {"rent"} for col, *_ in CARD_METRICS)


def test_a_cheaper_option_the_verdict_rules_out_shows_its_differences_in_grey(monkeypatch):
    # option_card's st.metric calls recorded (no script run: AppTest.from_function would leave its
    # temporary script as this process's __main__, which spawned worker processes then re-run).
    from costsim.dashboard import views as dashboard_views
    from costsim.dashboard.views import delta_color, option_card

    shown: list[tuple[str, str | None, str]] = []
    monkeypatch.setattr(dashboard_views.st, "metric",
                        lambda label, value, delta=None, help=None, delta_color="normal": shown.append((label, delta, delta_color)))
    monkeypatch.setattr(dashboard_views.st, "markdown", lambda *a, **k: None)

    def row(name, eligible, value):
        data = {"option": name, "subtitle": "owned", "keeps_up": True, "why": "", "eligible": eligible}
        for col, *_ in CARD_METRICS:
            data[col], data[f"{col}_pm"] = value, float("nan")
        return pd.Series(data)

    ref = row("rent", True, 2.0)
    option_card(row("cheap-but-slow", False, 1.0), {}, ref, recommended=False)
    option_card(row("cheap-and-fine", True, 1.0), {}, ref, recommended=False)
    n = len(CARD_METRICS)
    assert len(shown) == 2 * n and all(delta is not None for _, delta, _ in shown)
    assert {c for _, _, c in shown[:n]} == {"off"}  # grey: the verdict cannot choose it
    assert [c for _, _, c in shown[n:]] == ["inverse" if lower else "normal" for _, _, lower, _ in CARD_METRICS]
    assert (delta_color(True, False), delta_color(True, True), delta_color(False, True)) == ("off", "inverse", "normal")


# --- the session's runs between reruns -----------------------------------------------------------

def frames(run: costsim.Results) -> dict[str, pd.DataFrame]:
    return {name: value for name, value in vars(run).items() if isinstance(value, pd.DataFrame)}


@pytest.mark.slow
def test_reruns_show_runs_no_tab_has_modified(reserved):
    """Every tab drew from the session's runs (AppTest runs every tab's body), and a rerun (a
    widget) drew them again from the same objects: each table is still the library's."""
    at, runs = reserved
    at.run()
    assert not at.exception and not at.error
    keys, shown = at.session_state["shown_runs"]
    assert len(shown) == len(runs) == 3
    for mine, truth in zip(shown, runs, strict=True):
        assert frames(mine).keys() == frames(truth).keys()
        for name, table in frames(truth).items():
            pd.testing.assert_frame_equal(frames(mine)[name], table, obj=name)


@pytest.mark.slow
def test_a_session_keeps_no_runs_larger_than_its_share_of_the_cache(monkeypatch):
    """Runs larger than the session's share of COSTSIM_CACHE_MB (an eighth) are unpickled from
    the cache on each rerun instead of kept in the session."""
    monkeypatch.setenv("COSTSIM_CACHE_MB", "0.05")  # a share of 6.4 KiB: smaller than any run
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["s"] = encode_scenario(cut("reserved-vs-on-demand", 20))
    at.run()
    assert not at.exception and not at.error and at.metric
    assert "shown_runs" not in at.session_state
