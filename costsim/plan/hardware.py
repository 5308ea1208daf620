"""What a resolved pool and an RL class mean to the iteration model (``costsim.models.rl``): the
pool's GPUs and fabric as ``rl.Hardware``, the class as ``rl.Shape``. The work plans time
iterations with these, and ``costsim.plan.checks`` asks the model whether a class fits a pool."""

from __future__ import annotations

from costsim.catalog.load import Catalog, default_catalog
from costsim.models import network, rl
from costsim.plan.options import CloudPlan, OwnedPlan
from costsim.scenario.classes import RLClass


def hardware(plan: OwnedPlan | CloudPlan, catalog: Catalog | None = None) -> rl.Hardware:
    """What an option's GPUs and fabric mean for an iteration (NVLink domain: node or instance)."""
    gpu = plan.gpu
    # The plan's own constants (resolved with the scenario's pins); a plan built by hand has none.
    consts = plan.rl if plan.rl is not None else (catalog or default_catalog()).rl
    domain = plan.node_gpus
    # A node or instance of fewer GPUs than the catalog's node has its share of the node's NICs.
    nics = gpu.nics_per_node * domain / gpu.gpus_per_node
    inter = network.inter_node_busbw_gb_s(nics, gpu.nic_busbw_gb_s, gpu.nvlink_busbw_gb_s, plan.fabric_efficiency)
    return rl.Hardware(
        bf16_dense_tflops=gpu.bf16_dense_tflops, hbm_tb_s=gpu.hbm_tb_s, memory_gb=gpu.memory_gb,
        gpus_per_node=domain, nvlink_busbw_gb_s=gpu.nvlink_busbw_gb_s, inter_busbw_gb_s=inter,
        mem_efficiency=float(consts["hbm_efficiency"]), step_floor_s=float(consts["decode_step_floor_s"]),
        kv_memory_fraction=float(consts["kv_memory_fraction"]), verifier_workers=int(consts["verifier_workers_per_gpu"]),
    )


def shape(cls: RLClass) -> rl.Shape:
    """A class's iteration in the model's symbols."""
    sc, ro, par = cls.scoring, cls.rollout, cls.parallelism
    return rl.Shape(
        params_b=cls.model_params_b, gpus=cls.gpus, rollout_gpus=cls.rollout_gpus, train_gpus=cls.train_gpus,
        disaggregated=cls.placement == "disaggregated", asynchronous=cls.mode == "async", staleness=cls.staleness,
        samples=ro.samples, prompt_tokens=ro.prompt_tokens, reference_model=sc.reference_model,
        reward_model_params_b=sc.reward_model_params_b if sc.reward == "model" else None,
        verifier_seconds_per_sample=sc.verifier_seconds, epochs=cls.update.epochs,
        minibatches=cls.update.minibatches, mfu=cls.update.mfu, kv_bytes_per_token=ro.kv_bytes_per_token,
        rollout_tp=ro.tensor_parallel, train_tp=par.tp if par else None, train_pp=par.pp if par else None,
        recompute_logprobs=cls.update.recompute_logprobs,
        decode_tokens_per_s_per_gpu=ro.decode_tokens_per_s_per_gpu, sequence_tokens_per_s=ro.sequence_tokens_per_s,
    )
