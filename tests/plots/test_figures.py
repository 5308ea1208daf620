"""Figures (costsim.plots, costsim.charts): one Okabe–Ito style per option, stable across
scenarios, never shared within a figure, the own-vs-rent pair distinct without colour and under
deuteranopia; every figure builds for a baseline and a reserved/spot/hybrid scenario with units in
its hover labels and axis titles; the replications band is the hand-computed mean and t-interval;
utilisation's weekly line is the ratio of weekly sums; the timeline packs jobs without overlap."""

from __future__ import annotations

import hashlib
import itertools
import re

import numpy as np
import pytest
from helpers import every_figure
from helpers import short_shipped as short
from paths import ROOT
from scipy import stats

import costsim
from costsim.plots import figures as plots
from costsim.plots.styles import FAMILIES, OKABE_ITO, option_styles
from costsim.plots.timeline import lanes

SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    return costsim.simulate(short(tmp_path_factory, "baseline", 20), seed=1)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """Reserved (1 and 3 years), on-demand, spot and a hybrid: every dash."""
    return costsim.simulate(short(tmp_path_factory, "reserved-vs-on-demand", 20), seed=1)


# --- the style rule -------------------------------------------------------------------------------

def test_a_lone_option_takes_the_family_colour_its_name_hashes_to():
    # Independent restatement of the rule: sha256(name), first 8 bytes big-endian, mod family size.
    cases = [("own-256", "owned", "owned"), ("cloud-od", "cloud", "rented"), ("burst", "hybrid", "hybrid")]
    cases += [(f"{kind}-{i}", kind, family) for kind, family in (("owned", "owned"), ("cloud", "rented"))
              for i in range(20)]
    for name, kind, family in cases:
        h = int(hashlib.sha256(name.encode()).hexdigest()[:16], 16)
        assert option_styles({name: kind})[name].color == FAMILIES[family][h % len(FAMILIES[family])]


def test_the_same_name_keeps_its_style_in_other_option_sets():
    # own-256 and cloud-od: alone, in the baseline, and among other options of every kind.
    sets = [{"own-256": "owned", "cloud-od": "cloud"},
            {o.name: o.kind for o in costsim.load_scenario(ROOT / "scenarios" / "baseline.yaml").options},
            {o.name: o.kind for o in costsim.load_scenario(ROOT / "scenarios" / "spot-rollouts.yaml").options},
            {"own-256": "owned", "own-999": "owned", "cloud-od": "cloud", "zz-cloud": "cloud", "mix": "hybrid"}]
    for name in ("own-256", "cloud-od"):
        assert len({option_styles(s)[name] for s in sets if name in s}) == 1, name
    # Every shipped scenario: an option's style depends on its name and kind only, except where a
    # same-kind option that sorts before it holds its home colour (the documented exception; in
    # quota-limited-cloud a chain: one bumped option bumps the next).
    for path in SCENARIOS:
        sc = costsim.load_scenario(path)
        styles = option_styles(sc)
        for o in sc.options:
            alone = option_styles([o])[o.name]
            rivals = [p for p in sc.options if p.kind == o.kind and p.name < o.name  # took its home colour
                      and styles[p.name].color == alone.color]
            assert styles[o.name] == alone or rivals, (path.name, o.name)


def test_collisions_go_to_the_name_that_sorts_first():
    family = FAMILIES["owned"]
    names = [f"own-{i}" for i in range(40)]
    home = {n: option_styles({n: "owned"})[n].color for n in names}
    a, b = sorted(next((x, y) for x, y in itertools.combinations(names, 2) if home[x] == home[y]))
    styles = option_styles({b: "owned", a: "owned"})  # order given does not matter
    assert styles[a].color == home[a] and styles[b].color != home[a] and styles[b].color in family


def test_the_kind_fixes_the_dash_and_the_pattern(mixed):
    styles = option_styles(mixed)
    assert {n: (s.dash, s.pattern) for n, s in styles.items()} == {
        "reserved-256": ("longdash", "\\"), "reserved-384": ("longdash", "\\"), "reserved-256-3y": ("longdash", "\\"),
        "on-demand": ("dash", "/"), "spot": ("dot", "."), "reserved-256-burst": ("dashdot", "x")}
    assert option_styles({"own": "owned"})["own"].dash == "solid"


def test_no_two_options_share_colour_and_dash_or_colour_and_symbol():
    sets = [option_styles(costsim.load_scenario(p)) for p in SCENARIOS]
    kinds = ["owned", "cloud", "hybrid"]
    sets += [option_styles({f"opt-{k}-{i}": kinds[(i * 7 + k) % 3] for i in range(n)}) for k in range(5)
             for n in (4, 9, 16)]  # up to 16 options: more than the palette
    for styles in sets:
        pairs = [(s.color, s.dash) for s in styles.values()]
        assert len(set(pairs)) == len(pairs), styles
        marks = [(s.color, s.symbol) for s in styles.values()]
        assert len(set(marks)) == len(marks) or len(styles) > len(OKABE_ITO), styles
        assert all(s.color in OKABE_ITO for s in styles.values())


# --- deuteranopia -------------------------------------------------------------------------------

# Machado, Oliveira & Fernandes (2009), "A physiologically-based model for simulation of color
# vision deficiency", IEEE TVCG 15(6):1291-1298, Table: deuteranomaly at severity 1.0
# (= deuteranopia), applied to linear RGB.
MACHADO_DEUTERANOPIA = np.array([[0.367322, 0.860646, -0.227968],
                                 [0.280085, 0.672501, 0.047413],
                                 [-0.011820, 0.042940, 0.968881]])


def _lab(hex_colour: str, deuteranope: bool) -> np.ndarray:
    """CIELAB (D65) of an sRGB hex colour, as seen with deuteranopia when asked."""
    srgb = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255
    linear = np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)
    if deuteranope:
        linear = np.clip(MACHADO_DEUTERANOPIA @ linear, 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(a: str, b: str, deuteranope: bool = True) -> float:
    """CIE76 ΔE between two colours (> ~10: clearly different side by side)."""
    return float(np.linalg.norm(_lab(a, deuteranope) - _lab(b, deuteranope)))


MIN_DELTA_E = 40.0


def test_the_own_vs_rent_pair_stays_apart_with_deuteranopia(baseline):
    assert delta_e("#FFFFFF", "#000000", deuteranope=False) == pytest.approx(100, abs=0.01)  # the formula
    # What the issue saw: plotly's default colours for own-256 and cloud-od (1st and 4th) merge.
    assert delta_e("#636EFA", "#AB63FA") < MIN_DELTA_E
    styles = option_styles(baseline)
    own, rent = styles["own-256"], styles["cloud-od"]
    assert delta_e(own.color, rent.color) >= MIN_DELTA_E
    assert own.dash != rent.dash and own.symbol != rent.symbol  # and without colour at all
    # Any owned colour against any rented one (the families are chosen for this).
    for a, b in itertools.product(FAMILIES["owned"], FAMILIES["rented"]):
        assert delta_e(a, b) >= MIN_DELTA_E, (a, b)


# --- every figure ---------------------------------------------------------------------------------

UNITS = {  # what every hover label of the figure must state
    "cumulative_cost": "$", "cost_breakdown": "$", "delay_distribution": " h", "utilization_over_time": "%",
    "queue_over_time": "GPUs", "capacity_over_time": "GPUs", "iterations_per_day": "per day",
    "phase_breakdown": " s", "rollout_throughput": "tokens/s", "cumulative_cash": "$", "cash_flow": "$",
    "hybrid_parts": "GPU-hours", "lost_work": "GPU-hours", "gantt": "GPUs", "band": "$",
}
AXIS_UNIT = re.compile(r"\(|seconds|hours|USD|GPUs|GPU-hours|per day|per GPU|day|month|share|option|job class")


def option_traces(fig, names):
    """(legendgroup, colour, dash) of the option lines drawn in a figure."""
    return [(t.legendgroup, t.line.color, t.line.dash) for t in fig.data
            if t.type == "scatter" and t.legendgroup in names and "lines" in (t.mode or "lines")
            and t.fill != "toself" and t.opacity in (None, 1)]


@pytest.mark.parametrize("which", ["baseline", "mixed"])
def test_every_figure_builds_with_units_styles_and_a_legend_above(which, request):
    res = request.getfixturevalue(which)
    styles = option_styles(res)
    for name, fig in every_figure(res).items():
        assert fig.layout.title.text, name
        assert fig.layout.legend.orientation == "h" and fig.layout.legend.y > 1, name  # above the plot
        for axis in ("xaxis", "yaxis"):  # facets and panels: at least one titled, every title with a unit
            titles = [fig.layout[k].title.text for k in fig.layout.to_plotly_json() if k.startswith(axis)]
            assert any(titles) and all(AXIS_UNIT.search(t) for t in titles if t), (name, axis, titles)
        for t in fig.data:
            if t.hoverinfo == "skip":
                continue
            assert t.hovertemplate and UNITS[name] in t.hovertemplate, (name, t.name, t.hovertemplate)
            assert not re.search(r"\b(option|day|job_class)=", t.hovertemplate), (name, t.hovertemplate)
        drawn = option_traces(fig, set(styles))
        for group, colour, dash in drawn:
            if (colour, dash) == (styles[group].color, styles[group].dash):
                continue
            assert name == "capacity_over_time" and colour == styles[group].color  # its thin capacity line
        pairs = {(c, d): g for g, c, d in drawn}
        assert len(pairs) == len({(g, c, d) for g, c, d in drawn}), name  # no pair drawn for two options
        for t in fig.data:  # option bars carry the option's colour and kind pattern
            if t.type == "bar" and t.name in styles:
                assert (t.marker.color, t.marker.pattern.shape) == (styles[t.name].color, styles[t.name].pattern)


@pytest.mark.parametrize("which", ["baseline", "mixed"])
def test_every_figure_draws_in_plotly_white_for_the_trace_types_it_draws(which, request):
    """The template is plotly_white cut to the trace types drawn and to the cartesian layout: each
    figure draws only those trace types on no other kind of subplot, and for them (and the rest of
    the layout) the cut template says what plotly_white says."""
    import plotly.io as pio

    from costsim.plots.layout import DRAWN, TEMPLATE, UNDRAWN

    white = pio.templates["plotly_white"].layout.to_plotly_json()
    assert set(UNDRAWN) <= set(white)
    assert TEMPLATE.layout.to_plotly_json() == {k: v for k, v in white.items() if k not in UNDRAWN}
    for t in DRAWN:
        assert [d.to_plotly_json() for d in getattr(TEMPLATE.data, t)] == \
            [d.to_plotly_json() for d in getattr(pio.templates["plotly_white"].data, t)]
    for name, fig in every_figure(request.getfixturevalue(which)).items():
        assert {t.type for t in fig.data} <= set(DRAWN), name
        assert not set(fig.layout.to_plotly_json()) & set(UNDRAWN), name
        assert fig.layout.template.to_plotly_json() == TEMPLATE.to_plotly_json(), name


def line_of(fig, option):
    """The option's main line: every point, hovered, drawn in full (not the faint daily context)."""
    return next(t for t in fig.data if t.name == option and t.mode == "lines" and t.opacity is None)


def markers_of(fig, option):
    """The option's legend entry: its marked points alone, in the line's style."""
    return next(t for t in fig.data if t.name == option and t.showlegend is not False)


def test_weekly_utilisation_is_held_over_capacity_gpu_hours_of_the_week(baseline):
    ts = baseline.timeseries[baseline.timeseries["option"] == "own-256"]
    fig = plots.utilization_over_time(baseline)
    weekly = line_of(fig, "own-256")
    daily = next(t for t in fig.data if t.name == "own-256" and t.opacity is not None and t.opacity < 0.5)
    for day in (0, 5, 19):  # the first (a 4-day window), a middle and the last day
        window = ts[(ts["hour"] >= 24 * (day - 3)) & (ts["hour"] < 24 * (day + 4))]
        assert weekly.y[day] == pytest.approx(window["busy_gpus"].sum() / window["capacity_gpus"].sum(), rel=1e-9)
        one = ts[ts["hour"] // 24 == day]
        assert daily.y[day] == pytest.approx(one["busy_gpus"].sum() / one["capacity_gpus"].sum(), rel=1e-9)
    assert daily.line.width < weekly.line.width


def test_coinciding_lines_stay_visible(mixed):
    # On-demand and spot utilisation are both 100 % every day: same y, different dash, width and
    # marker positions, so the line drawn first still shows around the later one.
    fig = plots.utilization_over_time(mixed)
    a, b = (line_of(fig, n) for n in ("on-demand", "spot"))
    assert np.allclose(np.asarray(a.y, float), 1) and np.allclose(np.asarray(b.y, float), 1)
    assert a.line.dash != b.line.dash and a.line.width != b.line.width
    marked = [{x for x in markers_of(fig, n).x if x is not None} for n in ("on-demand", "spot")]
    assert marked[0] and marked[1] and marked[0] != marked[1]


def test_markers_are_drawn_only_where_shown_and_never_joined(mixed):
    """A line's markers are a trace of their own, its marked points each followed by a gap (so
    no line joins them), on the line's points, in the line's dash (the legend shows both); the
    line itself carries the hover and no markers (one SVG node per point in the browser)."""
    fig = plots.utilization_over_time(mixed)
    for option in mixed.summary["option"]:
        line, marks = line_of(fig, option), markers_of(fig, option)
        assert "markers" not in line.mode and line.showlegend is False and "%{" in line.hovertemplate
        assert marks.mode == "lines+markers" and marks.hoverinfo == "skip" and marks.legendgroup == line.legendgroup
        assert marks.x[1::2] == (None,) * (len(marks.x) // 2) and marks.y[1::2] == marks.x[1::2]
        points = dict(zip(line.x, line.y, strict=True))
        assert all(points[x] == y for x, y in zip(marks.x[::2], marks.y[::2], strict=True))
        assert 0 < len(marks.x) // 2 <= max(8, len(mixed.summary)) + 1
        assert (marks.line.dash, marks.line.color) == (line.line.dash, line.line.color)


def test_the_band_is_the_mean_and_t_interval_over_replications(tmp_path_factory):
    sc = short(tmp_path_factory, "baseline", 40)  # month 0 complete: hour 729 is its last hour
    runs = [costsim.simulate(sc, seed=s) for s in (11, 12, 13)]
    fig = plots.cumulative_cost_band(runs)
    for option in ("own-384", "cloud-od"):
        at_729 = np.array([r.timeseries.loc[(r.timeseries["option"] == option) & (r.timeseries["hour"] == 729),
                                            "cost_cum_usd"].item() for r in runs])
        mean, half = at_729.mean(), stats.t.ppf(0.975, 2) * at_729.std(ddof=1) / np.sqrt(3)
        line = next(t for t in fig.data if t.name == option)
        assert line.x[0] == 1 and line.y[0] == pytest.approx(mean, rel=1e-9)
        assert list(line.customdata[0]) == pytest.approx([mean - half, mean + half], rel=1e-9)
        band = next(t for t in fig.data if t.legendgroup == option and t.fill == "toself")
        assert max(band.y) == pytest.approx(max(line.customdata[:, 1]), rel=1e-12)
    assert "95%" in fig.layout.title.text and "3 replications" in fig.layout.title.text
    assert not any(t.fill == "toself" for t in plots.cumulative_cost_band(runs[:1]).data)  # one run: no band
    with pytest.raises(ValueError, match="non-empty list"):
        plots.cumulative_cost_band([])


# --- the timeline ---------------------------------------------------------------------------------

def test_lanes_never_overlap_and_use_as_few_rows_as_the_busiest_moment_needs():
    rng = np.random.default_rng(5)
    start = rng.uniform(0, 100, 300)
    end = start + rng.exponential(8, 300)
    row = lanes(start, end)
    for r in np.unique(row):
        s, e = start[row == r], end[row == r]
        order = np.argsort(s)
        assert np.all(s[order][1:] >= e[order][:-1])
    depth = max(int(np.sum((start <= t) & (end > t))) for t in start)  # most intervals open at once
    assert row.max() + 1 == depth


def test_the_gantt_draws_each_job_waiting_and_running(baseline):
    jobs = baseline.jobs[baseline.jobs["option"] == "own-256"]
    fig = plots.gantt(baseline, option="own-256")
    waiting = [t for t in fig.data if t.name == "waiting"]
    running = [t for t in fig.data if t.name != "waiting"]
    assert sum(len(t.y) for t in waiting) == len(jobs)
    assert sum(len(t.y) for t in running) == int(jobs["start_h"].notna().sum())
    # a bar runs from its start (days) for its time held
    by_id = jobs.set_index("job_id")
    for t in running:
        for base, width, custom in zip(t.base, t.x, t.customdata, strict=True):
            job = by_id.loc[custom[0]]
            end = job.end_h if job.end_h == job.end_h else baseline.scenario.horizon_h
            assert (base, width) == pytest.approx((job.start_h / 24, (end - job.start_h) / 24))
    few = plots.gantt(baseline, start_h=48, end_h=96, max_jobs=10)  # the cap is per option: 10 in each panel
    n = len(baseline.summary)
    assert sum(len(t.y) for t in few.data if t.name == "waiting") == 10 * n
    assert f"showing the first {10 * n} " in few.layout.title.text
    with pytest.raises(ValueError, match="'nope' is not one of"):
        plots.gantt(baseline, option="nope")
    with pytest.raises(ValueError, match="start_h"):
        plots.gantt(baseline, start_h=10, end_h=5)


def test_where_hybrids_ran_names_each_part_of_a_fleet(tmp_path):
    """Each part of a fleet is its own segment, named by its option and kind (not "base"), holding
    the job GPU-hours the jobs table says ran there. The fleet routing test's jobs: 8 GPUs each, own
    runs 10 h, the reservation 3 h then 5 h, the burst 1 h: 80, 64 and 8 job GPU-hours."""
    from helpers import cloud, owned, scenario

    res_opt = {"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": 8,
               "gpus_per_instance": 8, "price_per_gpu_hour": 1.5}
    od = cloud("od", price_per_gpu_hour=2.0, gpus_per_instance=8, billing_granularity_s=1, minimum_billing_s=0)
    fleet = {"name": "fleet", "kind": "fleet",
             "parts": [{"option": "own"}, {"option": "res"}, {"option": "od", "max_wait_h": 4.0}]}
    hybrid = {"name": "hyb", "kind": "hybrid", "base": "own", "burst": "od", "max_wait_h": 4.0}
    rows = [(0.0, 8, 10.0), (0.0, 8, 3.0), (0.0, 8, 5.0), (0.5, 8, 1.0)]
    sc = scenario(tmp_path, rows, [owned(gpus=8, gpus_per_node=8, failures=None, lead_time_days=0), res_opt, od,
                                   fleet, hybrid], horizon_days=2.0)
    res = costsim.simulate(sc)
    fig = plots.hybrid_parts(res)
    got = {(t.x[0], t.name): t.y[0] for t in fig.data}
    assert got[("fleet", "own (owned)")] == pytest.approx(80.0)
    assert got[("fleet", "res (reserved)")] == pytest.approx(64.0)
    assert got[("fleet", "od (on demand, burst)")] == pytest.approx(8.0)
    assert {name for x, name in got if x == "hyb"} == {"own (owned)", "od (on demand, burst)"}
    assert all("base" not in t.name for t in fig.data)
    assert [t.name for t in fig.data if t.showlegend] == ["own (owned)", "res (reserved)", "od (on demand, burst)"]


def test_a_job_class_looks_the_same_in_every_figure_and_its_jobs_are_read_once_each(monkeypatch):
    """``class_looks``: the scenario's classes in their order, then the classes only the jobs table
    holds (trace jobs) as they first appear, each once, read from the table once each rather than
    once a job; the job timeline and the other figures use this one function."""
    from types import SimpleNamespace

    import pandas as pd

    from costsim.plots import figures, timeline
    from costsim.plots.styles import CATEGORY_COLOURS, CATEGORY_PATTERNS, class_looks

    assert timeline.class_looks is figures.class_looks is class_looks
    jobs = pd.DataFrame({"job_class": pd.array(["trace-b", "rl-1", "trace-a", "trace-b", "rl-0"] * 1000,
                                               dtype="string[pyarrow]")})
    results = SimpleNamespace(scenario=SimpleNamespace(workload=SimpleNamespace(classes=[SimpleNamespace(name="rl-0"),
                                                                                          SimpleNamespace(name="rl-1")])),
                              jobs=jobs)
    read, every = [], pd.arrays.ArrowExtensionArray.__iter__

    def counted(self):
        for value in every(self):
            read.append(value)
            yield value

    monkeypatch.setattr(pd.arrays.ArrowExtensionArray, "__iter__", counted)
    order = ["rl-0", "rl-1", "trace-b", "trace-a"]
    assert class_looks(results) == {n: (CATEGORY_COLOURS[i], CATEGORY_PATTERNS[i]) for i, n in enumerate(order)}
    assert len(read) <= len(order)  # the distinct classes, not the 5,000 jobs
