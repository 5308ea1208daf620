"""Golden tables: every shipped scenario (cut to 60 days) and the full baseline give exactly the
tables and verdict sentence stored beside this file. A refactor must leave them untouched; a change
meant to move numbers regenerates them (``python tests/golden/regenerate.py``) and says why."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from tests.golden.regenerate import HERE, TABLES, cases, run_case

CASES = cases()
# The full baseline is a year's simulation: slow. The 60-day cases are not.
PARAMS = [pytest.param(*c, id=c[0], marks=[pytest.mark.slow] if c[2] is None else []) for c in CASES]


@pytest.mark.parametrize(("name", "path", "horizon"), PARAMS)
def test_tables_and_sentence_are_unchanged(name, path, horizon):
    res, sentence = run_case(path, horizon)
    for table in TABLES:
        expected = pd.read_parquet(HERE / name / f"{table}.parquet")
        pd.testing.assert_frame_equal(_through_parquet(getattr(res, table)), expected, check_exact=True,
                                      obj=f"{name}: {table}")
    assert sentence == json.loads((HERE / "sentences.json").read_text())[name]


def test_every_shipped_scenario_has_a_golden_case():
    stored = {p.name for p in HERE.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert stored == {c[0] for c in CASES}


def _through_parquet(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` written and read as the stored file was, so a dtype that Parquet maps (an empty
    object column read back as strings) compares like for like; every value is kept exactly."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer, compression="zstd")
    return pd.read_parquet(buffer)
