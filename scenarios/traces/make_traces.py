"""Regenerates the shipped synthetic traces: ``python scenarios/traces/make_traces.py``.

``lab-year.csv``: one year of a mid-size RL research lab (seed 2027), four job groups with Poisson
arrivals, lognormal run times and a 40 % per-year growth in small-job arrivals:

| group     | jobs/day | GPUs | mean run time | cv  | priority |
|-----------|----------|------|---------------|-----|----------|
| dev-eval  | 18       | 8    | 2 h           | 1.5 | 1        |
| ablation  | 6        | 32   | 10 h          | 1.0 | 0        |
| mid-run   | 0.35     | 64   | 60 h          | 0.8 | 0        |
| flagship  | 0.04     | 256  | 240 h         | 0.5 | 2        |

The offered load averages about 6,150 GPU-hours a day (≈ 256 busy GPUs) over the year.
"""

from pathlib import Path

from costsim.workload.synth import JobGroup, make_trace

LAB = [
    JobGroup("dev-eval", per_day=18, gpus=8, mean_h=2, cv=1.5, priority=1, growth_per_year=0.4),
    JobGroup("ablation", per_day=6, gpus=32, mean_h=10, cv=1.0, growth_per_year=0.4),
    JobGroup("mid-run", per_day=0.35, gpus=64, mean_h=60, cv=0.8),
    JobGroup("flagship", per_day=0.04, gpus=256, mean_h=240, cv=0.5, priority=2),
]

if __name__ == "__main__":
    here = Path(__file__).parent
    df = make_trace(LAB, horizon_days=365, seed=2027)
    df.round({"submit_h": 4, "duration_h": 4}).to_csv(here / "lab-year.csv", index=False)
    print(f"lab-year.csv: {len(df)} jobs, {float((df.gpus * df.duration_h).sum()) / 365:,.0f} GPU-hours/day")
