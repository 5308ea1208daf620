"""The phases table on the Iteration speed tab (Streamlit): readable headers, units, rounded."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import costsim
from costsim.present.formats import MISSING

# The phases table on screen: (column, header, number format, help). Shares are shown in per cent
# (the data keep full precision for sorting and copying; only the display is rounded).
PHASE_VIEW = [
    ("option", "option", None, None),
    ("job_class", "job class", None, None),
    ("rollout_s", "rollout (s)", "%.1f", "Generating the responses (mean seconds per iteration)."),
    ("logprobs_s", "log-probs (s)", "%.1f", "Recomputing the old policy's log-probabilities."),
    ("scoring_s", "scoring (s)", "%.1f", "Reference model, reward model or verifier."),
    ("update_s", "update (s)", "%.1f", "Policy update: training compute, pipeline bubble, gradient all-reduce."),
    ("sync_s", "sync / reshard (s)", "%.2f", "Weights to the rollout engines: across the fabric "
     "(disaggregated) or resharded within the node (colocated)."),
    ("overhead_s", "async overhead (s)", "%.1f", "Async only: re-prefilling in-flight responses under new weights."),
    ("iteration_s", "iteration (s)", "%.1f", "The whole iteration; async overlaps rollout with training, "
     "so it is less than the sum of the phases there."),
    ("rollout_share", "rollout share", "%.0f%%", "Rollout ÷ iteration."),
    ("straggler_share", "straggler share", "%.0f%%", "Share of rollout time spent on the longest response "
     "alone, which more rollout GPUs cannot shorten."),
    ("rollout_tokens_per_s_per_gpu", "rollout tok/s per GPU", "%,.0f",
     "Response tokens ÷ (rollout seconds × rollout GPUs)."),
    ("capped_share", "capped", "%.1f%%", "Share of responses cut at the length cap."),
    ("iterations_per_day", "iterations per day", "%,.0f", "Completed within the horizon."),
    ("cost_per_iteration_usd", "$ per iteration", "dollar", None),
    ("gpu_type", "GPU", None, None),
    ("network", "network", None, None),
    ("jobs", "jobs", "%,d", None),
    ("iterations_planned", "iterations planned", "%,d", None),
    ("iterations_done", "iterations done", "%,d", None),
]


_PY = {"%.1f": "{:.1f}", "%.2f": "{:.2f}", "%.0f%%": "{:.0f}%", "%.1f%%": "{:.1f}%", "%,.0f": "{:,.0f}",
       "%,d": "{:,.0f}", "dollar": "${:,.2f}"}


def dash_or(fmt: str, value: float) -> str:
    """``value`` as the column's ``fmt`` shows it, or "–" when it is missing (NaN)."""
    return MISSING if pd.isna(value) else _PY[fmt].format(value)


def phases_table(res: costsim.Results) -> None:
    """The phases table with readable headers and rounded numbers, and what async means for it."""
    if res.phases["job_class"].isin([c.name for c in res.scenario.workload.classes if c.mode == "async"]).any():
        st.caption("Async classes overlap rollout with training: their phases add up to more than the iteration.")
    names = ("option", "job_class")  # pinned while the numbers scroll sideways
    config = {col: st.column_config.NumberColumn(label, format=fmt, help=hint) if fmt else
              st.column_config.TextColumn(label, help=hint, pinned=col in names,
                                          width="medium" if col in names else None)
              for col, label, fmt, hint in PHASE_VIEW}
    shares = ["rollout_share", "straggler_share", "capped_share"]
    view = res.phases.assign(**{c: res.phases[c] * 100 for c in shares})
    for col, label, fmt, hint in PHASE_VIEW:
        if fmt and col in view and view[col].isna().any():  # e.g. no iteration finished: "–", not "NaN"
            view[col] = [dash_or(fmt, v) for v in view[col]]
            config[col] = st.column_config.TextColumn(label, help=hint)
    st.dataframe(view, hide_index=True, key="phases_table", column_config=config,
                 column_order=[col for col, *_ in PHASE_VIEW])
