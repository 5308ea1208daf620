"""Where the tests find the repository and their own files, from any folder under tests/."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
"""The repository: app.py, scenarios/, docs/, costsim/."""
APP = str(ROOT / "app.py")
"""The dashboard script, as Streamlit's AppTest opens it."""
SHIPPED = ROOT / "scenarios"
"""The shipped scenarios."""
DATA = TESTS / "data"
"""Test data: trace samples (``DATA / "traces"``) and scaling points (``DATA / "scaling"``)."""
TRACE_SAMPLES = DATA / "traces"
HARNESSES = TESTS / "apps"
"""The AppTest harness scripts of the editor and the decision tabs."""
SCALING_POINTS = DATA / "scaling"
