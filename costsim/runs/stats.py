"""Confidence intervals over a sweep's replications: Student-t intervals of means and of paired
differences (pure functions over DataFrames).

Replication r of every variant runs on the same seed (common random numbers), so the R values
of a metric are independent across replications, and the difference of two options (or two
variants) in one replication is one paired observation. With n replications of mean x̄ and
sample standard deviation s (ddof = 1) the level-L interval is

    x̄ ± t_{(1+L)/2, n-1} · s / √n        (scipy.special.stdtrit)

exact when the replication values are normal, close when each is an average over many jobs.
With n = 1 there is no spread to measure: the bounds are NaN. A metric undefined in a replication
(NaN: a cost per iteration with no iteration) is left out of that metric's interval; ``n`` counts
the replications present.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

LEVEL = 0.95


# t_{0.975, df} for df = 1 … 30, as scipy.special.stdtrit gives them (a test compares each): the
# 95 % interval of 2 to 31 replications without importing scipy.special, a quarter second of CPU
# (most of it its array-API support) in a process that shows runs but never samples one: the
# dashboard's server, whose first screen waited for it.
T_975 = (12.706204736174694, 4.302652729749462, 3.1824463052837078, 2.7764451051977934, 2.5705818356363146,
         2.4469118511449786, 2.364624251592784, 2.306004135204166, 2.262157162798205, 2.228138851986274,
         2.200985160091639, 2.1788128296672284, 2.1603686564627913, 2.144786687917804, 2.131449545559776,
         2.1199052992212546, 2.1098155778333156, 2.1009220402410382, 2.0930240544083087, 2.085963447265864,
         2.0796138447276795, 2.0738730679040254, 2.0686576104190486, 2.0638985616280245, 2.0595385527532972,
         2.0555294386428735, 2.0518305164802846, 2.0484071417952454, 2.045229642132703, 2.0422724563012378)


def t_quantile(df, p):
    """Student's t quantile: ``p`` (0–1) at ``df`` degrees of freedom (scalars or arrays).
    ``scipy.special.stdtrit``, what ``scipy.stats.t.ppf`` calls without scipy.stats' half-second
    import; imported on the first interval it is needed for, not with this module (a report or a
    verdict imports this module before its runs, and the runs bring scipy.special when they
    sample); the 95 % intervals of up to 31 replications read ``T_975``, the same values."""
    if np.ndim(p) == 0 and p == 0.975:
        d = np.asarray(df)
        if d.size and np.all((d >= 1) & (d <= len(T_975)) & (d == np.floor(d))):
            values = np.asarray(T_975)[d.astype(int) - 1]
            return values if d.ndim else float(values)
    from scipy.special import stdtrit

    return stdtrit(df, p)


def _level(level: float) -> float:
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a number between 0 and 1 exclusive (got {level!r})")
    return float(level)


def t_interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float, float]:
    """(mean, low, high) of ``values`` at confidence ``level``: mean ± t_{(1+level)/2, n-1} · s / √n.
    NaN values are left out; one value: (x, nan, nan); none: (nan, nan, nan)."""
    level = _level(level)
    x = np.asarray(values, dtype=float).ravel()
    x = x[~np.isnan(x)]
    n = len(x)
    if n == 0:
        return (float("nan"),) * 3
    mean = float(x.mean())
    if n == 1:
        return mean, float("nan"), float("nan")
    half = float(t_quantile(n - 1, (1 + level) / 2) * x.std(ddof=1) / np.sqrt(n))
    return mean, mean - half, mean + half


def _check(runs: pd.DataFrame, needed: Sequence[str], function: str) -> None:
    if not isinstance(runs, pd.DataFrame):
        raise ValueError(f"{function}(): runs must be a pandas DataFrame (got {type(runs).__name__})")
    missing = [c for c in needed if c not in runs.columns]
    if missing:
        raise ValueError(f"{function}(): runs has no column {', '.join(map(repr, missing))}")


def _intervals(frame: pd.DataFrame, keys: list[str], columns: list[str], names: list[str],
               level: float) -> pd.DataFrame:
    """Per group of ``keys``: n (rows), then for each column c named m: m, m_low, m_high and m_n (the
    values the interval is over: NaNs are left out, so m_n can be below n). Vectorised t_interval
    (same formula, same NaN rule); groups in order of first appearance."""
    groups = frame.groupby(keys, sort=False, dropna=False)
    out = groups.size().rename("n").to_frame()
    mean, sd, count = groups[columns].mean(), groups[columns].std(ddof=1), groups[columns].count()
    for c, m in zip(columns, names, strict=True):
        k = count[c].to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            q = np.where(k >= 2, t_quantile(np.maximum(k - 1, 1), (1 + level) / 2), np.nan)
            half = q * sd[c].to_numpy(dtype=float) / np.sqrt(k)
        out[m] = mean[c].to_numpy(dtype=float)
        out[f"{m}_low"] = out[m] - half
        out[f"{m}_high"] = out[m] + half
        out[f"{m}_n"] = count[c].to_numpy(dtype=np.int64)
    return out.reset_index()


def means_table(runs: pd.DataFrame, metrics: list[str], by: Sequence[str] = ("variant", "option"),
                level: float = LEVEL) -> pd.DataFrame:
    """One row per ``by`` group (variant, option) in order of appearance: ``by`` columns, ``n``
    (replications), then per metric m its mean ``m``, interval ``m_low``, ``m_high`` and ``m_n`` (the
    replications where m is a number)."""
    by, metrics = list(by), list(metrics)
    _check(runs, [*by, *metrics], "means_table")
    return _intervals(runs, by, metrics, metrics, _level(level))


def differences_table(runs: pd.DataFrame, metrics: list[str], level: float = LEVEL) -> pd.DataFrame:
    """Paired differences between the options of each variant: one row per (variant, option,
    versus), every unordered pair once with ``option`` before ``versus`` in the variant's option
    order (first appearance in ``runs``); per replication d = option − versus, then per metric
    ``m_diff``, ``m_diff_low``, ``m_diff_high`` (t-interval over replications) and ``n`` (replications
    with both options). Paired: the spread the two share (the same jobs) cancels."""
    metrics = list(metrics)
    _check(runs, ["variant", "replication", "option", *metrics], "differences_table")
    level = _level(level)
    if runs.duplicated(["variant", "replication", "option"]).any():
        raise ValueError("differences_table(): runs has more than one row for a (variant, replication, option)")
    names = [f"{m}_diff" for m in metrics]
    parts = []
    for variant, rows in runs.groupby("variant", sort=False):
        options = list(dict.fromkeys(rows["option"]))
        wide = rows.set_index(["replication", "option"])[metrics]
        for i, a in enumerate(options):
            for b in options[i + 1:]:
                wa, wb = wide.xs(a, level="option"), wide.xs(b, level="option")
                both = wa.index.intersection(wb.index, sort=False)  # a pair needs both from one seed
                diff = (wa.loc[both] - wb.loc[both]).set_axis(names, axis=1)
                parts.append(diff.assign(variant=variant, option=a, versus=b))
    columns = ["variant", "option", "versus", "n"] + [f"{n}{s}" for n in names for s in ("", "_low", "_high", "_n")]
    if not parts:
        return pd.DataFrame(columns=columns)
    table = _intervals(pd.concat(parts, ignore_index=True), ["variant", "option", "versus"], names, names, level)
    return table[columns]


__all__ = ["LEVEL", "differences_table", "means_table", "t_interval"]
