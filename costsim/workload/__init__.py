"""Jobs drawn from a scenario and a seed before any option (``jobs.py``), and their work plan
on each option (``plan.py``)."""

from costsim.workload.jobs import Job, JobTable, generate

__all__ = ["Job", "JobTable", "generate"]
