"""The scenario resolved against the catalog: option plans in numbers and their behaviour
(``options.py``), built by ``resolve.py``; the checks that need them (``checks.py``) and the
prepared scenario a run reads (``prepare.py``); what a pool and an RL class mean to the iteration
model (``hardware.py``); ``resolved.py`` writes every effective value back as a scenario."""
