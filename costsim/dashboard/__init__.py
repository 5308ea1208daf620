"""The dashboard's logic, without Streamlit (``app.py`` only lays out widgets), in modules named
for what they do; this module gathers their public names for ``app.py`` and the tests:

- ``shipped``: the scenarios and traces shipped beside it (light); ``uploads``: uploads and traces
  that read no server file, the session limits;
- ``disk_runs``: runs kept on disk between server starts, by their key and the code's identity;
- ``workers``: what a session says while it waits for a worker process, and reading untrusted
  files in one;
- ``knobs``: what the sidebar changes, applied as a new validated scenario; problems by knob;
- ``bounded``: runs cached on every exact value, bounded in time and memory, cancellable,
  replications side by side in warm worker processes (``costsim.runs.isolated``);
- ``pool`` and ``limits``: the server's pool of them (``new_pool``; ``server.server_pool`` keeps the
  one a server shares) and the session limits, both light, so the spares start first;
- ``sharing``: the scenario in the URL and the content key of the widgets;
- ``headline``: the verdict, the cards' numbers, Markdown-safe user text.

Each name is imported on first use (as the ``costsim`` façade does), so ``app.py`` can import the
light modules and start the worker processes before anything heavy is imported.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> the module that defines it
_WHERE = {
    "ClassKnobs": "costsim.dashboard.knobs",
    "ECONOMY": "costsim.dashboard.knobs",
    "Knobs": "costsim.dashboard.knobs",
    "LINK": "costsim.dashboard.sharing",
    "Limits": "costsim.dashboard.limits",
    "ResultCache": "costsim.dashboard.bounded",
    "RunStopped": "costsim.dashboard.bounded",
    "SCENARIO_DIR": "costsim.dashboard.shipped",
    "SETUPS": "costsim.dashboard.knobs",
    "Upload": "costsim.dashboard.uploads",
    "apply_knobs": "costsim.dashboard.knobs",
    "changed_knobs": "costsim.dashboard.knobs",
    "content_key": "costsim.dashboard.sharing",
    "current_knobs": "costsim.dashboard.knobs",
    "decode_scenario": "costsim.dashboard.sharing",
    "encode_scenario": "costsim.dashboard.sharing",
    "knob_paths": "costsim.dashboard.knobs",
    "knob_problems": "costsim.dashboard.knobs",
    "literal_markdown": "costsim.present.headline",
    "load_upload": "costsim.dashboard.uploads",
    "make_upload_root": "costsim.dashboard.uploads",
    "new_pool": "costsim.dashboard.pool",
    "public_text": "costsim.dashboard.uploads",
    "run_key": "costsim.dashboard.bounded",
    "safe_upload_name": "costsim.dashboard.uploads",
    "shipped_scenarios": "costsim.dashboard.shipped",
    "shipped_traces": "costsim.dashboard.shipped",
    "simulate_bounded": "costsim.dashboard.bounded",
    "simulate_many": "costsim.dashboard.bounded",
    "sized_name": "costsim.scenario.naming",
    "waiting_note": "costsim.dashboard.workers",
    "warm_up": "costsim.dashboard.pool",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    """Each public name from its module on first use (then kept here)."""
    if name not in _WHERE:
        raise AttributeError(f"module 'costsim.dashboard' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
