"""The dashboard's logic, without Streamlit (``app.py`` only lays out widgets), in modules named
for what they do; this module gathers their public names for ``app.py`` and the tests:

- ``uploads``: shipped scenarios, uploads and traces that read no server file, the session limits;
- ``workers``: what a session says while it waits for a worker process, and reading untrusted
  files in one;
- ``knobs``: what the sidebar changes, applied as a new validated scenario; problems by knob;
- ``bounded``: runs cached on every exact value, bounded in time and memory, cancellable,
  replications side by side in warm worker processes (``costsim.runs.isolated``), the server's
  pool of them (``new_pool``; ``server.server_pool`` keeps the one a server shares);
- ``sharing``: the scenario in the URL and the content key of the widgets;
- ``headline``: the verdict, the cards' numbers, Markdown-safe user text.
"""

from __future__ import annotations

from costsim.dashboard.bounded import (
    ResultCache,
    RunStopped,
    new_pool,
    run_key,
    simulate_bounded,
    simulate_many,
    warm_up,
)
from costsim.dashboard.knobs import (
    ECONOMY,
    SETUPS,
    ClassKnobs,
    Knobs,
    apply_knobs,
    changed_knobs,
    current_knobs,
    knob_paths,
    knob_problems,
)
from costsim.dashboard.sharing import LINK, content_key, decode_scenario, encode_scenario
from costsim.dashboard.uploads import (
    SCENARIO_DIR,
    Limits,
    Upload,
    load_upload,
    make_upload_root,
    public_text,
    safe_upload_name,
    shipped_scenarios,
    shipped_traces,
)
from costsim.dashboard.workers import waiting_note
from costsim.present.headline import literal_markdown
from costsim.scenario.naming import sized_name

__all__ = [
    "ECONOMY", "LINK", "SCENARIO_DIR", "SETUPS", "ClassKnobs", "Knobs", "Limits", "ResultCache", "RunStopped",
    "Upload", "apply_knobs", "content_key", "current_knobs", "decode_scenario", "encode_scenario",
    "changed_knobs", "knob_paths", "knob_problems", "literal_markdown", "load_upload", "make_upload_root", "new_pool",
    "public_text", "run_key", "safe_upload_name", "shipped_scenarios", "shipped_traces", "simulate_bounded", "simulate_many",
    "sized_name", "waiting_note", "warm_up",
]
