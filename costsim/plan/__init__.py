"""The scenario resolved against the catalog: option plans in numbers (``options.py``), built by
``resolve.py``; ``resolved.py`` writes every effective value back as a scenario."""
