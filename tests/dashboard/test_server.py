"""What a dashboard server shares between its sessions (``costsim.dashboard.server``)."""

from __future__ import annotations

import streamlit as st

from costsim.dashboard import server


def test_clearing_the_caches_keeps_the_servers_warm_workers():
    """A user's "Clear cache" (or a test's fresh start) drops results, not the pool whose warm
    workers make the next run quick: the same pool, its idle workers alive."""
    pool = server.server_pool()
    capacity, pool.capacity = pool.capacity, 1
    pool.top_up()
    idle = list(pool.idle)
    try:
        st.cache_data.clear()
        st.cache_resource.clear()
        assert server.server_pool() is pool
        assert pool.idle == tuple(idle) and all(w.returncode is None for w in idle)
    finally:
        pool.close()
        pool.capacity = capacity
