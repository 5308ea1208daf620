"""What a resolved pool and an RL class mean to the iteration model (``costsim.models.rl``): the
pool's GPUs and fabric as ``rl.Hardware``, the class as ``rl.Shape``. The work plans time
iterations with these, and ``costsim.plan.checks`` asks the model whether a class fits a pool."""

from __future__ import annotations

from costsim.catalog.load import Catalog, GPUSpec, default_catalog
from costsim.models import network, rl, weight_sync
from costsim.plan.options import CloudPlan, OwnedPlan
from costsim.scenario.classes import RLClass


def nvlink_domain_gpus(node_gpus: int, gpu: GPUSpec) -> int:
    """GPUs an NVLink domain of this option joins: a node or instance smaller than the catalog's
    node is its own (a slice of an HGX board); a whole node reaches the catalog's NVLink domain,
    a GB200 tray its 72-GPU rack ([A] the scheduler keeps a job's trays in one rack, as Slurm's
    block topology does on NVL72). The node stays the unit jobs are allocated in and failures
    take out (the plan's ``node_gpus``)."""
    if node_gpus < gpu.gpus_per_node:
        return node_gpus
    return max(node_gpus, gpu.nvlink_domain_gpus)


def hardware(plan: OwnedPlan | CloudPlan, catalog: Catalog | None = None) -> rl.Hardware:
    """What an option's GPUs and fabric mean for an iteration (``nvlink_domain_gpus``)."""
    gpu = plan.gpu
    # The plan's own constants (resolved with the scenario's pins); a plan built by hand has none.
    consts = plan.rl if plan.rl is not None else (catalog or default_catalog()).rl
    domain = nvlink_domain_gpus(plan.node_gpus, gpu)
    # A domain holds its GPUs' share of the catalog node's NICs (fewer in a smaller instance).
    nics = gpu.nics_per_node * domain / gpu.gpus_per_node
    inter = network.inter_node_busbw_gb_s(nics, gpu.nic_busbw_gb_s, gpu.nvlink_busbw_gb_s, plan.fabric_efficiency)
    return rl.Hardware(
        bf16_dense_tflops=gpu.bf16_dense_tflops, hbm_tb_s=gpu.hbm_tb_s, memory_gb=gpu.memory_gb,
        nvlink_gpus=domain, nvlink_busbw_gb_s=gpu.nvlink_busbw_gb_s, inter_busbw_gb_s=inter,
        nic_gb_s=gpu.nic_gb_s_per_gpu * plan.fabric_efficiency,
        mem_efficiency=float(consts["hbm_efficiency"]), step_floor_s=float(consts["decode_step_floor_s"]),
        kv_memory_fraction=float(consts["kv_memory_fraction"]), verifier_workers=int(consts["verifier_workers_per_gpu"]),
        fp8_dense_tflops=gpu.fp8_dense_tflops, engines=engines(consts), prefill_mfu=float(consts["prefill_mfu"]),
        optimizer_step_s=float(consts["optimizer_step_s"]), microbatch_s=float(consts["microbatch_s"]),
        microbatch_tokens=float(consts["microbatch_tokens"]),
        sync_methods={m: weight_sync.method_from_constants(m, consts) for m in weight_sync.METHOD_KEYS},
        tp_allreduce_latency_s=float(consts["tp_allreduce_latency_s"]),
        tp_allreduce_doubling_s=float(consts["tp_allreduce_doubling_s"]),
    )


def engines(consts: dict[str, float]) -> dict[str, tuple[float, float]]:
    """(η_mem, t_floor) per rollout engine from the RL constants: vLLM's are ``hbm_efficiency`` and
    ``decode_step_floor_s`` (the default engine), SGLang's carry the ``sglang_`` prefix."""
    return {"vllm": (float(consts["hbm_efficiency"]), float(consts["decode_step_floor_s"])),
            "sglang": (float(consts["sglang_hbm_efficiency"]), float(consts["sglang_decode_step_floor_s"]))}


def shape(cls: RLClass) -> rl.Shape:
    """A class's iteration in the model's symbols."""
    sc, ro, par, moe = cls.scoring, cls.rollout, cls.parallelism, cls.model
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
        engine=ro.engine, memory_fraction=ro.memory_fraction, rollout_precision=ro.precision,
        train_precision=cls.update.precision, sync_method=cls.sync.method, partial_rollout=ro.partial,
        active_params_b=moe.active_params_b if moe else None, experts=moe.experts if moe else 0,
        experts_per_token=moe.experts_per_token if moe else 0, expert_parallel=par.ep if par else None,
        layers=moe.layers if moe else None,
    )
