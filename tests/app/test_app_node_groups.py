"""The dashboard on a scenario whose owned option is a pool of node groups: it runs without an error,
names the option by its GPUs of each type and offers no size knob for it (its groups size it)."""

from __future__ import annotations

import pytest
from apptest_helpers import page_strings
from helpers import MIXED_POOL
from paths import APP
from streamlit.testing.v1 import AppTest

from costsim.dashboard import encode_scenario

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

MIXED = """\
name: mixed
horizon_days: 10
workload:
  classes:
    - name: grpo
      arrivals_per_day: 6
      gpus: 8
      iterations: {mean: 30, cv: 0.5}
      model_params_b: 7
    - name: on-a100
      arrivals_per_day: 3
      gpus: 8
      gpu_type: A100
      iterations: {mean: 30, cv: 0.5}
      model_params_b: 7
options:
""" + MIXED_POOL + """  - {name: own-plain, kind: owned, gpu_type: A100, gpus: 16, lead_time_days: 0}
"""


def test_a_pool_of_node_groups_runs_and_is_named_by_its_gpus():
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(MIXED)
    at.run()
    assert not at.exception and not at.error, (at.exception, at.error)
    text = " ".join(page_strings(at)).replace("\\", "")  # markdown escapes (\+) taken out
    assert "owning 16 H100s + 8 A100s (own)" in text
    keys = [w.key for w in at.sidebar.number_input]
    assert any(k.endswith(":gpus:own-plain") for k in keys) and not any(k.endswith(":gpus:own") for k in keys)
