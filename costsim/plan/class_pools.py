"""Which of an option's pools a class's jobs may run on, and the GPU type they run on in words.

A job asking for a GPU type (``gpu_type``) may run only on pools of it (``fleet.pools_for``). On a
pool of node groups an RL class may also run only on groups whose GPUs hold its model
(``rl.fit_problem`` on the group's hardware, which depends on its GPU's memory and its node size):
a class of any type is never placed on a group it cannot run on, and is refused only when no group
of the type it asks for holds it (``costsim.plan.checks.layout_problems``). Any other option runs
a class on all its pools, so a pool that cannot hold its model is an error there.
"""

from __future__ import annotations

from costsim.models import rl
from costsim.plan.fleet import Plan, pools_for
from costsim.plan.groups import GroupedPlan
from costsim.plan.hardware import hardware, shape
from costsim.plan.options import CloudPlan, OwnedPlan
from costsim.scenario.classes import RLClass


def model_problem(model: RLClass | None, pool: OwnedPlan | CloudPlan) -> str | None:
    """Why ``pool``'s GPUs cannot hold RL class ``model`` (its rollout replicas, its training
    layout), in words; None when they can, or for jobs without a model (``None``: trace and job
    class jobs)."""
    return None if model is None else rl.fit_problem(shape(model), hardware(pool))


def usable_pools(plan: Plan, gpu_type: str | None, model: RLClass | None = None) -> list[OwnedPlan | CloudPlan]:
    """The pools a job asking for ``gpu_type`` (None: any) of RL class ``model`` (None: no model)
    may run on: ``pools_for``, and on a pool of node groups only the groups that hold the model
    (empty when none does: the plan's checks refuse that)."""
    usable = pools_for(plan, gpu_type)
    if isinstance(plan, GroupedPlan) and model is not None:
        return [g for g in usable if model_problem(model, g) is None]
    return usable


def gpu_label(plan: Plan, gpu_type: str | None = None, model: RLClass | None = None) -> str:
    """The GPU type a job asking for ``gpu_type`` (None: any) of RL class ``model`` runs on, in
    words: a pool of node groups' types among the groups it may use (``usable_pools``),
    ``+``-joined in group order (``H100+A100``); any other option's home GPU (a hybrid's or fleet's
    first part's)."""
    if isinstance(plan, GroupedPlan):
        return "+".join(dict.fromkeys(g.gpu.name for g in usable_pools(plan, gpu_type, model)))
    return plan.gpu.name
