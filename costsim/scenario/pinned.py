"""The scenario's ``catalog:`` section: catalog values no option field holds, pinned by the scenario.

Most catalog defaults have a field of their own (``economics.*``, an option's price, capex, lead
time, billing, failures). What is left — a GPU type's specs, a fabric's efficiency, the RL model's
constants, and the on-demand prices unfinished work is priced at when no option rents — is pinned
here. Every null keeps the installed catalog's value. ``costsim.plan.resolved`` writes every value
a run used into these fields, so the written scenario gives the same numbers under any later catalog.
"""

from __future__ import annotations

from typing import Annotated, TypeAlias

from pydantic import Field

from costsim.scenario.base import StrictModel
from costsim.scenario.bounds import MAX_GPUS_PER_NODE, NodeGPUs, PricePerGPUHour, float_bounds, int_bounds, span

Spec: TypeAlias = Annotated[float, *float_bounds(gt=0, le=1e9)]  # a hardware figure (GB, TFLOP/s, TB/s, GB/s, kW): positive and finite
IdleKW: TypeAlias = Annotated[float, *float_bounds(ge=0, le=1e9)]
Efficiency: TypeAlias = Annotated[float, *float_bounds(gt=0, le=1)]
StepFloor: TypeAlias = Annotated[float, *float_bounds(ge=0, le=10)]
NICs: TypeAlias = Annotated[int, *int_bounds(ge=1, le=MAX_GPUS_PER_NODE)]
Workers: TypeAlias = Annotated[int, *int_bounds(ge=0, le=10_000)]
Seconds: TypeAlias = Annotated[float, *float_bounds(ge=0, le=3600)]  # a fixed cost or latency, seconds
Tokens: TypeAlias = Annotated[float, *float_bounds(ge=1, le=1e9)]
GBps: TypeAlias = Annotated[float, *float_bounds(gt=0, le=1e6)]


class TierPrices(StrictModel):
    """On-demand USD per GPU-hour per price tier: what unfinished work (and unmet serving) is priced
    at when no option of the scenario rents (``costsim.results.backlog``)."""

    hyperscaler: PricePerGPUHour | None = Field(None, description=f"USD per GPU-hour ({span(PricePerGPUHour)}); null: catalog.")
    neocloud: PricePerGPUHour | None = Field(None, description=f"USD per GPU-hour ({span(PricePerGPUHour)}); null: catalog.")


class GPUValues(StrictModel):
    """One GPU type's specs as the model reads them; every null keeps the catalog's."""

    memory_gb: Spec | None = Field(None, description=f"HBM per GPU, GB ({span(Spec)}); null: catalog.")
    bf16_dense_tflops: Spec | None = Field(None, description=f"Dense BF16 TFLOP/s per GPU ({span(Spec)}); null: catalog.")
    fp8_dense_tflops: Spec | None = Field(None, description=f"Dense FP8 TFLOP/s per GPU ({span(Spec)}); null: catalog.")
    hbm_tb_s: Spec | None = Field(None, description=f"HBM bandwidth per GPU, TB/s ({span(Spec)}); null: catalog.")
    gpus_per_node: NodeGPUs | None = Field(
        None, description=f"GPUs of the catalog's node, whose NICs a smaller node shares ({span(NodeGPUs)}); null: catalog.")
    nvlink_domain_gpus: NodeGPUs | None = Field(
        None, description=f"GPUs one NVLink domain joins: the node, or an NVL72 rack ({span(NodeGPUs)}); null: catalog.")
    nvlink_busbw_gb_s: Spec | None = Field(None, description=f"NVLink all-reduce bus bandwidth, GB/s ({span(Spec)}); null: catalog.")
    nics_per_node: NICs | None = Field(None, description=f"NICs per catalog node ({span(NICs)}); null: catalog.")
    nic_busbw_gb_s: Spec | None = Field(None, description=f"Bus bandwidth per NIC, GB/s ({span(Spec)}); null: catalog.")
    nic_gb_s_per_gpu: Spec | None = Field(
        None, description=f"Bus bandwidth one GPU reaches across nodes over its own NIC, GB/s ({span(Spec)}); null: catalog.")
    node_max_kw: Spec | None = Field(None, description=f"Node power at full load, kW ({span(Spec)}); null: catalog.")
    node_idle_kw: IdleKW | None = Field(None, description=f"Node power when idle, kW ({span(IdleKW)}); null: catalog.")
    on_demand: TierPrices | None = Field(None, description="On-demand prices per tier; null: catalog.")


class GPUTypes(StrictModel):
    """Pinned specs per catalog GPU type; null: the catalog's."""

    H100: GPUValues | None = Field(None, description="H100 specs; null: catalog.")
    H200: GPUValues | None = Field(None, description="H200 specs; null: catalog.")
    B200: GPUValues | None = Field(None, description="B200 specs; null: catalog.")
    A100: GPUValues | None = Field(None, description="A100 specs; null: catalog.")
    L40S: GPUValues | None = Field(None, description="L40S specs; null: catalog.")
    H20: GPUValues | None = Field(None, description="H20 specs; null: catalog.")
    H800: GPUValues | None = Field(None, description="H800 specs; null: catalog.")
    GB200: GPUValues | None = Field(None, description="GB200 (NVL72) specs; null: catalog.")
    MI300X: GPUValues | None = Field(None, description="MI300X specs; null: catalog.")


class FabricValues(StrictModel):
    """A fabric's share of the reference (InfiniBand) inter-node bandwidth."""

    efficiency: Efficiency | None = Field(None, description=f"Share of reference bandwidth ({span(Efficiency)}); null: catalog.")


class Fabrics(StrictModel):
    """Pinned fabric values; null: the catalog's."""

    infiniband: FabricValues | None = Field(None, description="InfiniBand; null: catalog.")
    roce: FabricValues | None = Field(None, description="RoCE; null: catalog.")


class RLValues(StrictModel):
    """The RL iteration model's constants (``costsim.models.rl``); every null keeps the catalog's."""

    hbm_efficiency: Efficiency | None = Field(
        None, description=f"Share of HBM bandwidth a decode step achieves ({span(Efficiency)}); null: catalog.")
    decode_step_floor_s: StepFloor | None = Field(
        None, description=f"Latency floor of one decode step, seconds ({span(StepFloor)}); null: catalog.")
    kv_memory_fraction: Efficiency | None = Field(
        None, description=f"Share of HBM for weights and KV cache ({span(Efficiency)}); null: catalog.")
    verifier_workers_per_gpu: Workers | None = Field(
        None, description=f"CPU verifier workers per GPU ({span(Workers)}); null: catalog.")
    sglang_hbm_efficiency: Efficiency | None = Field(
        None, description=f"SGLang's share of HBM bandwidth a decode step achieves ({span(Efficiency)}); null: catalog.")
    sglang_decode_step_floor_s: StepFloor | None = Field(
        None, description=f"SGLang's decode step latency floor, seconds ({span(StepFloor)}); null: catalog.")
    prefill_mfu: Efficiency | None = Field(
        None, description=f"Model FLOP utilisation of prompt prefill ({span(Efficiency)}); null: catalog.")
    optimizer_step_s: Seconds | None = Field(
        None, description=f"Fixed seconds per optimizer step ({span(Seconds)}); null: catalog.")
    microbatch_s: Seconds | None = Field(
        None, description=f"Fixed seconds per micro-batch pass ({span(Seconds)}); null: catalog.")
    microbatch_tokens: Tokens | None = Field(
        None, description=f"Tokens a micro-batch packs per GPU ({span(Tokens)}); null: catalog.")
    sync_nccl_latency_s: Seconds | None = Field(
        None, description=f"Seconds per transfer of an NCCL broadcast refit ({span(Seconds)}); null: catalog.")
    sync_nccl_efficiency: Efficiency | None = Field(
        None, description=f"Share of the path bandwidth an NCCL refit reaches ({span(Efficiency)}); null: catalog.")
    sync_checkpoint_engine_latency_s: Seconds | None = Field(
        None, description=f"Seconds per transfer of a checkpoint-engine refit ({span(Seconds)}); null: catalog.")
    sync_checkpoint_engine_efficiency: Efficiency | None = Field(
        None, description=f"Share of the path bandwidth a checkpoint engine reaches ({span(Efficiency)}); null: catalog.")
    sync_nixl_latency_s: Seconds | None = Field(
        None, description=f"Seconds per transfer of a NIXL refit ({span(Seconds)}); null: catalog.")
    sync_nixl_efficiency: Efficiency | None = Field(
        None, description=f"Share of the path bandwidth a NIXL refit reaches ({span(Efficiency)}); null: catalog.")
    sync_bucket_gb: GBps | None = Field(
        None, description=f"GB of weights a refit sends per transfer ({span(GBps)}); null: catalog. Not the "
        "packed refit (nccl_packed), whose buffers are 2 % of the GPU's memory, at most 5 GiB.")
    reload_gb_s: GBps | None = Field(
        None, description=f"GB/s at which a rollout engine loads received weights ({span(GBps)}); null: catalog.")
    tp_allreduce_latency_s: Seconds | None = Field(
        None, description=f"Seconds of a small all-reduce of a rollout tensor-parallel group across two NVLink "
        f"domains ({span(Seconds)}); null: catalog.")
    tp_allreduce_doubling_s: Seconds | None = Field(
        None, description=f"Seconds each doubling of the NVLink domains adds to it ({span(Seconds)}); null: catalog.")


class CatalogValues(StrictModel):
    """Catalog values the scenario pins (GPU specs, fabric efficiency, RL constants); null: the
    installed catalog's. ``costsim run --out`` writes the ones a run used into
    ``scenario.resolved.yaml``."""

    gpus: GPUTypes | None = Field(None, description="GPU specs per type; null: catalog.")
    fabrics: Fabrics | None = Field(None, description="Fabric efficiency per network; null: catalog.")
    rl: RLValues | None = Field(None, description="RL model constants; null: catalog.")
