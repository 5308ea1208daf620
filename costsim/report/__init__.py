"""The self-contained HTML report (``costsim report``): ``build.py`` writes it from runs and their verdict."""
