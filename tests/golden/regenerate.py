"""Write the golden tables: every result table of every shipped scenario cut to a 60-day horizon,
and of the full baseline, plus each one's verdict sentence (no flips: they re-simulate).

Run only when a change is *meant* to move the numbers, and say which and why in the changelog:
``python tests/golden/regenerate.py``. ``tests/golden/test_golden.py`` compares against these
files exactly (every value, dtype and column).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SCENARIOS = ROOT / "scenarios"
SHORT_HORIZON_DAYS = 60.0
TABLES = ("summary", "jobs", "phases", "timeseries", "costs", "cashflow", "breakeven", "advice", "to_target",
          "reward_by_day")


def cases() -> list[tuple[str, Path, float | None]]:
    """(case name, scenario file, horizon in days or None for the file's own)."""
    out: list[tuple[str, Path, float | None]] = [
        (f"{path.stem}-60d", path, SHORT_HORIZON_DAYS) for path in sorted(SCENARIOS.glob("*.yaml"))]
    out.append(("baseline-full", SCENARIOS / "baseline.yaml", None))
    return out


def cut(data: dict, horizon_days: float) -> dict:
    """A scenario's data (``model_dump(mode="json", exclude_unset=True)``) over ``horizon_days``:
    the tranches ordered on or after the cut's end are left out, since an order past the horizon
    is an error, not an order never made (growing-lab buys its second tranche in month 9)."""
    out = {**data, "horizon_days": horizon_days}
    out["options"] = [
        {**o, "tranches": [t for t in o["tranches"] if t.get("order_day", 0) < horizon_days]}
        | ({"gpus": sum(t["gpus"] for t in o["tranches"] if t.get("order_day", 0) < horizon_days)} if "gpus" in o else {})
        if o.get("tranches") else o for o in data.get("options", [])]
    return out


def run_case(path: Path, horizon_days: float | None):
    """The case's Results and its verdict sentence (flips off: they re-simulate)."""
    import costsim

    sc = costsim.load_scenario(path)
    if horizon_days is not None and sc.horizon_days > horizon_days:
        data = cut(sc.model_dump(mode="json", exclude_unset=True), horizon_days)
        sc = costsim.scenario_from_data(data, str(path), path.parent)
    res = costsim.simulate(sc)
    verdict = costsim.decide(res, flips=False)
    return res, verdict.sentence


def main() -> None:
    wanted = set(sys.argv[1:])
    sentences: dict[str, str] = {}
    index = HERE / "sentences.json"
    if index.exists():
        sentences = json.loads(index.read_text())
    for name, path, horizon in cases():
        if wanted and name not in wanted:
            continue
        res, sentence = run_case(path, horizon)
        folder = HERE / name
        folder.mkdir(exist_ok=True)
        for table in TABLES:
            frame: pd.DataFrame = getattr(res, table)
            frame.to_parquet(folder / f"{table}.parquet", compression="zstd")
        sentences[name] = sentence
        print(name, len(res.jobs), "rows of jobs")
    index.write_text(json.dumps(dict(sorted(sentences.items())), indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
