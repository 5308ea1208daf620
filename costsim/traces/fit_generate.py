"""The fitted workload as a generator config, and a synthetic trace drawn from it.

Why a generator and not scenario classes: the scenario schema's only generated jobs are RL classes
(``costsim.scenario.classes.RLClass``: iterations, model size, rollout…), whose run time the engine
derives; it cannot say "jobs of d hours on g GPUs arriving with this daily profile". And
``costsim.workload.synth.JobGroup`` has one GPU count per group and a flat Poisson rate (plus
linear growth). So the fit is written as a config (``config_of``) and drawn into a trace CSV
(``generate``), which a scenario replays with ``workload: {trace: ...}``.

Drawing (one ``SeedSequence`` stream per class, in config order): arrivals by thinning a Poisson
process at the peak rate (``sampling.poisson_times``) with probability λ(t) / peak, λ(t) = per_day /
24 · hourly[h(t)] · weekly[d(t)]; GPUs from the pmf; durations from the lognormal (``mu``, ``sigma``
of log hours) or by inverse CDF from the empirical quantiles.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from costsim.models.sampling import poisson_times
from costsim.traces.fit import ARRIVAL_TEST, DAYS_PER_WEEK, HOURS_PER_DAY, QUANTILES, ClassFit, window_note

VERSION = 1


def _r(x: float, digits: int = 6) -> float | None:
    """A number for the YAML: rounded to ``digits`` significant digits; None for NaN."""
    x = float(x)
    return None if np.isnan(x) else float(f"{x:.{digits}g}")


def duration_config(fit: ClassFit) -> dict:
    """The run-time law of a class as plain data (hours)."""
    d = fit.duration
    out: dict = {"law": d.law, "mean_h": _r(d.mean_h), "cv": _r(d.cv), "median_h": _r(d.median_h)}
    if d.law == "lognormal":
        out.update(mu=_r(d.mu), sigma=_r(d.sigma))
    if d.law == "empirical":
        out["quantiles_h"] = [_r(q) for q in d.quantiles]
        out["probabilities"] = f"0, 0.01, …, 1 ({len(QUANTILES)} values)"
    return out


def config_of(fits: Sequence[ClassFit], source: str, by: str, distribution: str) -> dict:
    """The generator config (plain dicts, lists and numbers, ready for YAML) of the fitted classes."""
    return {
        "fitted_workload": VERSION,
        "source": source,
        "by": by,
        "distribution": distribution,
        "window_h": _r(fits[0].window_h) if fits else None,
        "start_hour_of_week": _r(fits[0].start_h) if fits else 0.0,
        "hour_zero": ("profiles by the source's clock (index 0: midnight, Monday); the trace's hour 0 and the "
                      "generated trace's hour 0 are start_hour_of_week hours after Monday 00:00"),
        "arrival_check": ARRIVAL_TEST,
        **({"notes": [window_note(fits[0].window_h)]} if fits and window_note(fits[0].window_h) else {}),
        "classes": [
            {
                "name": f.name,
                "jobs": f.jobs,
                "per_day": _r(f.per_day),
                "hourly_profile": [_r(v, 4) for v in f.hourly],
                "weekly_profile": [_r(v, 4) for v in f.weekly],
                "gpus": {g: _r(p, 4) for g, p in f.gpus_pmf.items()},
                "duration": duration_config(f),
                "fit": {"duration_ks": _r(f.duration.ks, 4), "duration_ks_p": _r(f.duration.ks_p, 4),
                        "arrival_ks": _r(f.arrival_ks, 4), "arrival_ks_p": _r(f.arrival_ks_p, 4)},
                **({"notes": list(f.notes)} if f.notes else {}),
            }
            for f in fits
        ],
    }


def _arrivals(rng: np.random.Generator, per_day: float, hourly: np.ndarray, weekly: np.ndarray,
              horizon_h: float, start_h: float = 0.0) -> np.ndarray:
    """Sorted submit times (h) of the profiled Poisson process on [0, horizon_h), by thinning; hour
    0 is ``start_h`` hours after Monday 00:00 of the profiles' clock."""
    week = np.repeat(weekly, HOURS_PER_DAY) * np.tile(hourly, DAYS_PER_WEEK)  # multiplier per hour of a week
    peak = float(week.max())
    t = poisson_times(rng, per_day / HOURS_PER_DAY * peak, 0.0, horizon_h)
    hour_of_week = np.floor(t + start_h).astype(np.int64) % len(week)
    keep = rng.uniform(0.0, 1.0, len(t)) < week[hour_of_week] / peak
    return t[keep]


def _durations(rng: np.random.Generator, n: int, duration: dict) -> np.ndarray:
    """``n`` run times (hours) from a class's duration config."""
    law = duration["law"]
    if law == "lognormal":
        return rng.lognormal(duration["mu"], duration["sigma"], n)
    if law == "empirical":
        return np.interp(rng.uniform(0.0, 1.0, n), QUANTILES, np.asarray(duration["quantiles_h"], dtype=float))
    return np.full(n, float(duration["mean_h"]))


def generate(config: dict, horizon_days: float, seed: int, min_duration_h: float = 0.0) -> pd.DataFrame:
    """A trace (``submit_h, gpus, duration_h, job_id, job_class``) drawn from a ``config_of`` config
    over ``horizon_days``, sorted by submit time; durations below ``min_duration_h`` are raised to
    it (the trace reader's shortest job)."""
    classes = config["classes"]
    horizon_h = horizon_days * HOURS_PER_DAY
    parts = []
    for spec, ss in zip(classes, np.random.SeedSequence(seed).spawn(len(classes)), strict=True):
        rng = np.random.default_rng(ss)
        t = _arrivals(rng, spec["per_day"], np.asarray(spec["hourly_profile"], dtype=float),
                      np.asarray(spec["weekly_profile"], dtype=float), horizon_h,
                      float(config.get("start_hour_of_week") or 0.0))
        sizes = np.array([int(g) for g in spec["gpus"]], dtype=np.int64)
        shares = np.array(list(spec["gpus"].values()), dtype=float)
        parts.append(pd.DataFrame({
            "submit_h": t,
            "gpus": rng.choice(sizes, size=len(t), p=shares / shares.sum()),
            "duration_h": np.maximum(_durations(rng, len(t), spec["duration"]), min_duration_h),
            "job_class": spec["name"],
        }))
    df = pd.concat(parts, ignore_index=True).sort_values("submit_h", kind="stable", ignore_index=True)
    df.insert(3, "job_id", [f"fit{i:06d}" for i in range(len(df))])
    return df[["submit_h", "gpus", "duration_h", "job_id", "job_class"]]
