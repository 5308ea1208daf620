"""The one-file HTML report (DESIGN.md section 14): ``costsim report SCENARIO|SWEEP_DIR --out report.html``.

``build_report(source)`` returns one self-contained HTML page: plotly.js inlined once, every figure
drawn by it, no external URL (it opens with no network). It leads with the verdict
(``costsim.decide``) and its confidence, then the options side by side (amortised total and cash
spent, the fair total with unfinished work priced at the cheapest rent), time to target (when a
class has a ``scaling`` curve), break-even, the Pareto
frontier, the sensitivity tornado, cost breakdown, delays, iteration speed and reliability, the
assumptions (every value the numbers rest on, with its source and date), and ends with the scenario
as YAML and the catalog and costsim versions.

``source``: a Results, a list of Results (replications of one scenario), a SweepResults, or a
sweep's output folder. Figures drawn from one run's detail (delays, iterations, reliability) use
the first replication; a sweep keeps no such detail, so its report has the tables and the frontier.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from costsim.plots import figures as plots
from costsim.present.formats import plain
from costsim.report import html as h
from costsim.report.assumptions import assumptions_section
from costsim.report.capacity import capacity_section
from costsim.report.sections import (
    FRONTIER_ROWS,
    breakeven_section,
    footer,
    options_section,
    pareto_section,
    run_figure_sections,
    time_to_target_section,
    tornado_section,
    verdict_parts,
)
from costsim.report.sweep import read_sweep_folder
from costsim.results.contract import Results
from costsim.runs.outdir import OutputError
from costsim.scenario import Problem, ScenarioError

if TYPE_CHECKING:
    from costsim.runs.sweep import SweepResults

Progress = Callable[[int, int], None]
"""``progress(done, total)``: ``done`` sections of the page built, of ``total``."""


@dataclass
class _Input:
    """A report's source, normalised: replications of one scenario, or a sweep (and a variant)."""

    runs: list[Results] = field(default_factory=list)
    sweep: SweepResults | None = None
    variant: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def scenario(self):
        if self.runs:
            return self.runs[0].scenario
        return (self.sweep.scenarios or {}).get(self.variant) if self.variant else None


def _input(source, variant: str | None) -> _Input:
    from costsim.runs.sweep import SweepResults

    if isinstance(source, (str, os.PathLike)):
        sweep, notes = read_sweep_folder(source)
        return _input_sweep(sweep, variant, notes)
    if isinstance(source, SweepResults):
        return _input_sweep(source, variant, [])
    if variant is not None:
        raise ScenarioError("--variant", [Problem((), "applies to a sweep only")])
    if isinstance(source, Results):
        return _Input(runs=[source])
    if isinstance(source, Sequence) and source and all(isinstance(r, Results) for r in source):
        return _Input(runs=list(source))
    raise ScenarioError("report", [Problem((), "needs a Results, a list of Results, a SweepResults or a sweep folder; "
                                               f"got {type(source).__name__}")])


def _input_sweep(sweep, variant: str | None, notes: list[str]) -> _Input:
    variants = list(dict.fromkeys(sweep.runs["variant"]))
    if variant is not None and variant not in variants:
        raise ScenarioError("--variant", [Problem((), f"{variant!r} is not a variant of this sweep; one of: "
                                                      f"{', '.join(variants[:10])}{' …' if len(variants) > 10 else ''}")])
    return _Input(sweep=sweep, variant=variant or (variants[0] if len(variants) == 1 else None), notes=notes)


# ------------------------------------------------------------------ the page

def _header(title: str, sub: str, notes: list[str]) -> str:
    out = f"<header><h1>{h.esc(title)}</h1>{h.para(sub, 'sub')}"
    return out + (h.bullets(notes) if notes else "") + "</header>"


def _built(sections: Sequence[Callable[[], str]], progress: Progress | None) -> str:
    """Each section built in turn and joined; ``progress(done, total)`` after each."""
    out = []
    for done, build in enumerate(sections, start=1):
        out.append(build())
        if progress is not None:
            progress(done, len(sections))
    return "".join(out)


def _scenario_body(src: _Input, wanted, tornado, given_frontier, verdict=None,
                   progress: Progress | None = None) -> tuple[str, str]:
    from costsim.present.verdict import decide

    first, reps = src.runs[0], len(src.runs)
    sc = first.scenario
    v = verdict if verdict is not None else decide(src.runs, wanted)
    seeds = ", ".join(str(r.seed) for r in src.runs[:5]) + (", …" if reps > 5 else "")
    label = f"{reps} replication{'s' if reps > 1 else ''} (seed{'s' if reps > 1 else ''} {seeds})"
    mean = "Means over the replications." if reps > 1 else ""
    sub = f"{plain(sc.horizon_days)} days, {len(sc.options)} options, {label}."
    body = _built([lambda: h.section("Verdict", *verdict_parts(v, label), anchor="verdict"),
                   lambda: options_section(v, mean),
                   lambda: time_to_target_section(src.runs, v)[0],  # "" unless a class has a scaling curve
                   lambda: breakeven_section(src.runs)[0],
                   lambda: capacity_section(first, reps),  # "" unless the scenario changes over time
                   lambda: pareto_section(v.options, given_frontier, "Options on the frontier")[0],
                   lambda: tornado_section(tornado)[0],
                   *run_figure_sections(first, reps),
                   lambda: assumptions_section(sc), lambda: footer(sc)], progress)
    return sc.name, _header(sc.name, sub, src.notes) + body


VARIANT_COLUMNS: list[h.Column] = [
    ("variant", "variant", str, None), ("swept values", "swept", str, None),
    ("recommended", "option", str, None), ("the same cost", "close", str, None),
    ("verdict", "sentence", str, None),
]


def _sweep_body(src: _Input, wanted, given_frontier, progress: Progress | None = None) -> tuple[str, str]:
    from types import SimpleNamespace

    from costsim.present.verdict import decide

    sweep = src.sweep
    assert sweep is not None  # an _Input without runs holds a sweep (``_input``)
    variants = list(dict.fromkeys(sweep.runs["variant"]))
    reps = int(sweep.runs["replication"].nunique())
    swept = {r["variant"]: ", ".join(f"{k}={r[k]}" for k in sweep.variants.columns[1:])
             for r in sweep.variants.to_dict("records")}
    label = f"{reps} replication{'s' if reps > 1 else ''} per variant"

    def lead() -> str:
        v = decide(sweep, wanted, variant=src.variant)
        return (h.section(f"Verdict for variant {src.variant} ({swept.get(src.variant, '')})",
                          *verdict_parts(v, f"{label} of the sweep"), anchor="verdict")
                + options_section(v, "Means over the replications."))

    def per_variant() -> str:
        # The per-variant table leaves out the utilisation flip (a search by re-simulation per
        # variant); the variant the report leads with has it.
        verdicts = {x: decide(sweep, wanted, variant=x, flips=False) for x in variants[:FRONTIER_ROWS]}
        table = pd.DataFrame([{"variant": x, "swept": swept.get(x, ""), "option": v.option or "none",
                               "close": "yes" if v.same_cost else "", "sentence": v.sentence}
                              for x, v in verdicts.items()])
        return h.section("Verdict per variant", h.table(table, VARIANT_COLUMNS, wrap=("sentence",)),
                         anchor="variants" if src.variant else "verdict")

    def costs() -> str:  # the summary's cost lines are all cost_breakdown reads
        runs = sweep.runs[sweep.runs["variant"] == src.variant]
        one = runs.groupby("option", sort=False)[[c for c in runs if str(c).startswith("cost_")]].mean().reset_index()
        return h.section(f"Cost breakdown of variant {src.variant} (means)",
                         h.figure(plots.cost_breakdown(SimpleNamespace(summary=one))), anchor="costs")

    def end() -> str:
        note = h.para("A sweep keeps one summary row per run: for the delay, iteration-speed and reliability "
                      "figures, report on a variant's scenario (costsim report SCENARIO).", "note")
        vt = h.table(sweep.variants.astype(str), [(c, c, str, None) for c in sweep.variants.columns])
        return note + footer(src.scenario, h.para("The variants and their swept values:") + vt)

    led = src.variant is not None
    body = _built([*([lead] if led else []), per_variant,
                   lambda: pareto_section(sweep, given_frontier, "Variants and options on the frontier")[0],
                   *([costs] if led else []), end], progress)
    title = f"Sweep of {len(variants)} variant{'s' if len(variants) > 1 else ''}"
    return title, _header(title, f"{label}; {len(sweep.runs):,} runs.", src.notes) + body


def build_report(source, targets=None, tornado=None, frontier: pd.DataFrame | None = None, title: str | None = None,
                 variant: str | None = None, verdict=None, *, progress: Progress | None = None) -> str:
    """The report as one self-contained HTML string (see the module).

    ``source``: a Results, a list of Results (replications of one scenario), a SweepResults or a
    sweep folder's path; ``targets``: Target objects or their text (``"p95_delay_h<=4"``; None:
    the scenario's ``decision.targets``, else the defaults); ``verdict``: ``decide``'s for these
    runs and targets, when it is already known (it is not decided again);
    ``tornado``: a ``costsim.decisions.Tornado`` (its section is left out when None; a
    string is shown in its place, saying why there is none); ``frontier``: a ``pareto.frontier``
    table to show instead of the one computed; ``variant``: of a sweep, the one to lead with;
    ``progress(done, total)``: after each section of the page is built (its figures drawn)."""
    from costsim.decisions.targets import targets as as_targets

    wanted = None if targets is None else as_targets(targets)
    src = _input(source, variant)
    name, body = (_scenario_body(src, wanted, tornado, frontier, verdict, progress) if src.runs
                  else _sweep_body(src, wanted, frontier, progress))
    return h.page(title or f"{name}: build or rent? (costsim report)", body)


def write_report(source, path_or_folder: str | os.PathLike[str], targets=None, tornado=None,
                 frontier: pd.DataFrame | None = None, title: str | None = None, variant: str | None = None,
                 label: str = "--out", verdict=None) -> Path:
    """Write ``build_report(...)`` atomically (``write_page``) to ``path_or_folder``, or to
    ``report.html`` in it when it is a folder; the path written. OutputError (an error
    naming ``label``) when it cannot be."""
    path = Path(path_or_folder)
    if path.is_dir():
        path = path / "report.html"
    check_out(path, label)
    return write_page(build_report(source, targets, tornado, frontier, title, variant, verdict), path, label)


def write_page(text: str, path: Path, label: str = "--out") -> Path:
    """Write ``text`` (a page ``build_report`` built) to ``path`` atomically: a temporary file in the
    same folder, flushed to disk, renamed over the target; ``path``. OutputError (an error
    naming ``label``) when it cannot be."""
    from costsim.runs.dataset import write_atomic

    check_out(path, label)
    try:
        write_atomic(path, lambda p: p.write_text(text, encoding="utf-8"))
    except OSError as err:
        raise OutputError(label, str(path), f"could not be written: {err.strerror or err}") from None
    return path


def check_out(path: Path, label: str = "--out") -> None:
    """Refuse, before any work, a report path that cannot be a file we may write."""
    shown = os.fspath(path)
    if shown in ("", "."):
        raise OutputError(label, '""', "is empty: name the report file, e.g. report.html")
    if path.is_dir():
        raise OutputError(label, shown, "is a folder: name the report file in it, e.g. "
                          f"{Path(shown) / 'report.html'}")
    if path.exists() and not path.is_file():
        raise OutputError(label, shown, "exists and is not a regular file")
    parent = path.parent
    if not parent.exists():
        raise OutputError(label, shown, f"its folder {parent} does not exist")
    if not parent.is_dir():
        raise OutputError(label, shown, f"{parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(label, shown, f"its folder {parent} is not writable")


# ------------------------------------------------------------------ the command


def replications_of(sc, n: int, seed: int, step=None) -> list[Results]:
    """``n`` runs of ``sc`` with seeds ``replication_seed(seed, r)`` (the first is ``costsim run``'s
    run on ``seed``), ``sc`` prepared once for all of them; ``step(done)`` after each."""
    from costsim.runs import api
    from costsim.runs.sweepfile import replication_seed

    ready = api.prepare(sc)
    runs = []
    for r in range(n):
        runs.append(api.simulate(ready, seed=replication_seed(seed, r)))
        if step is not None:
            step(r + 1)
    return runs


def tornado_or_note(sc, seed: int, targets=None, step=None, replications: int = 1, *,
                    runs: Sequence[Results] | None = None, verdict=None, executor: str = "processes"):
    """The tornado (one variant per input at each end of its range; ``step(done, total)`` after
    each run), or a note saying why there is none. ``replications`` and ``seed`` as the verdict's
    (``replications_of``): its base variant is then the verdict's runs, the same seeds averaged, so
    its base difference is the verdict's. ``runs``: those runs, and ``verdict``: ``decide`` on
    them with ``targets``, when the caller has them: the base is then not run, nor decided, again.
    ``executor``: where its runs go (``tornado``'s)."""
    try:
        from costsim.decisions.sensitivity import Given, tornado
    except ImportError:
        return "The sensitivity tornado is not available in this version of costsim."
    given = None if runs is None else Given(runs=runs, verdict=verdict)
    try:
        return tornado(sc, replications=replications, seed=seed, targets=targets, progress=step, given=given,
                       executor=executor)
    except ScenarioError as err:  # e.g. no owned or no rented option to set against each other; a
        # pool or a Dask cluster that fails is not a note on the page: it stops the report
        return "No sensitivity tornado: " + "; ".join(p.message for p in err.problems)
