"""RL compute-performance curves: the saturating sigmoid of ScaleRL, its inverse, fits and readouts.

ScaleRL ("The Art of Scaling Reinforcement Learning Compute for LLMs", 2025) fits a run's score
against its compute with

    R(C) = R0 + (A − R0) / (1 + (C_mid / C)^B)

C: compute in GPU-hours; R0: the score before training (R(0) = R0); A: the asymptote, the score
the run tends to with unlimited compute; C_mid: GPU-hours at which half of the gain A − R0 is
made; B: the steepness (the curve is a logistic in log C, with slope B). Scores are in the user's
units (accuracy, pass rate, reward); nothing here assumes a range.

Written as R0 + (A − R0)·σ(B·(ln C − ln C_mid)), σ the logistic function, so no power overflows
at extreme C and C = 0 gives R0 exactly.

Pure functions; ``read_points`` and ``curve_of`` read a CSV of (gpu_hours, score) points.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from costsim.scenario.errors import Problem, ScenarioError
from costsim.scenario.io import read_text_bounded
from costsim.scenario.limits import MAX_SCENARIO_BYTES_ENV, max_scenario_bytes


def _curve_fit():
    """``scipy.optimize.curve_fit``, imported when a curve is fitted (not at ``import costsim``)."""
    from scipy.optimize import curve_fit

    return curve_fit


def expit(x):
    """The logistic function 1 / (1 + e^-x), overflow-free (as ``scipy.special.expit``, which would
    bring scipy into every ``import costsim``: results import this module)."""
    x = np.asarray(x, dtype=float)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))[()]  # a 0-d input gives a numpy scalar

HEADER = ("gpu_hours", "score")
MIN_POINTS = 5  # four parameters and at least one degree of freedom
MAX_REPORTED = 8  # bad rows listed per file; the count of the rest is given
DEFAULT_RESAMPLES = 200
PER_1000 = 1000.0  # marginal gain is quoted per 1,000 GPU-hours


@dataclass(frozen=True)
class Curve:
    """A sigmoid compute-performance curve. ``C_mid`` in GPU-hours; A and R0 in score units."""

    A: float
    B: float
    C_mid: float
    R0: float


@dataclass(frozen=True)
class CurveFit:
    """A curve fitted to points, with bootstrap percentile intervals.

    ``intervals``: per parameter name (A, B, C_mid, R0), (low, high) at ``level`` (e.g. 0.95) from
    ``resamples`` residual-bootstrap refits (NaN, NaN without resamples); ``rmse``: root mean
    squared residual of the fit, score units; ``points``: how many points were fitted."""

    curve: Curve
    intervals: dict[str, tuple[float, float]]
    level: float
    resamples: int
    rmse: float
    points: int


def reward(C_gpu_h, A: float, B: float, C_mid: float, R0: float):
    """Score after ``C_gpu_h`` GPU-hours of training (scalar or array): R0 + (A − R0)/(1 + (C_mid/C)^B)."""
    C = np.asarray(C_gpu_h, dtype=float)
    with np.errstate(divide="ignore"):
        x = B * (np.log(C) - math.log(C_mid))  # −inf at C = 0: σ = 0, R = R0
    out = R0 + (A - R0) * expit(x)
    return out if out.ndim else float(out)


def compute_for(target: float, A: float, B: float, C_mid: float, R0: float) -> float:
    """GPU-hours at which the curve reaches ``target``: inf when target >= A (never, for A > R0),
    0 when target <= R0 (reached before any training)."""
    if target >= A:
        return math.inf
    if target <= R0:
        return 0.0
    s = (target - R0) / (A - R0)  # the share of the gain A − R0 the target asks for, in (0, 1)
    return C_mid * math.exp((math.log(s) - math.log1p(-s)) / B)


def marginal_gain(C_gpu_h: float, A: float, B: float, C_mid: float, R0: float) -> float:
    """dR/dC × 1,000: score gained per 1,000 more GPU-hours at ``C_gpu_h`` (its limit at C = 0)."""
    if C_gpu_h <= 0:  # R − R0 ~ (A − R0)(C/C_mid)^B near 0
        if B > 1:
            return 0.0
        return (A - R0) / C_mid * PER_1000 if B == 1 else math.copysign(math.inf, A - R0)
    s = float(expit(B * (math.log(C_gpu_h) - math.log(C_mid))))
    return (A - R0) * B * s * (1.0 - s) / C_gpu_h * PER_1000


def distance_to_asymptote(C_gpu_h: float, A: float, B: float, C_mid: float, R0: float) -> float:
    """A − R(C): the score still to gain with unlimited compute."""
    return A - reward(C_gpu_h, A, B, C_mid, R0)


# -- fitting --------------------------------------------------------------------------------------

def _model(C: np.ndarray, A: float, B: float, log_c_mid: float, R0: float) -> np.ndarray:
    """The curve in the fitted parameters (ln C_mid: C_mid spans orders of magnitude)."""
    with np.errstate(divide="ignore"):
        return R0 + (A - R0) * expit(B * (np.log(C) - log_c_mid))


def _jacobian(C: np.ndarray, A: float, B: float, log_c_mid: float, R0: float) -> np.ndarray:
    """∂R/∂(A, B, ln C_mid, R0), columns in that order (analytic: faster and steadier refits)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.log(C) - log_c_mid
        s = expit(B * u)
        ds = s * (1.0 - s)
        dB = np.where(C > 0, (A - R0) * ds * u, 0.0)  # u = −inf where s = 0: no slope there
    return np.column_stack([s, dB, -(A - R0) * ds * B, 1.0 - s])


def _bounds(C: np.ndarray, R: np.ndarray) -> tuple[list[float], list[float]]:
    """Sensible bounds: the asymptote within ten spans of the scores above their least, R0 within
    ten spans below their greatest, a slope of 0.01 … 20 per unit of ln C, and C_mid within a
    factor of 10⁴ of the compute observed (a curve still far from its midpoint is allowed)."""
    span = float(R.max() - R.min())
    positive = C[C > 0]
    lo_c, hi_c = math.log(positive.min()), math.log(positive.max())
    return ([R.min(), 0.01, lo_c - math.log(1e4), R.min() - 10 * span],
            [R.max() + 10 * span, 20.0, hi_c + math.log(1e4), R.max()])


def _fit_once(C: np.ndarray, R: np.ndarray, p0, bounds, quick: bool = False) -> tuple[np.ndarray, float]:
    """Least squares from ``p0``: (parameters, sum of squared residuals); inf SSE if it fails.
    ``quick`` (bootstrap refits, started at the estimate): Levenberg-Marquardt, about 5× faster
    than the bounded trust-region method, which is used instead when it leaves the bounds."""
    if quick:
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                p, _ = _curve_fit()(_model, C, R, p0=p0, jac=_jacobian, method="lm", maxfev=2000)
            if np.all((p >= bounds[0]) & (p <= bounds[1])):
                return p, float(np.sum((R - _model(C, *p)) ** 2))
        except (RuntimeError, ValueError):
            pass
    try:
        p, _ = _curve_fit()(_model, C, R, p0=p0, bounds=bounds, jac=_jacobian, method="trf", maxfev=2000)
    except (RuntimeError, ValueError):
        return np.asarray(p0, dtype=float), math.inf
    return p, float(np.sum((R - _model(C, *p)) ** 2))


def _starts(C: np.ndarray, R: np.ndarray, bounds) -> list[list[float]]:
    """Starting points: a few slopes and midpoints, the scores' range for the asymptote and R0."""
    span = float(R.max() - R.min())
    positive = np.log(C[C > 0])
    mids = np.quantile(positive, [0.25, 0.5, 0.9]).tolist() + [positive.max() + math.log(10)]
    lo, hi = bounds
    out = []
    for b in (0.5, 1.0, 2.0):
        for m in mids:
            p = [R.max() + 0.1 * span, b, m, R.min() - 0.05 * span]
            out.append([min(max(v, lo[i] + 1e-12), hi[i] - 1e-12) for i, v in enumerate(p)])
    return out


def _as_curve(p: np.ndarray) -> Curve:
    return Curve(A=float(p[0]), B=float(p[1]), C_mid=float(math.exp(p[2])), R0=float(p[3]))


def fit_curve(C, R, resamples: int = DEFAULT_RESAMPLES, seed: int = 0, level: float = 0.95,
              source: str = "points") -> CurveFit:
    """Fit the curve to compute ``C`` (GPU-hours, >= 0) and scores ``R`` by least squares
    (``scipy.optimize.curve_fit``, bounded, best of several starts), with percentile intervals at
    ``level`` from ``resamples`` residual-bootstrap refits: the fitted values plus residuals drawn
    with replacement (a seeded ``numpy`` Generator from ``seed``), each refitted from the estimate.
    The residuals are first scaled by √(n ÷ (n − 4)): least squares leaves them smaller than the
    noise by the four parameters it fitted, and unscaled they give too narrow intervals.

    Raises ScenarioError (naming ``source``) for too few points, no positive compute or scores
    that do not vary: no curve can be told from them."""
    C = np.asarray(C, dtype=float)
    R = np.asarray(R, dtype=float)
    problem = _unfittable(C, R)
    if problem:
        raise ScenarioError(source, [Problem((), problem)])
    bounds = _bounds(C, R)
    best, sse = min((_fit_once(C, R, p0, bounds) for p0 in _starts(C, R, bounds)), key=lambda f: f[1])
    if not math.isfinite(sse):
        raise ScenarioError(source, [Problem((), "the curve could not be fitted to these points")])
    fitted = _model(C, *best)
    resid = R - fitted
    n = len(R)
    pool = (resid - resid.mean()) * math.sqrt(n / (n - 4))
    draws = []
    rng = np.random.default_rng(seed)
    for _ in range(resamples):
        p, s = _fit_once(C, fitted + rng.choice(pool, size=n, replace=True), best, bounds, quick=True)
        if math.isfinite(s):
            draws.append(p)
    intervals = _intervals(np.array(draws).reshape(-1, 4), level)
    return CurveFit(_as_curve(best), intervals, level, resamples, float(np.sqrt(np.mean(resid ** 2))), n)


def _unfittable(C: np.ndarray, R: np.ndarray) -> str | None:
    """Why no curve can be fitted to these points, or None."""
    if len(C) < MIN_POINTS:
        return f"{len(C)} point(s): fitting the curve's four parameters needs at least {MIN_POINTS}"
    if not (C > 0).any():
        return "no point has positive gpu_hours"
    if len(np.unique(C[C > 0])) < 3:
        return "the points need at least 3 different positive gpu_hours to show a curve"
    if R.max() == R.min():
        return "every score is the same: no curve can be told from them"
    return None


def _intervals(draws: np.ndarray, level: float) -> dict[str, tuple[float, float]]:
    """Percentile intervals per parameter (C_mid back from its log)."""
    if not len(draws):
        return {k: (math.nan, math.nan) for k in ("A", "B", "C_mid", "R0")}
    tail = (1.0 - level) / 2 * 100
    lo, hi = np.percentile(draws, [tail, 100 - tail], axis=0)
    return {"A": (lo[0], hi[0]), "B": (lo[1], hi[1]), "C_mid": (math.exp(lo[2]), math.exp(hi[2])), "R0": (lo[3], hi[3])}


# -- points from a file ---------------------------------------------------------------------------

def read_points(path: Path | str) -> tuple[np.ndarray, np.ndarray]:
    """(gpu_hours, score) arrays from a CSV with the header ``gpu_hours,score``: one point a line,
    gpu_hours finite and >= 0, score finite. Raises ScenarioError naming the file and the line of
    every bad row (the header is line 1); at most the scenario-file size limit is read."""
    path = Path(path)
    source = str(path)
    text = read_text_bounded(path, max_scenario_bytes(), MAX_SCENARIO_BYTES_ENV, "the points file")
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise ScenarioError(source, [Problem((), "empty file: needs the header gpu_hours,score and points")])
    header = tuple(c.strip() for c in rows[0])
    if header != HEADER:
        raise ScenarioError(source, [Problem((), f"the header must be gpu_hours,score (got {','.join(header)!r})", 1)])
    C, R, problems = [], [], []
    for line, row in enumerate(rows[1:], start=2):
        if not row or all(not c.strip() for c in row):
            continue  # a blank line (a trailing newline) is no point
        problem = _row_problem(row)
        if problem:
            problems.append(Problem(problem[0], problem[1], line))
            continue
        C.append(float(row[0]))
        R.append(float(row[1]))
    if problems:
        more = len(problems) - MAX_REPORTED
        shown = problems[:MAX_REPORTED] + ([Problem((), f"… and {more} more bad row(s)")] if more > 0 else [])
        raise ScenarioError(source, shown)
    return np.array(C), np.array(R)


def _row_problem(row: list[str]) -> tuple[tuple[str, ...], str] | None:
    """What is wrong with one data row, (column, message), or None."""
    if len(row) != 2:
        return (), f"needs 2 fields (gpu_hours,score), got {len(row)}"
    for col, cell in zip(HEADER, row, strict=True):
        try:
            value = float(cell)
        except ValueError:
            return (col,), f"{cell.strip()[:40]!r} is not a number"
        if not math.isfinite(value):
            return (col,), f"must be finite (got {cell.strip()[:40]!r})"
    if float(row[0]) < 0:
        return ("gpu_hours",), f"must be >= 0 (got {float(row[0]):g})"
    return None


def curve_of(scaling, base_dir: Path | str) -> Curve:
    """The curve a class's ``scaling`` stands for: its ``curve``, or the fit (no bootstrap) of its
    ``fit`` points read relative to ``base_dir`` (the scenario's folder)."""
    if scaling.curve is not None:
        c = scaling.curve
        return Curve(A=c.a, B=c.b, C_mid=c.c_mid_gpu_hours, R0=c.r0)
    path = Path(base_dir) / scaling.fit
    C, R = read_points(path)
    return fit_curve(C, R, resamples=0, source=str(path)).curve


def scaling_problems(scenario) -> list[Problem]:
    """Per RL class with ``scaling.fit``: the points file's problems (ScenarioError re-raised with
    its file and lines) and a target at or above the fitted asymptote, which is never reached.
    For the loader's checks (``costsim.runs.api``); a ``curve``'s target is checked by the schema."""
    problems = []
    for k, cls in enumerate(scenario.workload.classes):
        sc = cls.scaling
        if sc is None or sc.fit is None:
            continue
        path = scenario.base_dir / sc.fit
        if not path.is_file():  # named at the field, as a missing trace is
            problems.append(Problem(("workload", "classes", k, "scaling", "fit"), f"points file not found: {path}"))
            continue
        curve = curve_of(sc, scenario.base_dir)
        if sc.target >= curve.A:
            problems.append(Problem(("workload", "classes", k, "scaling", "target"),
                                    f"target {sc.target:g} is at or above the asymptote a = {curve.A:g} fitted to "
                                    f"{sc.fit}: never reached"))
    return problems
