"""Decisions on top of runs and sweeps (DESIGN.md section 14), numbers only: a fair comparison
(``fair.py``), targets (``targets.py``), the verdict (``verdict.py``), the cheapest configuration
meeting them (``optimize.py``), the Pareto frontier (``pareto.py``), the sensitivity tornado
(``sensitivity.py``), the flips (``flips.py``) and time to a target score (``time_to_target.py``).

Nothing is imported here: the verdict brings scipy.stats and the optimizer the sweep machinery,
which light users (the dashboard's cards, ``fair_rows``) and the CLI's start-up do not need."""
