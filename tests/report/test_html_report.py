"""The one-file HTML report (costsim.report.build): it opens in headless Chromium with the
network cut off and draws every figure it holds, it leads with the verdict sentence costsim.decide
gives for the same runs, it names no external URL, user text is escaped, and the command writes
it atomically or exits 2 with nothing written."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import pytest
import typer
from paths import ROOT
from typer.testing import CliRunner

import costsim
from costsim.cli.report import report_command
from costsim.report.build import build_report, write_report
from costsim.runs.sweepfile import replication_seed, sweep_from_sets

NAME = "lab </script><script>window.__pwned = 1</script> & <b>co</b>"  # a scenario name is free text
SEED = 7


def tiny_text(name: str = "tiny") -> str:
    """The baseline scenario cut to 14 days (RL classes, three owned sizes and on-demand): runs in
    a fraction of a second and has every kind of figure."""
    text = (ROOT / "scenarios" / "baseline.yaml").read_text()
    text = text.replace("horizon_days: 365", "horizon_days: 14").replace("warmup_days: 14", "warmup_days: 1")
    return text.replace("name: baseline", f"name: '{name}'")  # YAML single quotes: the name has none


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    path = folder / "tiny.yaml"
    path.write_text(tiny_text(NAME))
    sc = costsim.load_scenario(path)
    runs = [costsim.simulate(sc, seed=replication_seed(SEED, r)) for r in range(2)]
    return path, sc, runs


@pytest.fixture(scope="module")
def page_html(tiny):
    _, _, runs = tiny
    return build_report(runs, targets=["p95_delay_h<=1000"])


def figures_written(text: str) -> int:
    return text.count('class="plotly-graph-div"')


# ------------------------------------------------------------------ the page itself


class _Markup(HTMLParser):
    """Every tag's attributes, the text of <style> and <script> blocks (a parser reads a script's
    body as text: strings inside plotly.js that merely build links are not the page's markup)."""

    def __init__(self):
        super().__init__()
        self.attrs, self.styles, self.scripts, self._in = [], [], [], None

    def handle_starttag(self, tag, attrs):
        self.attrs += [(tag, k, v or "") for k, v in attrs]
        self._in = tag if tag in ("style", "script") else None

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in == "style":
            self.styles.append(data)
        elif self._in == "script":
            self.scripts.append(data)


def test_no_external_url_in_any_src_or_href(page_html):
    m = _Markup()
    m.feed(page_html)
    remote = re.compile(r"\s*(https?:)?//", re.I)
    assert m.attrs and not [a for a in m.attrs if a[1] in ("src", "href", "action", "poster", "srcset", "data")
                            and remote.match(a[2])]
    assert not [a for a in m.attrs if a[1] == "src"]  # nothing loaded from a file either: all inline
    css = " ".join(m.styles)
    assert "@import" not in css and not re.search(r"url\(", css)
    assert len(m.scripts) == figures_written(page_html) + 1  # plotly.js inlined once, one per figure
    assert "https://cdn" not in " ".join(m.scripts[1:])  # the figures' scripts load nothing


def test_user_text_is_escaped(page_html):
    assert "<script>window.__pwned" not in page_html and "<b>co</b>" not in page_html
    assert html.escape(NAME) in page_html  # the title and the YAML at the end show it, escaped


def test_sections_in_order_and_both_totals_named(page_html, tiny):
    _, sc, runs = tiny
    ids = ["verdict", "options", "breakeven", "pareto", "costs", "delays", "iterations", "reliability", "scenario"]
    at = [page_html.index(f'id="{i}"') for i in ids]
    assert at == sorted(at)
    for words in ("amortised total (USD)", "cash spent (USD)", "unfinished work at the cheapest rent"):
        assert words in page_html
    v = costsim.decide(runs, ["p95_delay_h<=1000"])
    # Every option's amortised and cash totals, as decide computed them (whole dollars).
    for r in v.options.itertuples():
        assert f"${r.total_cost_usd:,.0f}" in page_html and f"${r.cash_spent_usd:,.0f}" in page_html
    assert f"★ {v.option} (recommended)" in page_html
    from costsim.catalog.load import default_catalog

    assert f"catalog {default_catalog().version}" in page_html and f"costsim {costsim.__version__}" in page_html
    assert html.escape(costsim.dump_scenario(sc)) in page_html


def test_an_option_that_cannot_keep_up_is_flagged(tmp_path):
    # 60 jobs of 8 GPUs × 6 h in the first 60 h on 8 owned GPUs for 10 days: offered load 1.5.
    from helpers import cloud, owned, scenario

    rows = [(float(i), 8, 6.0) for i in range(60)]
    sc = scenario(tmp_path, rows, [owned(gpus=8, scheduler="fifo"), cloud(price_per_gpu_hour=20.0)], 10.0)
    text = build_report(costsim.simulate(sc))
    assert "Options that cannot keep up (never recommended)" in text
    assert "own: offered load 150 % of its capacity" in text
    assert "⚠ cannot keep up" in text and "★ cloud (recommended)" in text


# ------------------------------------------------------------------ in the browser


@pytest.mark.e2e
def test_report_opens_offline_in_chromium_and_draws_every_figure(tiny, tmp_path):
    from browser_helpers import ARGS, CHROMIUM

    if CHROMIUM is None:
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    path, sc, runs = tiny
    tornado = None
    try:  # the tornado section too, where that module is there
        from costsim.decisions.sensitivity import tornado as make_tornado
        from costsim.plots.figures import tornado_figure  # noqa: F401

        tornado = make_tornado(sc, replications=1, seed=SEED, executor="local")
    except ImportError:
        pass
    out = write_report(runs, tmp_path / "report.html", tornado=tornado)
    text = out.read_text(encoding="utf-8")
    expected = figures_written(text)
    assert expected >= 8 + (tornado is not None)
    sentence = costsim.decide(runs).sentence  # an independent call on the same runs
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1600, "height": 1000})
            context.set_offline(True)
            blocked, dialogs = [], []

            def route(r):
                if r.request.url.startswith("file:"):
                    r.continue_()
                else:
                    blocked.append(r.request.url)
                    r.abort()

            context.route("**/*", route)
            page = context.new_page()
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(out.as_uri())
            page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot .main-svg').length > 0 && "
                                   f"document.querySelectorAll('.js-plotly-plot').length === {expected}",
                                   timeout=60_000)
            drawn = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map(
                el => [el.querySelectorAll('.main-svg').length, (el._fullData || []).length])""")
            assert len(drawn) == expected
            assert all(svgs > 0 and traces > 0 for svgs, traces in drawn), drawn
            assert sentence in page.inner_text("body")
            assert page.evaluate("window.__pwned") is None and not dialogs
            assert NAME in page.title()
            page.set_viewport_size({"width": 1280, "height": 800})  # a laptop: nothing wider than the page
            # Plotly redraws responsive figures shortly after a resize; wide tables scroll in their box.
            page.wait_for_function("document.documentElement.scrollWidth <= 1280", timeout=10_000)
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert blocked == []


# ------------------------------------------------------------------ the command


def cli() -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command("report")(report_command)
    app.command("noop")(lambda: None)  # two commands: typer then expects the command's name
    return app


def invoke(*args: str):
    return CliRunner().invoke(cli(), ["report", *map(str, args)])


@pytest.mark.slow
def test_cli_writes_the_report_of_replications_seeded_as_documented(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(tiny_text("cli"))
    out = tmp_path / "r.html"
    res = invoke(path, "--out", out, "--replications", 2, "--seed", SEED, "--target", "p95_delay_h<=1000",
                 "--executor", "local")  # the tornado's executors give one table: tests/decisions
    assert res.exit_code == 0, res.output
    sc = costsim.load_scenario(path)
    runs = [costsim.simulate(sc, seed=replication_seed(SEED, r)) for r in range(2)]
    sentence = costsim.decide(runs, ["p95_delay_h<=1000"]).sentence
    text = out.read_text(encoding="utf-8")
    assert html.escape(sentence) in text and "2 replications" in text
    assert 'id="tornado"' in text  # on by default: the tornado, or a note saying why there is none
    try:
        from costsim.decisions.sensitivity import tornado
    except ImportError:
        assert "not available" in text
    else:  # on the verdict's replications and targets: 2 runs per input value, seeded by --seed
        from costsim.present.tornado import sentence

        assert html.escape(sentence(tornado(sc, replications=2, seed=SEED, targets=["p95_delay_h<=1000"],
                                                    executor="local"))) in text
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


@pytest.mark.parametrize("args, says", [
    (["--out", "{tmp}"], "is a folder"),
    (["--out", "{tmp}/missing/r.html"], "does not exist"),
    (["--target", "p95<=4"], "unknown metric"),
    (["--variant", "v000"], "sweep folder only"),
])
def test_cli_bad_input_exits_2_and_writes_nothing(tmp_path, args, says):
    path = tmp_path / "s.yaml"
    path.write_text(tiny_text("bad"))
    keep = tmp_path / "r.html"
    keep.write_text("old")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    res = invoke(path, *(["--out", keep] if "--out" not in args else []), "--no-tornado", *args)
    assert res.exit_code == 2, res.output
    assert says in res.output and "Traceback" not in res.output
    assert keep.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "s.yaml"]


@pytest.mark.slow
def test_cli_on_a_sweep_folder(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(tiny_text("swept"))
    spec = sweep_from_sets(path, ["economics.electricity_usd_per_kwh=0.05,0.5"], replications=2, seed=SEED)
    results = costsim.sweep(spec, out=tmp_path / "sw", executor="local")
    out = tmp_path / "r.html"
    res = invoke(tmp_path / "sw", "--out", out, "--variant", "v001")
    assert res.exit_code == 0, res.output
    text = out.read_text(encoding="utf-8")
    for variant in ("v000", "v001"):  # each variant's verdict, as decide gives it on the sweep's runs
        assert html.escape(costsim.decide(results, variant=variant).sentence) in text
    assert 'id="verdict"' in text and "Verdict for variant v001" in text and 'id="pareto"' in text
    assert html.escape(costsim.dump_scenario(results.scenarios["v001"])) in text
    res = invoke(tmp_path / "sw", "--out", out)  # no --variant: each variant's verdict leads
    assert res.exit_code == 0, res.output
    text = out.read_text(encoding="utf-8")
    assert 'id="verdict"' in text and "Verdict for variant" not in text
    assert text.index('id="verdict"') < text.index('id="pareto"')
    for args, says in ((["--variant", "v9"], "not a variant"), (["--seed", "1"], "applies to a scenario")):
        res = invoke(tmp_path / "sw", "--out", tmp_path / "x.html", *args)
        assert res.exit_code == 2 and says in res.output, res.output
    res = invoke(tmp_path, "--out", tmp_path / "x.html")  # a folder, not a sweep's
    assert res.exit_code == 2 and "not a costsim sweep" in res.output
    assert not (tmp_path / "x.html").exists()


@pytest.mark.slow
def test_the_same_results_give_the_same_file_byte_for_byte(tiny):
    # Every output of a run is reproducible (tests/runs/test_outputs_atomic.py compares digests of two
    # runs' folders): the figures' div ids must not be random.
    _, _, runs = tiny
    assert build_report(runs) == build_report(runs)


def test_the_report_shows_the_jobs_over_time(page_html):
    # Issue 14 asks for the Gantt view in the report: one section, one figure, after reliability.
    assert page_html.count('id="timeline"') == 1
    assert page_html.index('id="reliability"') < page_html.index('id="timeline"') < page_html.index('id="scenario"')
    assert "Jobs over time" in page_html


def test_the_timeline_window_and_the_cap_per_option():
    from costsim.report.sections import gantt_window

    assert gantt_window(100.0) == (0.0, 100.0)  # shorter than two weeks: all of it
    assert gantt_window(365 * 24.0) == (182 * 24.0, 196 * 24.0)  # two weeks from mid-year
    # The cap is per option: with 3 options and max_jobs=5, each panel gets its 5 earliest jobs.
    from costsim.plots.figures import gantt

    res = costsim.simulate(ROOT / "scenarios" / "slurm-lab.yaml")
    fig = gantt(res, max_jobs=5)
    assert len(res.summary) == 3 and "showing the first 15 of" in fig.layout.title.text
    assert sum(len(t.y) for t in fig.data if t.name == "waiting") == 15
