"""Building blocks of the figures in ``costsim.plots``: the colour-blind-safe option styles
(``styles``), the shared layout and line helpers (``layout``), the replications band (``band``) and
the job timeline (``gantt``). Plotly only; no model logic: every number plotted is a column of
``costsim.Results``."""
