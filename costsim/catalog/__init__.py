"""The catalog: every default with its source and date (``catalog.yaml``), read by ``load.py``;
``pins.py`` holds a scenario's pinned catalog values and version."""
