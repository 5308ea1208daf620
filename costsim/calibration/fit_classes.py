"""Fitted classes (``costsim.calibration.fit.ClassFit``) as ``workload.job_classes`` data a scenario uses.

``job_classes_of(fits, start_hour_of_week)`` returns plain lists and dicts (ready for YAML) that
validate as ``costsim.scenario.jobclass.JobClass``: the fitted rate, the hourly and weekly
profiles on the source's clock with the scenario's hour 0 at ``start_hour_of_week``, the GPU pmf
(a plain number where the class has one count) and the run-time law. A fitted ``deterministic``
law (every run time equal) is a lognormal of cv 0.

Names are made valid scenario names (letters, digits, ``_ . -``; other characters become ``_``)
and unique (``-2``, ``-3``, … appended to a repeat); the trace's ``job_class`` values are user or
queue names and may hold anything.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd
from pydantic import ValidationError

from costsim.calibration.fit import ClassFit
from costsim.scenario.bounds import MIN_JOB_H
from costsim.scenario.jobclass import HOURS_PER_WEEK, MAX_DURATION_CV, MAX_JOBS_PER_DAY, MAX_PMF, JobClass
from costsim.units import HOURS_PER_DAY

NAME_CHARS = re.compile(r"[^A-Za-z0-9_.\-]")
MAX_NAME = 80
DIGITS = 6  # significant digits of rates and run times in the YAML
PROFILE_DIGITS = 4  # of profile weights (relative: the generator scales them to mean 1)


def _r(x: float, digits: int = DIGITS) -> float:
    """``x`` rounded to ``digits`` significant digits (monotone: sorted values stay sorted)."""
    return float(f"{float(x):.{digits}g}")


def scenario_name(raw: str, taken: set[str]) -> str:
    """A valid, unused class name for the trace's class ``raw`` (``taken`` is updated)."""
    base = NAME_CHARS.sub("_", str(raw))[: MAX_NAME - 6] or "class"
    if not base[0].isalnum():
        base = "c" + base
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}-{k}"
    taken.add(name)
    return name


def gpus_of(pmf: dict[int, float], mean_h: dict[int, float] | None = None) -> int | list[dict]:
    """A class's GPU law: its one count, or a pmf list whose rounded shares still sum to 1 (the
    rounding residue goes to the largest share), each count with its mean run time when
    ``mean_h`` gives one (the class's law is scaled to it)."""
    if len(pmf) == 1:
        return int(next(iter(pmf)))
    if len(pmf) > MAX_PMF:
        raise ValueError(f"{len(pmf)} distinct GPU counts: a job class takes at most {MAX_PMF}")
    mean_h = mean_h or {}
    entries = [{"gpus": int(g), "share": _r(p), **({"mean_h": _r(max(mean_h[g], MIN_JOB_H))} if g in mean_h else {})}
               for g, p in sorted(pmf.items())]
    big = max(range(len(entries)), key=lambda i: entries[i]["share"])
    entries[big]["share"] = round(1.0 - sum(e["share"] for i, e in enumerate(entries) if i != big), 12)
    return entries


def duration_of(fit: ClassFit) -> dict:
    """A class's run-time law as ``duration`` data (hours)."""
    d = fit.duration
    if d.law == "empirical":
        return {"law": "empirical", "quantiles_h": [_r(q) for q in d.quantiles]}
    if d.law == "deterministic":
        return {"law": "lognormal", "mean_h": _r(d.mean_h), "cv": 0.0}
    if d.cv > MAX_DURATION_CV:
        raise ValueError(f"class {fit.name!r}: the fitted lognormal's cv {d.cv:.4g} is above {MAX_DURATION_CV:g}; "
                         "fit its run times with the empirical law instead")
    return {"law": "lognormal", "mean_h": _r(d.mean_h), "cv": _r(d.cv)}


def job_classes_of(fits: Sequence[ClassFit], start_hour_of_week: float) -> list[dict]:
    """``workload.job_classes`` data for the fitted classes, in the fits' order. The scenario's
    hour 0 is ``start_hour_of_week`` hours after Monday 00:00 on the source's clock (the fit's
    ``start_h``: the generated arrivals then follow the trace's days and hours). Raises ValueError
    for a fit a job class cannot hold (a rate above its bound, a cv above ``MAX_DURATION_CV``)."""
    taken: set[str] = set()
    start = _r(float(start_hour_of_week) % HOURS_PER_WEEK) % HOURS_PER_WEEK  # 167.9999999 rounds to 168: 0
    out = []
    for f in fits:
        if not 0 < f.per_day <= MAX_JOBS_PER_DAY:
            raise ValueError(f"class {f.name!r}: {f.per_day:.4g} jobs a day is outside a job class's range "
                             f"(above 0, at most {MAX_JOBS_PER_DAY:,})")
        out.append({
            "name": scenario_name(f.name, taken),
            "arrivals_per_day": _r(f.per_day),
            "hourly_profile": [_r(v, PROFILE_DIGITS) for v in f.hourly],
            "weekly_profile": [_r(v, PROFILE_DIGITS) for v in f.weekly],
            "profile_start_hour_of_week": start,
            "gpus": gpus_of(f.gpus_pmf, f.gpus_mean_h),
            "duration": duration_of(f),
        })
    return out


def trace_of(classes: Sequence[dict], days: float, seed: int) -> pd.DataFrame:
    """A trace (``submit_h, gpus, duration_h, job_id, job_class, priority``) drawn over ``days``
    from ``workload.job_classes`` data, by the very generator a scenario with these classes uses
    (``costsim.workload.jobclass``, streams keyed by class name from ``seed``), sorted by submit
    time. Raises ScenarioError if the data does not validate."""
    from costsim.scenario.errors import Problem, ScenarioError
    from costsim.scenario.io import validation_problems
    from costsim.workload.jobclass import job_class_jobs

    parts = []
    for k, data in enumerate(classes):
        try:
            cls = JobClass.model_validate(data)
        except ValidationError as err:
            raise ScenarioError("job_classes", [Problem((k, *p.loc), p.message) for p in validation_problems(err)]) from None
        cols = job_class_jobs(cls, seed, 1.0, days * HOURS_PER_DAY, k)
        parts.append(pd.DataFrame({c: cols[c] for c in ("submit_h", "gpus", "duration_h", "job_id", "job_class",
                                                         "priority")}))
    frame = pd.concat(parts, ignore_index=True)
    return frame.sort_values("submit_h", kind="stable", ignore_index=True)
