"""``make app``: the dashboard's server with its warm workers started before Streamlit.

    python -m costsim.dashboard.launch app.py [streamlit run options]

``streamlit run app.py`` runs the script only when a browser opens a page, so on a cold server the
first page waits for its worker processes to start, import costsim (about a second of CPU each)
and run the first screen's replications (``pool.new_pool``'s primed spares: about 5 s of CPU on
this repository's 2-core machine). This starts the server's pool first, its primed spares running
those replications at once, then Streamlit in the same process (``streamlit.web.cli``, as
``streamlit run`` does), so the server's pool is the one ``app.py`` finds
(``server.server_pool``): a page opened while they run waits only for what is left, and one
opened later finds them done. Not when an earlier server kept the first screen's runs on disk
(``pool.first_screen_kept``): the first page reads them, and the spares start after it is drawn
(``server.top_up_spares``). Before Streamlit answers, the script's own imports are made too
(``import_script_modules``): a page's first run would otherwise spend most of a second of CPU
importing the dashboard. The options after the script are Streamlit's; ``SERVER_OPTIONS`` come
first, so that one given there wins.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from costsim.dashboard.server import start_spares

# What the dashboard needs wherever the server is started (Streamlit reads .streamlit/config.toml
# only from the folder it is started in, where the repository's copy says the same for
# `streamlit run app.py` and AppTest): no traceback or exception text shown to a user, and no
# source file watched (Streamlit would resolve every imported module's file and watch its folder at
# each session's start and after each run, a second of the server's CPU on a first screen: see
# docs/performance.md; restart the server after changing the code).
SERVER_OPTIONS = ("--client.showErrorDetails", "none", "--server.fileWatcherType", "none")


def import_script_modules(script: Path) -> None:
    """Import what ``script`` imports at its top level (its ``import`` and ``from ... import``
    statements, each name too: ``costsim.dashboard`` loads a name's module on first use) without
    running it: what Streamlit's first run of the script would then find imported. A script that
    cannot be read or parsed, or an import that fails, is left for that run to report."""
    try:
        tree = ast.parse(script.read_text(), filename=str(script))
    except (OSError, SyntaxError, ValueError):
        return
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                _quietly(importlib.import_module, alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            module = _quietly(importlib.import_module, node.module)
            for alias in node.names if module is not None else ():
                # a name the module defines, loads on first use, or a submodule: one failing spares the rest
                if not _quietly(hasattr, module, alias.name):
                    _quietly(importlib.import_module, f"{node.module}.{alias.name}")


def _quietly(call, *args):
    """``call(*args)``, or None if it raised: the script's own run reports it, on Streamlit's page."""
    try:
        return call(*args)
    except Exception:  # noqa: BLE001 - see the docstring
        return None


def main(argv: Sequence[str] | None = None) -> None:
    """Start the server's spares, primed with the first screen's replications unless an earlier
    server kept those runs on disk (``server.start_spares``), then ``streamlit run`` with ``argv``
    (default: this command's arguments: the script, then Streamlit's options), ``SERVER_OPTIONS``
    before those options."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0].startswith("-"):
        print("usage: python -m costsim.dashboard.launch app.py [streamlit run options]", file=sys.stderr)
        raise SystemExit(2)
    start_spares(primed=True)
    import_script_modules(Path(args[0]))
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", args[0], *SERVER_OPTIONS, *args[1:]]
    cli.main()


if __name__ == "__main__":
    main()
