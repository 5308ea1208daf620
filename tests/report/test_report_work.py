"""The report does only its own work: it takes the runs and the verdict it is given (``costsim
report`` decides once, and its tornado does not run the verdict's replications again), turns each
figure into data once, inlines plotly.js once, carries the scenario as it was run (its YAML reads
back as the same scenario) and tells every section it builds.
"""

from __future__ import annotations

import html
import re

import plotly.graph_objects as go
import plotly.offline
import pytest
import yaml
from helpers import TINY_RL

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


def test_a_figure_is_turned_into_data_once_and_written_as_plotly_writes_it(monkeypatch):
    """``to_dict`` (plotly validates and deep-copies every property) is a figure's costliest step on
    the page: the div's id and the div itself read one copy, and the div is the one plotly writes."""
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1.0, 2.0]))
    to_dict, calls = go.Figure.to_dict, []
    monkeypatch.setattr(go.Figure, "to_dict", lambda self: calls.append(1) or to_dict(self))
    div = h.figure(fig)
    assert calls == [1]
    ident = re.search(r'id="(fig-[0-9a-f]{16})"', div)[1]
    assert div == '<div class="figure">' + fig.to_html(full_html=False, include_plotlyjs=False,
                                                      config=h.FIGURE_CONFIG, div_id=ident,
                                                      default_width="100%", default_height="460px") + "</div>"


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
