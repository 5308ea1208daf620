"""Words and number formats every front end shares: the one formatter (``formats.py``) and what
the CLI, the dashboard and the report say first (``headline.py``). No I/O."""
