"""Figures hand plotly numpy arrays, never pandas objects (``costsim.plots.layout.Figure``): plotly
reads every pandas value through narwhals (its pandas backend imported on the first), so the
report and the dashboard built from pandas columns paid for it on every array. Checked in a fresh
interpreter, where narwhals' pandas backend is loaded only if some figure passes a pandas value;
and the figure a pandas column makes is the figure its numpy array makes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from helpers import shipped_file_cut
from paths import ROOT

from costsim.plots.layout import Figure, new_figure, new_subplots, plain

# Every figure the dashboard and the report draw, on a plain lab, a lab that grows over time and a
# lab with scaling curves (its time to target): a pandas value anywhere loads narwhals' backend.
DRAW_ALL = """
import sys
import costsim
from costsim import plots
from costsim.report.build import build_report
for path in sys.argv[1:]:
    runs = [costsim.simulate(costsim.load_scenario(path), seed=s) for s in (1, 2)]
    first = runs[0]
    for name, draw in {**plots.ALL_FIGURES, **plots.CAPACITY_FIGURES}.items():
        draw(first)
    plots.gantt(first)
    plots.cumulative_cost_band(runs)
    build_report(runs)
print("narwhals._pandas_like" in sys.modules)
"""


def test_no_figure_hands_plotly_a_pandas_value(tmp_path):
    names = ("baseline", "growing-lab", "flagship-scaling")
    for name in names:
        (tmp_path / name).mkdir()
    paths = [str(shipped_file_cut(tmp_path / name, name, 20, warmup_days=1)) for name in names]
    done = subprocess.run([sys.executable, "-c", DRAW_ALL, *paths], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_a_pandas_column_draws_what_its_array_draws():
    frame = pd.DataFrame({"x": [1.0, 2.5, 4.0], "y": [3, 1, 2], "c": ["a", "b", "c"]})
    ours, theirs = new_figure(), go.Figure()
    ours.add_scatter(x=frame["x"], y=frame["y"], customdata=frame[["y", "c"]], marker=dict(color=frame["y"]))
    theirs.add_scatter(x=frame["x"], y=frame["y"], customdata=frame[["y", "c"]], marker=dict(color=frame["y"]))
    ours.add_bar(x=frame["c"], y=frame.index)
    theirs.add_bar(x=frame["c"], y=frame.index)
    assert isinstance(ours, Figure)
    for mine, reference in zip(ours.data, theirs.data, strict=True):
        assert mine.to_plotly_json().keys() == reference.to_plotly_json().keys()
        for key, value in reference.to_plotly_json().items():
            if isinstance(value, np.ndarray):
                assert np.array_equal(mine[key], value), key
    assert np.array_equal(ours.data[0].marker.color, [3, 1, 2])
    assert isinstance(plain(frame["x"]), np.ndarray) and plain([1, 2]) == [1, 2]
    assert isinstance(new_subplots(rows=2, cols=1), Figure)
