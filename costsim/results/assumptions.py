"""Every assumption a run's numbers rest on, with its provenance: the report's and the dashboard's
assumptions table, and ``assumptions.csv`` of ``costsim run --out``.

``assumptions(scenario, catalog)`` lists the values the scenario's options actually use — economics
(owned options only, the discount rate always), each owned option's capex per GPU, lead time and
failure rates, each GPU type's node power, each rented option's price, billing and preemption
rates, and, with RL classes, the GPU specs, fabric efficiencies and RL constants the iteration model
reads — then the decision's targets and price of waiting. The values are those of
``costsim.plan.resolved.resolve_scenario`` (the scenario as run), so the table and
``scenario.resolved.yaml`` cannot disagree.

Columns: ``assumption`` (what, and for which option or GPU type), ``value`` (a number, or the
targets' text), ``unit``, ``source`` and ``date`` (the catalog's for a catalog value),
``from``: ``"scenario"`` (the scenario sets it), ``"catalog <version>"`` (the catalog supplied it) or
``"costsim default"`` (a schema default: provisioning delay, startup, term, targets).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from costsim.catalog.load import Catalog, default_catalog
from costsim.catalog.pins import effective_catalog
from costsim.plan import facts
from costsim.plan.fleet import pools
from costsim.plan.resolve import resolve
from costsim.plan.resolved import RL_CONSTANTS, RL_SPECS, resolve_scenario
from costsim.scenario import CloudOption, Failures, OwnedOption, Scenario
from costsim.scenario.bounds import show

COLUMNS = ("assumption", "value", "unit", "source", "date", "from")
DEFAULT = "costsim default"
SET_HERE = "set in the scenario"

# Economics fields, their names in words and units: those owned options use, then the rest.
OWNED_ECONOMICS = (
    ("electricity_usd_per_kwh", "electricity price", "USD/kWh"),
    ("pue", "PUE", "facility kW per IT kW"),
    ("colo_usd_per_kw_month", "colocation", "USD per kW-month"),
    ("depreciation_years", "depreciation", "years"),
    ("residual_value_frac", "residual value", "share of capex"),
    ("maintenance_frac_per_year", "maintenance", "share of capex per year"),
    ("staff_usd_per_fte_year", "staff cost", "USD per engineer-year"),
    ("gpus_per_fte", "GPUs per engineer", "GPUs"),
    ("staff_min_fte", "fewest engineers per owned cluster", "engineers"),
    ("cost_of_capital", "cost of capital", "per year"),
    ("setup_usd", "setup per owned cluster", "USD"),
)
CAPEX_SHARES = (("storage_capex_frac", "storage capex", "share of server price"),
                ("install_capex_frac", "installation capex", "share of server price"))
SPEC_UNITS = {"memory_gb": ("GPU memory", "GB"), "bf16_dense_tflops": ("dense BF16 compute", "TFLOP/s per GPU"),
              "fp8_dense_tflops": ("dense FP8 compute", "TFLOP/s per GPU"),
              "hbm_tb_s": ("HBM bandwidth", "TB/s per GPU"), "gpus_per_node": ("GPUs per catalog node", "GPUs"),
              "nvlink_busbw_gb_s": ("NVLink bus bandwidth", "GB/s"), "nics_per_node": ("NICs per node", "NICs"),
              "nic_busbw_gb_s": ("NIC bus bandwidth", "GB/s per NIC"),
              "nvlink_domain_gpus": ("GPUs per NVLink domain", "GPUs"),
              "nic_gb_s_per_gpu": ("NIC bandwidth per GPU", "GB/s per GPU"),
              "node_max_kw": ("node power at full load", "kW per node"), "node_idle_kw": ("node power idle", "kW per node")}
RL_UNITS = {"hbm_efficiency": ("decode HBM efficiency", "share of peak"),
            "decode_step_floor_s": ("decode step floor", "s"),
            "kv_memory_fraction": ("rollout memory for weights and KV cache", "share of HBM"),
            "verifier_workers_per_gpu": ("verifier workers", "per GPU"),
            "sglang_hbm_efficiency": ("decode HBM efficiency, SGLang", "share of peak"),
            "sglang_decode_step_floor_s": ("decode step floor, SGLang", "s"),
            "prefill_mfu": ("prefill FLOP utilisation", "share of peak"),
            "optimizer_step_s": ("fixed cost per optimizer step", "s"),
            "microbatch_s": ("fixed cost per micro-batch", "s"),
            "microbatch_tokens": ("tokens per micro-batch", "tokens per GPU"),
            "sync_nccl_latency_s": ("NCCL refit latency", "s per transfer"),
            "sync_nccl_efficiency": ("NCCL refit efficiency", "share of the path"),
            "sync_checkpoint_engine_latency_s": ("checkpoint-engine refit latency", "s per transfer"),
            "sync_checkpoint_engine_efficiency": ("checkpoint-engine refit efficiency", "share of the path"),
            "sync_nixl_latency_s": ("NIXL refit latency", "s per transfer"),
            "sync_nixl_efficiency": ("NIXL refit efficiency", "share of the path"),
            "sync_bucket_gb": ("refit bucket", "GB per transfer"),
            "reload_gb_s": ("engine weight reload", "GB/s"),
            "tp_allreduce_latency_s": ("small all-reduce across two NVLink domains", "s"),
            "tp_allreduce_doubling_s": ("small all-reduce, each doubling of the domains", "s")}


class _Rows:
    """Collects rows, attributing each to the scenario, the catalog or a costsim default."""

    def __init__(self, scenario: Scenario, catalog: Catalog):
        self.version = catalog.version
        self.same_version = scenario.catalog_version == catalog.version
        self.entries = {e.path: e for e in catalog.entries}
        self.rows: list[dict[str, Any]] = []

    def add(self, what: str, value: Any, unit: str, given: Any, path: str | None, source: str = "",
            date: str = "") -> None:
        """``given``: the scenario's own value (None: blank); ``path``: the catalog leaf that fills a
        blank (None: a costsim default, ``source`` says which)."""
        entry = self.entries.get(path) if path else None
        if given is None:
            origin = f"catalog {self.version}" if entry is not None else DEFAULT
            source, date = (source or entry.source, date or entry.date) if entry is not None else (source, date)
        else:
            origin = "scenario"
            # A resolved scenario writes the catalog's value: its source is still the catalog's.
            if entry is not None and self.same_version and entry.value == given:
                source, date = entry.source, entry.date
            else:
                source, date = SET_HERE, ""
        self.rows.append({"assumption": what, "value": value, "unit": unit, "source": source, "date": date,
                          "from": origin})


def _pinned(scenario: Scenario, *path: str) -> Any:
    """A value of the scenario's ``catalog:`` section (None where it pins nothing)."""
    node: Any = scenario.catalog
    for key in path:
        node = getattr(node, key, None) if node is not None else None
    return node


def assumptions(scenario: Scenario, catalog: Catalog | None = None) -> pd.DataFrame:
    """The assumptions table of ``scenario`` under ``catalog`` (default: the installed one); see the module."""
    installed = catalog or default_catalog()
    cat = effective_catalog(scenario, installed)
    plans = resolve(scenario, installed)
    done = resolve_scenario(scenario, installed)
    out = _Rows(scenario, installed)
    parts = [p for plan in plans for p in pools(plan)]
    owned = facts.owned_options(scenario)
    econ, given_econ = done.economics, scenario.economics
    if owned:
        for key, what, unit in OWNED_ECONOMICS:
            out.add(what, getattr(econ, key), unit, getattr(given_econ, key), f"economics.{key}")
        if any(o.capex_usd_per_gpu is None for o in owned):
            for key, what, unit in CAPEX_SHARES:
                out.add(what, getattr(econ, key), unit, getattr(given_econ, key), f"economics.{key}")
    out.add("discount rate (net present value)", econ.discount_rate, "per year", given_econ.discount_rate,
            "economics.discount_rate")
    by_name = {p.name: p for p in plans}
    for option, as_resolved in zip(owned, facts.owned_options(done), strict=True):  # resolving keeps kinds and order
        _owned_rows(out, option, as_resolved, pools(by_name[option.name]), cat, installed)
        for j, (t, t_done) in enumerate(zip(option.tranches or (), as_resolved.tranches or (), strict=True)):
            if t.payment == "lease":  # a blank rate is the cost of capital, as the scenario or catalog says
                given = t.lease_rate_per_year if t.lease_rate_per_year is not None else given_econ.cost_of_capital
                out.add(f"lease rate, {option.name} tranche {j}", t_done.lease_rate_per_year, "per year", given,
                        "economics.cost_of_capital")
    for gpu in dict.fromkeys(p.gpu.name for p in facts.owned_plans(parts).values()):
        for key in ("node_max_kw", "node_idle_kw"):
            what, unit = SPEC_UNITS[key]
            out.add(f"{what}, {gpu}", getattr(cat.gpus[gpu], key), unit, _pinned(scenario, "gpus", gpu, key),
                    f"gpus.{gpu}.{key}")
    for cloud, cloud_done in zip(facts.cloud_options(scenario), facts.cloud_options(done), strict=True):
        _cloud_rows(out, cloud, cloud_done)
    for opt, resolved in zip(scenario.options, done.options, strict=True):
        if opt.rollout_pool is not None:
            out.add(f"rollout link, {opt.name}", resolved.rollout_link_gb_s, "GB/s", opt.rollout_link_gb_s,
                    "rl.rollout_link_gb_s")
    if not any(not p.is_pool for p in parts):  # unfinished work is priced at the catalog's on-demand
        for gpu in dict.fromkeys(p.gpu.name for p in parts):
            for tier, table in cat.gpus[gpu].price.items():
                out.add(f"on-demand price pricing unfinished work, {gpu} {tier}", table["on_demand"],
                        "USD per GPU-hour", _pinned(scenario, "gpus", gpu, "on_demand", tier),
                        f"gpus.{gpu}.price.{tier}.on_demand")
    if scenario.workload.classes:
        _rl_rows(out, scenario, parts, cat)
    _decision_rows(out, scenario)
    return pd.DataFrame(out.rows, columns=list(COLUMNS))


def _owned_rows(out: _Rows, opt: OwnedOption, done: OwnedOption, parts: list, cat: Catalog,
                installed: Catalog) -> None:
    """An owned option's capex per GPU (each GPU type of a pool of node groups, ``parts``: its
    plan's pools), lead time and failures."""
    first: dict[str, Any] = {}
    for p in parts:
        first.setdefault(p.gpu.name, p)  # the first group of each type (every group of it costs the same)
    for gpu_type, part in first.items():
        source = date = ""
        if opt.capex_usd_per_gpu is None:
            gpu, econ = cat.gpus[gpu_type], installed.economics
            server = out.entries[f"gpus.{gpu_type}.server_price_usd"]
            # The derivation names its inputs as the catalog and scenario state them (``show``): the
            # table is data, written as assumptions.csv by costsim.runs, and worded by no front end.
            source = (f"{gpu_type} server ${gpu.server_price_usd:,.0f} ÷ {gpu.gpus_per_node} GPUs × "
                      f"(1 + fabric {show(cat.fabrics[opt.network]['capex_frac'])} + storage "
                      f"{show(econ['storage_capex_frac'])} + installation {show(econ['install_capex_frac'])}); "
                      f"server price: {server.source}")
            date = server.date
        value = done.capex_usd_per_gpu if opt.node_groups is None else part.capex_usd / part.gpus
        out.add(f"capex per GPU, {opt.name} ({gpu_type}, {opt.network})", value, "USD per GPU",
                opt.capex_usd_per_gpu, f"gpus.{gpu_type}.server_price_usd", source, date)
    out.add(f"lead time, {opt.name}", done.lead_time_days, "days", opt.lead_time_days, "economics.lead_time_days")
    if done.failures is not None:
        assert isinstance(done.failures, Failures)  # resolved: "catalog" is replaced by the catalog's values
        mine = opt.failures if isinstance(opt.failures, Failures) else None  # the scenario's own, not "catalog"
        out.add(f"node failures, {opt.name}", done.failures.node_failures_per_1000_node_days, "per 1,000 node-days",
                mine and mine.node_failures_per_1000_node_days, "reliability.node_failures_per_1000_node_days")
        out.add(f"repair time, {opt.name}", done.failures.repair_hours, "h per failure",
                mine and mine.repair_hours, "reliability.repair_hours")


def _cloud_rows(out: _Rows, opt: CloudOption, done: CloudOption) -> None:
    term = done.term_years if facts.is_reserved(opt) else None
    key = facts.catalog_price_key(opt.pricing, term) if term else opt.pricing
    label = f"{opt.gpu_type}, {opt.price_tier}, {opt.pricing.replace('_', '-')}" + (f" {term}-year" if term else "")
    out.add(f"price, {opt.name} ({label})", done.price_per_gpu_hour, "USD per GPU-hour", opt.price_per_gpu_hour,
            f"gpus.{opt.gpu_type}.price.{opt.price_tier}.{key}")
    if opt.price_change_per_year is not None:  # a trend the scenario states (null: today's price throughout)
        out.add(f"price change, {opt.name}", opt.price_change_per_year, "fraction per year, compound",
                opt.price_change_per_year, None)
    if term:
        out.add(f"commitment term, {opt.name}", term, "years", opt.term_years, None, "schema default: 1 year")
    else:
        out.add(f"billing increment, {opt.name}", done.billing_granularity_s, "s", opt.billing_granularity_s,
                f"billing.{opt.price_tier}.granularity_s")
        out.add(f"minimum billed, {opt.name}", done.minimum_billing_s, "s per allocation", opt.minimum_billing_s,
                f"billing.{opt.price_tier}.minimum_s")
        out.add(f"provisioning delay, {opt.name}", done.provisioning_delay_h, "h", opt.provisioning_delay_h, None,
                "schema default")
        out.add(f"startup, {opt.name}", done.startup_h, "h, billed", opt.startup_h, None, "schema default")
        # Renting is only as good as the capacity behind it: say when the run assumed it unlimited.
        quota = "unlimited" if done.max_gpus is None else done.max_gpus
        out.add(f"quota, {opt.name}", quota, "GPUs" if done.max_gpus is not None else "",
                opt.max_gpus, None, "schema default: no quota, capacity always there")
        s = done.stockout
        stock = ("none" if s is None else f"{show(s.probability * 100)} % of requests of {s.min_gpus:,} GPUs or more, "
                                          f"retried after {show(s.retry_h)} h")
        out.add(f"stockouts, {opt.name}", stock, "", opt.stockout, None, "schema default: requests never stock out")
    if facts.is_spot(opt):
        out.add(f"spot preemptions, {opt.name}", done.preemptions_per_instance_day, "per instance-day",
                opt.preemptions_per_instance_day, "reliability.spot_preemptions_per_instance_day")
        out.add(f"spot reacquire delay, {opt.name}", done.reacquire_delay_h, "h", opt.reacquire_delay_h,
                "reliability.spot_reacquire_delay_h")
    if done.failures is not None:
        assert opt.failures is not None  # rented nodes' failures are the scenario's own (no catalog default)
        out.add(f"node failures, {opt.name}", done.failures.node_failures_per_1000_node_days, "per 1,000 node-days",
                opt.failures.node_failures_per_1000_node_days, None)


def _rl_rows(out: _Rows, scenario: Scenario, parts, cat: Catalog) -> None:
    """What the RL iteration model reads: fabric efficiencies, GPU specs, its constants."""
    for net in dict.fromkeys(p.network for p in parts):
        out.add(f"fabric efficiency, {net}", cat.fabrics[net]["efficiency"], "share of InfiniBand bandwidth",
                _pinned(scenario, "fabrics", net, "efficiency"), f"fabrics.{net}.efficiency")
    for gpu in dict.fromkeys(p.gpu.name for p in parts):
        for key in RL_SPECS:
            what, unit = SPEC_UNITS[key]
            out.add(f"{what}, {gpu}", getattr(cat.gpus[gpu], key), unit, _pinned(scenario, "gpus", gpu, key),
                    f"gpus.{gpu}.{key}")
    for key in RL_CONSTANTS:
        what, unit = RL_UNITS[key]
        out.add(what, cat.rl[key], unit, _pinned(scenario, "rl", key), f"rl.{key}")


def _decision_rows(out: _Rows, scenario: Scenario) -> None:
    decision = scenario.decision
    targets = decision.stated_targets
    out.add("service-level targets", "; ".join(targets) if targets else "none", "", decision.targets, None,
            "the targets a lab would hold (schema default)")
    price = decision.waiting_usd_per_gpu_hour
    stated = "waiting_usd_per_gpu_hour" in decision.model_fields_set  # an explicit 0 is the scenario's
    out.add("price of waiting", price, "USD per queued GPU-hour", price if stated else None, None,
            "schema default: waiting unpriced")
