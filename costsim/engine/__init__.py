"""The discrete-event engine (the only package that imports SimPy): ``run_option`` in ``run.py``."""

from costsim.engine.run import BASE, BURST, ROLLOUT, EventLimitExceeded, UsageRecord, run_option

__all__ = ["BASE", "BURST", "ROLLOUT", "EventLimitExceeded", "UsageRecord", "run_option"]
