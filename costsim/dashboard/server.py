"""What one dashboard server shares between its sessions: its pool of worker processes (one per
server process, for as long as it lives), and, in Streamlit's resource cache, starting its warm
spares and the garbage collector's view of what its imports made."""

from __future__ import annotations

import gc
import threading

import streamlit as st

from costsim.dashboard.pool import first_screen_kept, new_pool, warm_up
from costsim.runs.workerpool import WorkerPool

_pool: list[WorkerPool] = []  # the server's, once made: one per process, for as long as it lives
_pool_lock = threading.Lock()
_later: list[threading.Timer] = []  # the deferred spares' timer, once started (top_up_spares)


def server_pool(*, primed: bool = True) -> WorkerPool:
    """The server's worker processes (``pool.new_pool``): every session's runs, spares,
    Sensitivity and Sweep tabs and upload readers count against its one cap. One per server
    process, kept outside Streamlit's resource cache: clearing the caches (a user's "Clear cache",
    a test's fresh start) drops results, not the warm workers that make the next run quick.
    ``primed``: whether its first spares run the first screen's replications (read when the pool
    is made, by its first call)."""
    with _pool_lock:
        if not _pool:
            _pool.append(new_pool(primed=primed))
        return _pool[0]


@st.cache_resource
def start_workers() -> bool:
    """Once per server, start its warm spares (``pool.warm_up`` with the environment's limits):
    ``app.py`` calls it before its own heavy imports, so on a cold server each spare imports costsim
    (about a second of CPU) beside them rather than after them. Not when an earlier server kept the
    first screen's runs on disk (``pool.first_screen_kept``): the first screen then simulates
    nothing, and ``app.py`` starts the spares once it is drawn (``top_up_spares``). When the
    server's first page opens a link (``?s=``), the spares are plain ones: that session shows the
    link's scenario, not the replications the primed spares would run — unless ``make app``'s
    launcher (``costsim.dashboard.launch``) started primed spares already, before any page: a link
    session then ends those still warming and starts its runs on fresh workers. Whether they were
    started now (or, after the launcher, topped up)."""
    return start_spares(primed=not st.query_params.get("s"))


def start_spares(*, primed: bool) -> bool:
    """Start the server's warm spares (``primed``: running the first screen's replications) unless
    an earlier server kept those runs on disk (``pool.first_screen_kept``): then the pool is made
    with plain spares, started later (``top_up_spares``). Whether they were started now."""
    if first_screen_kept():
        server_pool(primed=False)  # its runs are on disk: the spares, when they start, are plain
        return False
    warm_up(pool=server_pool(primed=primed))
    return True


SPARES_DELAY_S = 5.0  # after a first screen from disk, while the browser draws it


def top_up_spares() -> None:
    """After each run of the script. On a server whose first screen came from disk
    (``start_workers`` started no spares), the spares start ``SPARES_DELAY_S`` after it, on a
    timer: the browser is still drawing that screen, and three spares importing costsim (about 3 s
    of CPU) would take the cores it needs; a run asked for meanwhile starts the workers it needs
    itself. Otherwise nothing: the spares started with the first page and are topped up after each
    batch of runs (``bounded.simulate_many``)."""
    if start_workers():
        return
    with _pool_lock:
        if not _later:
            timer = threading.Timer(SPARES_DELAY_S, lambda: warm_up(pool=server_pool()))
            timer.daemon = True
            timer.start()
            _later.append(timer)


@st.cache_resource
def imports_frozen() -> bool:
    """Once per server, after the app's imports: everything alive then (modules, classes, the
    catalog: about 140,000 objects) is moved out of the garbage collector's sight (``gc.freeze``).

    Streamlit runs a full collection after every script run, before the browser hears that the
    run ended; walking those objects each time took 0.3–0.8 s of every rerun on this 2-core
    machine. They live as long as the server anyway (a frozen object is still freed when its last
    reference goes; only a cycle among them would stay). No collection first: it cost the first
    screen 0.3–0.5 s, to free the few cycles the imports left, which now stay. Once per process:
    a process that froze already (a test process clearing Streamlit's caches) freezes nothing
    more."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
    return True


__all__ = ["SPARES_DELAY_S", "imports_frozen", "server_pool", "start_spares", "start_workers", "top_up_spares"]
