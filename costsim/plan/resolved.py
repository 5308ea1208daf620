"""The scenario as run: every value a run takes from the catalog written into the scenario.

``resolve_scenario(scenario, catalog)`` returns the scenario with each blank (null) field the run
fills from the catalog or a schema default set to the value it used — economics, each option's
capex per GPU, price, lead time, node size, billing, failure and preemption rates, rollout link —
and, in its ``catalog:`` section, the GPU specs, fabric efficiencies, RL constants and fallback
on-demand prices the model reads, with ``catalog_version`` set to the catalog's. Run again under
any catalog, it gives the same numbers (``tests/plan/test_resolved_scenario.py``); the decision targets in
force are written out too. Values the scenario
does not use (the specs of a GPU type no option has, RL constants without RL classes) stay blank.
"""

from __future__ import annotations

from typing import Any

from costsim.catalog.load import Catalog, default_catalog
from costsim.catalog.pins import effective_catalog
from costsim.plan.fleet import Plan, pools
from costsim.plan.groups import GroupedPlan
from costsim.plan.options import CloudPlan, OwnedPlan
from costsim.plan.resolve import default_capex_per_gpu, economics_values, resolve
from costsim.scenario.io import scenario_from_data
from costsim.scenario.model import Scenario

# The GPU specs each part of the model reads (costsim.plan.hardware; costing's energy and facility).
RL_SPECS = ("memory_gb", "bf16_dense_tflops", "fp8_dense_tflops", "hbm_tb_s", "gpus_per_node", "nvlink_domain_gpus",
            "nvlink_busbw_gb_s", "nics_per_node", "nic_busbw_gb_s", "nic_gb_s_per_gpu")
POWER_SPECS = ("node_max_kw", "node_idle_kw")
RL_CONSTANTS = ("hbm_efficiency", "decode_step_floor_s", "sglang_hbm_efficiency", "sglang_decode_step_floor_s",
                "prefill_mfu", "optimizer_step_s", "microbatch_s", "microbatch_tokens", "sync_nccl_latency_s",
                "sync_nccl_efficiency", "sync_checkpoint_engine_latency_s", "sync_checkpoint_engine_efficiency",
                "sync_nixl_latency_s", "sync_nixl_efficiency", "sync_bucket_gb", "reload_gb_s", "kv_memory_fraction",
                "verifier_workers_per_gpu", "tp_allreduce_latency_s", "tp_allreduce_doubling_s")


def _whole(x: Any) -> Any:
    """An integral float as an int (a YAML ``1`` read as 1.0 must still validate as a count)."""
    return int(x) if isinstance(x, float) and x.is_integer() else x


def _one_type(opt: dict, plan: OwnedPlan, cat: Catalog, econ) -> None:
    """An owned option of one GPU type: its capex per GPU and node size."""
    if opt.get("capex_usd_per_gpu") is None:
        # The same expression catalog.resolve prices it with, so the float is the same to the last bit.
        opt["capex_usd_per_gpu"] = default_capex_per_gpu(plan.gpu, cat.fabrics[plan.network]["capex_frac"],
                                                         econ.storage_capex_frac, econ.install_capex_frac)
    opt["gpus_per_node"] = plan.gpus_per_node


def _owned(opt: dict, plan: OwnedPlan | GroupedPlan, cat: Catalog, econ) -> dict:
    # A pool of node groups keeps a blank capex and no node size: each group's type prices its GPUs
    # (the catalog's server price, which no catalog: section pins) and its nodes are the group's.
    if isinstance(plan, OwnedPlan):
        _one_type(opt, plan, cat, econ)
    if opt.get("lead_time_days") is None:
        opt["lead_time_days"] = cat.economics["lead_time_days"]
    if opt.get("failures") == "catalog":
        rel = cat.reliability
        opt["failures"] = {"node_failures_per_1000_node_days": rel["node_failures_per_1000_node_days"],
                           "repair_hours": rel["repair_hours"]}
    for t in opt.get("tranches") or ():
        if t.get("payment") == "lease" and t.get("lease_rate_per_year") is None:
            t["lease_rate_per_year"] = econ.cost_of_capital  # a lease's rate defaults to the cost of capital
    return opt


def _cloud(opt: dict, plan: CloudPlan, cat: Catalog) -> dict:
    opt["price_per_gpu_hour"] = plan.price_per_gpu_hour
    opt["price_change_per_year"] = plan.price_change_per_year
    opt["gpus_per_instance"] = plan.gpus_per_instance
    if plan.reserved:
        opt.update(term_years=opt.get("term_years") or 1, scheduler=plan.scheduler, placement=plan.placement)
        return opt
    opt.update(billing_granularity_s=plan.billing_granularity_s, minimum_billing_s=plan.minimum_billing_s,
               provisioning_delay_h=plan.provisioning_delay_h, startup_h=plan.startup_h)
    if plan.pricing == "spot":
        rel = cat.reliability
        if opt.get("preemptions_per_instance_day") is None:
            opt["preemptions_per_instance_day"] = rel["spot_preemptions_per_instance_day"]
        if opt.get("reacquire_delay_h") is None:
            opt["reacquire_delay_h"] = rel["spot_reacquire_delay_h"]
    return opt


def _pins(scenario: Scenario, plans: list[Plan], cat: Catalog) -> dict | None:
    """The ``catalog:`` section: the specs, efficiencies, constants and fallback prices the run read."""
    parts = [p for plan in plans for p in pools(plan)]
    with_rl = bool(scenario.workload.classes)
    gpus: dict[str, dict] = {}
    for part in parts:
        spec, wanted = part.gpu, (RL_SPECS if with_rl else ()) + (POWER_SPECS if isinstance(part, OwnedPlan) else ())
        gpus.setdefault(spec.name, {}).update({k: _whole(getattr(spec, k)) for k in wanted})
    if not any(not p.is_pool for p in parts):  # unfinished work is then priced at the catalog's on-demand
        for part in parts:
            tiers = part.gpu.price
            gpus.setdefault(part.gpu.name, {})["on_demand"] = {t: tiers[t]["on_demand"] for t in tiers
                                                               if "on_demand" in tiers[t]}
    pins: dict[str, Any] = {"gpus": {k: v for k, v in gpus.items() if v} or None}
    if with_rl:
        pins["fabrics"] = {p.network: {"efficiency": cat.fabrics[p.network]["efficiency"]} for p in parts}
        pins["rl"] = {k: _whole(cat.rl[k]) for k in RL_CONSTANTS}
    pins = {k: v for k, v in pins.items() if v}
    return pins or None


def resolve_scenario(scenario: Scenario, catalog: Catalog | None = None) -> Scenario:
    """``scenario`` with every catalog-defaulted value it uses filled in (see the module), validated.
    Idempotent: resolving a resolved scenario under the same catalog returns it unchanged. Values the
    scenario sets are kept as they are."""
    installed = catalog or default_catalog()
    cat = effective_catalog(scenario, installed)
    plans = resolve(scenario, installed)
    by_name = {p.name: p for p in plans}
    econ = economics_values(scenario, cat)
    data = scenario.model_dump(mode="json")
    data["economics"] = {k: (v if v is not None else _whole(cat.economics[k])) for k, v in data["economics"].items()}
    link = cat.rl["rollout_link_gb_s"]
    for opt in data["options"]:
        plan = by_name[opt["name"]]
        if isinstance(plan, OwnedPlan | GroupedPlan):
            _owned(opt, plan, cat, econ)
        elif isinstance(plan, CloudPlan):
            _cloud(opt, plan, cat)
        if opt.get("rollout_pool") is not None and opt.get("rollout_link_gb_s") is None:
            opt["rollout_link_gb_s"] = link
    data["decision"]["targets"] = list(scenario.decision.stated_targets)  # the defaults in force, written out
    data["catalog"] = _merge(data.get("catalog"), _pins(scenario, plans, cat))
    data["catalog_version"] = installed.version
    return scenario_from_data(data, f"scenario {scenario.name!r} resolved", scenario.base_dir)


def _merge(given: dict | None, used: dict | None) -> dict | None:
    """The scenario's own ``catalog:`` values, with the used ones added where it left a blank."""
    if given is None or used is None:
        return given if used is None else used
    out = dict(given)
    for k, v in used.items():
        out[k] = _merge(out.get(k), v) if isinstance(v, dict) else (out[k] if out.get(k) is not None else v)
    return out
