"""How an owned pool of node groups (``costsim.plan.groups``) places its jobs: each group is a
cluster of its own (``OwnedCluster``: one GPU type, one node size, its own nodes, failures and
scheduler state) and a job runs within one group, timed on that group's GPU type.

A job arriving joins the queue of every group it may use (the GPU type it asks for, or any; an RL
job only groups whose GPUs hold its model: ``workload.plan.group_access``) and could ever hold
(``fits_ever``). The groups decide in one ``DECIDE`` event per instant, in group
order (the fleet's ``SharedDecider``), so when several could start a job at the same instant the
first group does. A job started on one group is dropped from the others' queues
(``OwnedCluster.forget``) and stays with that group for good: a node failure sends it back to that
group's queue, where its work and GPU-hours are.

So every group runs the option's scheduler over the jobs it may hold, in their order: strict
orders (fifo, priority, sjf, lifo) are strict per group — a job that only one group can hold
blocks that group, not the others — and EASY backfill reserves, in each group, the earliest time
the group's head will fit there; a job queued in several groups is head (and reserved for) in each
where it is first, and starts at the earliest of those, so backfilling in any group never delays
its start past the reservation it holds anywhere (tests/engine/test_node_groups.py).

A pool of one group is the plain cluster, event for event (the same test).
"""

from __future__ import annotations

from collections.abc import Sequence

import simpy

from costsim.engine.fleet import PartsRouter
from costsim.engine.owned import OwnedCluster
from costsim.engine.records import Recorder


class GroupRouter(PartsRouter):
    """A pool of node groups' arrivals (see the module). ``groups``: one cluster per group, in
    group order (the router's ``parts``); ``gpus[k][i]``: GPUs job i asks of group k;
    ``may_use[k][i]``: whether job i may run on group k (its GPU type). The record's ``part`` of a
    job is the group it started on."""

    def __init__(self, env: simpy.Environment, groups: Sequence[OwnedCluster], gpus: Sequence[Sequence[int]],
                 may_use: Sequence[Sequence[bool]], rec: Recorder):
        super().__init__(env, groups, rec)
        self.gpus, self.may_use = gpus, may_use

    def arrive(self, i: int) -> None:
        """Queue job i at every group it may use and could ever hold. One that no group can hold is
        refused by the plan's checks before any run; here it would stay unstarted."""
        for k, group in enumerate(self.parts):
            if self.may_use[k][i] and group.fits_ever(self.gpus[k][i]):
                group.arrive(i)
