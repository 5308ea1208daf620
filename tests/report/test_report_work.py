"""The report does only its own work: it takes the runs and the verdict it is given (``costsim
report`` decides once, and its tornado does not run the verdict's replications again), turns each
figure into data once, inlines plotly.js once, carries the scenario as it was run (its YAML reads
back as the same scenario), loads no module it does not use and tells every section it builds.
"""

from __future__ import annotations

import html
import json
import re

import plotly.graph_objects as go
import plotly.offline
import pytest
import yaml
from helpers import TINY_RL, invoke_cli

import costsim
from costsim.report import html as h
from costsim.report.build import build_report, replications_of
from costsim.scenario import scenario_from_data


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("work")
    (folder / "s.yaml").write_text(TINY_RL)
    sc = costsim.load_scenario(folder / "s.yaml")
    runs = replications_of(sc, 2, sc.seed)
    return folder, sc, runs, costsim.decide(runs, flips=False)


@pytest.fixture(scope="module")
def page(tiny):
    _, _, runs, verdict = tiny
    return build_report(runs, verdict=verdict)


def _drawn(div: str) -> list:
    """What a figure div's script hands ``Plotly.newPlot``: id, data, layout and config."""
    call = re.search(r'Plotly\.newPlot\(\s*("fig-[^"]+"|"[^"]+"),\s*(.*)\)\s*\};?\s*</script>', div, re.S)
    return json.loads(f"[{call[1]}, {call[2]}]")


def test_a_figure_is_turned_into_data_and_json_once_and_drawn_as_plotly_draws_it(monkeypatch):
    """``to_dict`` (plotly validates and deep-copies every property) is a figure's costliest step on
    the page: the div's id and its script read one copy, serialized once; the script hands
    plotly.js what plotly's own ``to_html`` hands it, and user text cannot close the script."""
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1.0, 2.0], name="</script><b>x & y"))
    to_dict, calls = go.Figure.to_dict, []
    monkeypatch.setattr(go.Figure, "to_dict", lambda self: calls.append(1) or to_dict(self))
    serialize, dumps = h.to_json_plotly, []
    monkeypatch.setattr(h, "to_json_plotly", lambda obj: dumps.append(1) or serialize(obj))
    div = h.figure(fig)
    assert calls == [1] and dumps == [1, 1]
    ident = re.search(r'id="(fig-[0-9a-f]{16})"', div)[1]
    monkeypatch.undo()
    theirs = fig.to_html(full_html=False, include_plotlyjs=False, config=h.FIGURE_CONFIG, div_id=ident,
                         default_width="100%", default_height="460px")
    assert _drawn(div) == _drawn(theirs)
    assert div.count("</script>") == 1 and 'style="height:460px; width:100%;"' in div


def test_plotly_js_is_inlined_once_and_no_figure_loads_it(page):
    library = plotly.offline.get_plotlyjs()
    assert page.count(library) == 1
    assert page.count("plotly.js v") == 1  # the library's banner: no second copy, whole or in part
    rest = page.replace(library, "")
    assert rest.count('class="plotly-graph-div"') >= 5 and "cdn.plot.ly" not in rest and "plotly-latest" not in rest


def test_the_scenario_at_the_end_reads_back_as_the_scenario_run(page, tiny):
    folder, sc, _, _ = tiny
    (shown,) = re.findall(r"<section id=\"scenario\">.*?<pre>(.*?)</pre>", page, re.S)
    again = scenario_from_data(yaml.safe_load(html.unescape(shown)), "report", folder)
    assert costsim.dump_scenario(again) == costsim.dump_scenario(sc)
    assert again.model_dump(mode="json") == sc.model_dump(mode="json")


def test_the_verdict_the_report_and_its_tornado_leave_scipy_and_plotly_express_unloaded():
    """scipy.stats takes half a second to import and none of them needs it (the t quantile is
    ``scipy.special.stdtrit``; a sampled sweep's Latin hypercube imports it when it draws);
    scipy.special (0.2 s) comes with the first interval or the first run that samples, not with
    the modules; plotly.express (with its data-frame layer) costs a report a tenth of a second and
    every figure is built from graph objects."""
    import subprocess
    import sys

    code = ("import sys, costsim.cli.commands, costsim.present.verdict, costsim.report.build, costsim.plots, "
            "costsim.decisions.sensitivity, costsim.runs.sweepfile; "
            "print([m for m in ('scipy.stats', 'scipy.special', 'plotly.express') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_verdict_given_is_not_decided_again_and_every_section_is_told(tiny, monkeypatch):
    from costsim.decisions import verdict as numbers

    _, _, runs, verdict = tiny
    decided, told = [], []
    decide = numbers.decide
    monkeypatch.setattr(numbers, "decide", lambda *a, **k: decided.append(1) or decide(*a, **k))
    text = build_report(runs, verdict=verdict, progress=lambda done, total: told.append((done, total)))
    assert decided == []
    total = told[-1][1]
    assert told == [(k, total) for k in range(1, total + 1)]
    # Fourteen built; no section for time to target (no scaling curve), for the tornado (none given)
    # nor for capacity over time (nothing grows, no tranches).
    assert total == 14 and text.count("<section") == 11
    build_report(runs)  # no verdict given: the page decides, once
    assert decided == [1]


@pytest.mark.slow
def test_costsim_report_decides_once_and_its_tornado_reuses_the_replications(tmp_path, monkeypatch):
    """Through the CLI with the tornado (in this process, to count): one ``decide`` in all (the flip search's, told on stderr),
    and the simulations are the replications, the flip search's and the tornado's ends, the
    tornado's base being the replications handed over."""
    from costsim.decisions import sensitivity
    from costsim.decisions import verdict as numbers
    from costsim.runs import api

    (tmp_path / "s.yaml").write_text(TINY_RL)
    decided, simulated = [], []
    decide, simulate, tornado = numbers.decide, api.simulate, sensitivity.tornado
    count = lambda *a, **k: decided.append(1) or decide(*a, **k)  # noqa: E731
    monkeypatch.setattr(numbers, "decide", count)
    monkeypatch.setattr(sensitivity, "decide", count)
    monkeypatch.setattr(api, "simulate", lambda *a, **k: simulated.append(1) or simulate(*a, **k))
    ends = []
    monkeypatch.setattr(sensitivity, "tornado", lambda *a, **k: ends.append(k["given"]) or tornado(*a, **k))
    res = invoke_cli("report", tmp_path / "s.yaml", "--replications", 2, "--executor", "local", "--out", tmp_path / "r.html")
    assert res.exit_code == 0, res.output
    assert decided == [1]
    (given,) = ends
    assert len(given.runs) == 2 and given.verdict is not None
    flips = int(re.search(r"searching the utilisation flip: (\d+) simulations?", res.stderr)[1])
    in_tornado = int(re.search(r"sensitivity tornado \(inputs at both ends\): (\d+) runs?", res.stderr)[1])
    assert len(simulated) == 2 + flips + in_tornado
    assert "the verdict's 2 replications, the same seeds, averaged" in html.unescape(
        (tmp_path / "r.html").read_text(encoding="utf-8"))


def test_a_pool_that_fails_stops_the_report_and_a_scenario_without_both_sides_is_a_note(tmp_path, monkeypatch):
    """A tornado that cannot be drawn for this scenario is a note on the page; a pool or a Dask
    cluster that fails under it is an error, not a page that says "No sensitivity tornado"."""
    from costsim.decisions import sensitivity
    from costsim.errors import ExecutorError
    from costsim.report.build import tornado_or_note
    from costsim.scenario import Problem, ScenarioError

    (tmp_path / "s.yaml").write_text(TINY_RL)
    sc = costsim.load_scenario(tmp_path / "s.yaml")

    def no_sides(*_a, **_k):
        raise ScenarioError("tornado", [Problem((), "needs an owned and a rented option")])

    monkeypatch.setattr(sensitivity, "tornado", no_sides)
    assert tornado_or_note(sc, 0) == "No sensitivity tornado: needs an owned and a rented option"

    def lost(*_a, **_k):
        raise ExecutorError("dask", "the scheduler at 127.0.0.1:1 went away")

    monkeypatch.setattr(sensitivity, "tornado", lost)
    with pytest.raises(ExecutorError):
        tornado_or_note(sc, 0)


def test_the_page_is_drawn_with_the_objects_alive_out_of_the_collector_s_walks(tmp_path, monkeypatch):
    """``costsim report`` draws its page with the objects alive before it (its runs, its imports)
    frozen out of the garbage collector's full walks, and gives them back after the page, written
    or not; a program that froze objects itself (the command runs inside others: a notebook, a
    test runner) keeps its own freeze."""
    import gc

    from typer.testing import CliRunner

    from costsim.cli.commands import app
    from costsim.report import build

    (tmp_path / "s.yaml").write_text(TINY_RL)
    frozen, draw = [], build.build_report
    monkeypatch.setattr(build, "build_report", lambda *a, **k: frozen.append(gc.get_freeze_count()) or draw(*a, **k))

    def report(name: str):
        return CliRunner().invoke(app, ["report", str(tmp_path / "s.yaml"), "--replications", "1", "--no-tornado",
                                        "--out", str(tmp_path / name)])

    earlier = gc.get_freeze_count()
    gc.unfreeze()  # whatever an earlier test in this process froze, back in the walks (frozen again below)
    assert report("r.html").exit_code == 0
    assert frozen[0] > 0 and gc.get_freeze_count() == 0
    gc.freeze()
    theirs = gc.get_freeze_count()
    try:
        assert report("r.html").exit_code == 0
        # not frozen again (its runs would join), not given back (some of theirs may have been freed)
        assert 0 < frozen[1] <= theirs and 0 < gc.get_freeze_count() <= theirs
    finally:
        gc.unfreeze()
    monkeypatch.setattr(build, "build_report", lambda *a, **k: 1 / 0)
    assert isinstance(report("q.html").exception, ZeroDivisionError)
    assert gc.get_freeze_count() == 0
    if earlier:
        gc.freeze()
