"""What one dashboard server shares between its sessions, owned by Streamlit's resource cache (one
per server process, dropped with ``st.cache_resource.clear()``): its pool of worker processes."""

from __future__ import annotations

import streamlit as st

from costsim.dashboard.bounded import new_pool
from costsim.runs.workerpool import WorkerPool


@st.cache_resource
def server_pool() -> WorkerPool:
    """The server's worker processes (``bounded.new_pool``): every session's runs, spares,
    Sensitivity and Sweep tabs and upload readers count against its one cap."""
    return new_pool()


__all__ = ["server_pool"]
