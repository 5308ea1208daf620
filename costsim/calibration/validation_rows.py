"""The rows of docs/validation.md (DESIGN.md section 13): each a published figure, the setting it
was measured in and what costsim's own pure functions give there (``rl.phase_times``,
``network``, ``economics`` and the shipped catalog, through ``plan.hardware`` as an option would
see it). A setting says what the source publishes, then each assumption marked [A].
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from costsim.calibration import validation_gaps as gaps
from costsim.calibration import validation_v3 as v3
from costsim.catalog.load import Catalog, GPUSpec, default_catalog
from costsim.models import economics as eco
from costsim.models import rl, sampling
from costsim.plan.hardware import hardware
from costsim.plan.options import OwnedPlan
from costsim.scenario.classes import DEFAULT_VERIFIER_SECONDS, Update
from costsim.units import HOURS_PER_YEAR

SEED, ITERATIONS = 2026, 100  # the same length draws for every setting and every grid point
SAMPLES = 512 * 16  # prompts × samples per prompt, every RL setting below
AREAL_FRACTIONS = (1 / 2, 9 / 16, 5 / 8, 11 / 16, 3 / 4)  # 7B: rollout shares tried (AReaL balances them)
OWNED_GPUS = 1024  # cluster the owned $/GPU-hour is worked for (only the one-time setup depends on it)
# Length settings (mean, cv, cap in tokens): AReaL's long-CoT math, and the two rollout-share settings.
AREAL_LENGTHS = (8000.0, 0.8, 27_648.0)
SHARE_32B_LENGTHS = (5000.0, 0.8, 20_480.0)
SHARE_7B_LENGTHS = (4000.0, 0.8, 16_384.0)

AREAL = "AReaL (Fu et al. 2025, arXiv 2505.24298)"
NCCL = "nccl-tests on 8 × 400G IB H100 nodes (NVIDIA/nccl-tests#290)"


@dataclass(frozen=True)
class Row:
    """One published figure and what costsim gives in its setting. ``published`` is the figure
    the ratio is taken against (a point, or the middle of a published range; None: a rule);
    the test accepts ``low ≤ simulated ≤ high``. ``score``: how calibration weighs the row —
    "point" (distance to ``published``), "band" (distance to the band) or None (not an RL fit)."""

    key: str
    figure: str
    setting: str
    source: str
    published_text: str
    published: float | None
    low: float
    high: float
    simulated: float
    fmt: str = "{:.3g}"
    score: str | None = None
    band_text: str | None = None  # how to show the band when the format would hide it

    @property
    def ratio(self) -> float | None:
        return None if not self.published else self.simulated / self.published

    @property
    def passed(self) -> bool:
        return self.low <= self.simulated <= self.high


def within(published: float, rel: float) -> tuple[float, float]:
    """Band of ± ``rel`` around a figure."""
    return published * (1 - rel), published * (1 + rel)


def times_or_over(published: float, factor: float) -> tuple[float, float]:
    """Band of ×/÷ ``factor`` around a figure."""
    return published / factor, published * factor


def fraction_text(f: float) -> str:
    return str(Fraction(f).limit_denominator(16))


def gpu_hardware(gpu: GPUSpec, network: str = "infiniband", catalog: Catalog | None = None) -> rl.Hardware:
    """What an owned option of this GPU on this fabric gives an iteration (``workplan.hardware``)."""
    cat = catalog or default_catalog()
    plan = OwnedPlan(name="validation", gpu=gpu, gpus=gpu.gpus_per_node, gpus_per_node=gpu.gpus_per_node, nodes=1,
                     network=network, fabric_efficiency=float(cat.fabrics[network]["efficiency"]), lead_time_h=0.0,
                     scheduler="fifo", capex_usd=0.0)
    return hardware(plan, cat)


def h800(catalog: Catalog | None = None) -> rl.Hardware:
    """AReaL's H800 as the catalog has it: an H100 (80 GB, 989 TFLOP/s, 3.35 TB/s, one 400G NIC
    a GPU) whose NVLink busbw is about 200 GB/s (NVLink 400 GB/s against H100's 900)."""
    cat = catalog or default_catalog()
    return gpu_hardware(cat.gpus["H800"], catalog=cat)


@functools.cache
def draws(mean: float, cv: float, cap: float) -> sampling.LengthDraws:
    """Per-iteration Σ L, max L and Σ L² of ``SAMPLES`` capped lognormal lengths, fixed seed."""
    return sampling.length_draws(np.random.default_rng(SEED), SAMPLES, mean, cv, cap, ITERATIONS)


def rl_shape(params_b: float, gpus: int, rollout_gpus: int | None = None, staleness: int = 0,
             reference_model: bool = False, engine: str = "sglang") -> rl.Shape:
    """A GRPO-style class: 512 prompts × 16 samples of 512-token prompts, verifier reward, 4
    minibatches, 1 epoch, the class default MFU, log-probs recomputed. ``rollout_gpus`` None:
    colocated synchronous on all ``gpus``; else disaggregated asynchronous with ``staleness``."""
    asynchronous = rollout_gpus is not None
    return rl.Shape(
        params_b=params_b, gpus=gpus, rollout_gpus=rollout_gpus or gpus,
        train_gpus=gpus - rollout_gpus if rollout_gpus is not None else gpus, disaggregated=asynchronous,
        asynchronous=asynchronous, staleness=max(staleness, 1), samples=SAMPLES, prompt_tokens=512.0,
        reference_model=reference_model, reward_model_params_b=None,
        verifier_seconds_per_sample=DEFAULT_VERIFIER_SECONDS, epochs=1, minibatches=4,
        mfu=Update.model_fields["mfu"].default, recompute_logprobs=True, engine=engine,
    )


def phases(sh: rl.Shape, hw: rl.Hardware, d: sampling.LengthDraws) -> rl.PhaseTimes:
    return rl.phase_times(sh, hw, d.length_sum, d.length_max, d.length_sq_sum)


def async_run(params_b: float, gpus: int, rollout_gpus: int, staleness: int, hw: rl.Hardware,
              d: sampling.LengthDraws, sync_mean_s: float) -> tuple[float, float, float]:
    """(speed-up, decode tokens/s per generating GPU, mean async iteration s): speed-up is the
    mean sync iteration ÷ the mean async one over the same draws; decode is Σ L ÷ (rollout GPUs
    × Σ rollout seconds) over all iterations."""
    pt = phases(rl_shape(params_b, gpus, rollout_gpus, staleness), hw, d)
    mean = float(pt.total.mean())
    return sync_mean_s / mean, float(d.length_sum.sum() / (rollout_gpus * pt.rollout.sum())), mean


def areal_rows(hw: rl.Hardware, plateau: bool = True) -> list[Row]:
    """AReaL's 1.5B (16 nodes) and 7B (24 nodes) settings on H800: speed-ups and decode rates."""
    d = draws(*AREAL_LENGTHS)
    base = ("R1-Distill-Qwen-{p}, {g} H800, 512 prompts × 16, max_new_tokens 27,648, SGLang, no reference model "
            "(kl_ctl 0); sync: colocated on all {g}; async: {r} generating")
    assumed = ("prompts 512 tokens (the configs allow up to 1,024)", "lengths lognormal mean 8,000 cv 0.8 capped at "
               "27,648 (long chain-of-thought math)", "4 optimizer steps a batch", "verifier reward 0.05 s a sample",
               "training at the class default MFU 0.35")
    sync15 = float(phases(rl_shape(1.5, 128), hw, d).total.mean())
    su = {s: async_run(1.5, 128, 96, s, hw, d, sync15) for s in ((1, 8, 16, 32) if plateau else (1, 8))}
    s15 = base.format(p="1.5B", g=128, r="96 (3/4)")
    a15 = (v3.default_layout(rl_shape(1.5, 128), hw), *assumed)
    lo, hi = within(2.77, 0.25)
    rows = [Row("areal_1.5b_speedup_s8", "async ÷ sync speed-up, staleness 8", v3.setting(s15 + ", staleness 8", *a15),
                AREAL, "2.77×", 2.77, lo, hi, su[8][0], "{:.2f}×", "point")]
    lo, hi = within(2.1, 0.25)
    rows.append(Row("areal_1.5b_speedup_s1", "async ÷ sync speed-up, staleness 1",
                    v3.setting(s15 + ", staleness 1", *a15), AREAL + ", staleness ablation", "≈ 2.1×", 2.1, lo, hi,
                    su[1][0], "{:.2f}×", "point"))
    if plateau:
        rows.append(Row("areal_1.5b_plateau", "speed-up levels off past staleness 8: max(s = 16, s = 32) − s = 8",
                        v3.setting(s15 + ", staleness 8, 16, 32", *a15), AREAL + ", staleness ablation",
                        "no further gain", None, -math.inf, 1e-9, max(su[16][0], su[32][0]) - su[8][0], "{:+.3f}",
                        band_text="≤ +1e-9"))
        rows.append(Row("areal_1.5b_staleness_helps", "more staleness is never slower: speed-up s = 8 − s = 1",
                        v3.setting(s15 + ", staleness 1 and 8", *a15), AREAL, "2.77× > 2.1×", None, 0.0, math.inf,
                        su[8][0] - su[1][0], "{:+.2f}"))
    lo, hi = times_or_over(7200.0, 1.6)
    rows.append(Row("areal_1.5b_decode", "decode tokens/s per generating GPU, staleness 8",
                    v3.setting(s15 + ", staleness 8; rollout seconds, re-prefill excluded", *a15), AREAL, "≈ 7.2k",
                    7200.0, lo, hi, su[8][1], "{:,.0f}", "point"))

    sync7 = float(phases(rl_shape(7.0, 192), hw, d).total.mean())
    runs = {f: async_run(7.0, 192, round(192 * f), 8, hw, d, sync7) for f in AREAL_FRACTIONS}
    frac = min(AREAL_FRACTIONS, key=lambda f: runs[f][2])  # AReaL balances rollout and training workers
    s7 = base.format(p="7B", g=192, r=round(192 * frac)) + ", staleness 8"
    split = (f"{round(192 * frac)} generating: the fastest split of "
             f"{', '.join(fraction_text(f) for f in AREAL_FRACTIONS)} (AReaL balances rollout and training workers)",
             v3.default_layout(rl_shape(7.0, 192), hw))
    lo, hi = within(2.27, 0.25)
    rows.append(Row("areal_7b_speedup", "async ÷ sync speed-up, staleness 8", v3.setting(s7, *split, *assumed), AREAL,
                    "2.27×", 2.27, lo, hi, runs[frac][0], "{:.2f}×", "point"))
    lo, hi = times_or_over(4060.0, 1.6)
    rows.append(Row("areal_7b_decode", "decode tokens/s per generating GPU, staleness 8",
                    v3.setting(s7 + "; rollout seconds, re-prefill excluded", *split, *assumed), AREAL, "≈ 4.06k",
                    4060.0, lo, hi, runs[frac][1], "{:,.0f}", "point"))
    return rows


def rollout_share(params_b: float, gpus: int, lengths: tuple[float, float, float], hw: rl.Hardware) -> float:
    """Share of a colocated synchronous iteration spent in rollout: Σ rollout ÷ Σ iteration."""
    pt = phases(rl_shape(params_b, gpus, reference_model=True, engine="vllm"), hw, draws(*lengths))  # OpenRLHF: vLLM
    return float(pt.rollout.sum() / pt.total.sum())


def share_rows(hw: rl.Hardware) -> list[Row]:
    """Rollout share of a synchronous GRPO step on long chain-of-thought, 32B and 7B on H100s."""
    src = "OpenRLHF README (“80 % of time in generation”); RollPacker (≈ 70 %)"
    def text(p: float, g: int, lengths: tuple[float, float, float]) -> str:
        return v3.setting("long chain-of-thought GRPO, synchronous (the sources give a share, not a setting)",
                          f"{p:g}B policy (Qwen2.5-{p:g}B-like, DAPO-style) on {g} H100 colocated, vLLM",
                          "512 prompts × 16 of 512 tokens",
                          f"lengths lognormal mean {lengths[0]:,.0f} cv {lengths[1]:g} capped at {lengths[2]:,.0f}",
                          v3.default_layout(rl_shape(p, g, reference_model=True, engine="vllm"), hw),
                          "reference model on, verifier reward 0.05 s a sample", "4 optimizer steps a batch",
                          "training at the class default MFU 0.35")

    return [
        Row("rollout_share_32b", "rollout share of a synchronous iteration", text(32.0, 128, SHARE_32B_LENGTHS), src,
            "60–80 %", 0.70, 0.60, 0.80, rollout_share(32.0, 128, SHARE_32B_LENGTHS, hw), "{:.1%}", "band"),
        Row("rollout_share_7b", "rollout share of a synchronous iteration", text(7.0, 64, SHARE_7B_LENGTHS), src,
            "60–80 %", 0.70, 0.60, 0.80, rollout_share(7.0, 64, SHARE_7B_LENGTHS, hw), "{:.1%}", "band"),
    ]


def rl_rows(hw_h800: rl.Hardware, hw_h100: rl.Hardware, plateau: bool = True) -> list[Row]:
    return areal_rows(hw_h800, plateau) + share_rows(hw_h100)


def network_rows(cat: Catalog) -> list[Row]:
    """Cross-node all-reduce busbw of H100 nodes with 8 × 400G NICs, InfiniBand and RoCE."""
    h100 = cat.gpus["H100"]
    ib = gpu_hardware(h100, "infiniband", cat).inter_busbw_gb_s
    roce = gpu_hardware(h100, "roce", cat).inter_busbw_gb_s
    return [
        Row("busbw_ib", "all-reduce bus bandwidth across nodes (GB/s)", "H100 nodes, 8 × 400G InfiniBand each "
            "(catalog)", NCCL, "≈ 350–380", 365.0, 250.0, 450.0, ib, "{:.0f}"),
        Row("roce_vs_ib", "RoCE ÷ InfiniBand bus bandwidth (a catalog constant restated)",
            "the same nodes on tuned RoCE (catalog fabrics)",
            "tuned RoCEv2 reaches 85–95 % of IB (NVIDIA/nccl#2409; Meta SIGCOMM '24)", "0.85–0.95", 0.90, 0.85, 0.95,
            roce / ib, "{:.2f}"),
    ]


def default_rows(cat: Catalog) -> list[Row]:
    """Defaults with a published range: training MFU and node failures."""
    fails = float(cat.reliability["node_failures_per_1000_node_days"])
    return [
        Row("mfu_default", "training MFU (RL class default update.mfu)", "H100/H800 bf16, dense",
            "AReaL 388–455 TFLOP/s on H800 (0.39–0.46); Llama 3 38–43 %; band 35–46 %, "
            "the default at its conservative end", "38–46 %", 0.42, 0.35, 0.46,
            float(Update.model_fields["mfu"].default), "{:.0%}"),
        Row("node_failures", "node interruptions per 1,000 node-days (catalog default)",
            "Llama 3 405B pre-training, 2,048 H100 nodes, 54 days",
            "Meta, The Llama 3 Herd of Models (2024): 419 unexpected interruptions",
            "419 / (2,048 × 54) × 1,000 = 3.79", 419 / (2048 * 54) * 1000, 3.0, 4.6, fails, "{:.2f}"),
    ]


def owned_usd_per_gpu_hour(cat: Catalog, gpus: int = OWNED_GPUS, gpu: str = "H100",
                           network: str = "infiniband") -> float:
    """An owned cluster's cost per GPU-hour over a fully busy year in service, catalog economics:
    capital (annuity at cost_of_capital), energy, colocation, maintenance and staff for a year,
    plus the one-time setup spread over the depreciation life."""
    e, g, f = cat.economics, cat.gpus[gpu], cat.fabrics[network]
    nodes, h = gpus // g.gpus_per_node, HOURS_PER_YEAR
    capex = eco.owned_capex_usd(gpus, g.server_price_usd / g.gpus_per_node, f["capex_frac"],
                                e["storage_capex_frac"], e["install_capex_frac"])
    year = (eco.annual_capital_cost_usd(capex, e["residual_value_frac"], e["depreciation_years"], e["cost_of_capital"])
            + eco.energy_cost_usd(eco.it_energy_kwh(nodes, g.node_idle_kw, g.node_max_kw, g.gpus_per_node, h, gpus * h),
                                  e["pue"], e["electricity_usd_per_kwh"])
            + eco.facility_cost_usd(nodes, g.node_max_kw, e["colo_usd_per_kw_month"], h)
            + eco.maintenance_cost_usd(capex, e["maintenance_frac_per_year"], h)
            + eco.staff_cost_usd(gpus, e["gpus_per_fte"], e["staff_usd_per_fte_year"], h, min_fte=e["staff_min_fte"])
            + e["setup_usd"] / e["depreciation_years"])
    return year / (gpus * h)


def cost_rows(cat: Catalog) -> list[Row]:
    """Owned H100 $/GPU-hour at full use and its break-even utilisation against two rentals."""
    own = owned_usd_per_gpu_hour(cat)
    neo, hyper = (cat.gpus["H100"].price[t]["on_demand"] for t in ("neocloud", "hyperscaler"))
    setting = (f"{OWNED_GPUS:,} H100 on InfiniBand, catalog economics (5-year life, 8 % annuity), a fully busy year")
    hand = "hand calculation from the catalog's economics"
    return [
        Row("owned_usd_per_gpu_hour", "owned H100 cost per GPU-hour at full use ($)", setting, hand, "≈ 1.6–1.9",
            1.75, 1.6, 1.95, own, "{:.3f}"),
        Row("breakeven_neocloud", f"break-even utilisation against ${neo:.2f} (neocloud on-demand)", setting, hand,
            "≈ 64 %", 0.64, 0.55, 0.75, eco.breakeven_utilization(own, neo), "{:.1%}"),
        Row("breakeven_hyperscaler", f"break-even utilisation against ${hyper:.2f} (hyperscaler on-demand)", setting,
            hand, "≈ 28 %", 0.28, 0.22, 0.34, eco.breakeven_utilization(own, hyper), "{:.1%}"),
    ]


def rows(catalog: Catalog | None = None) -> list[Row]:
    """The whole table with the catalog's constants."""
    cat = catalog or default_catalog()
    carried = [r for r in v3.v3_rows(cat, gpu_hardware, Row) if r.key not in gaps.NOT_CARRIED]
    return (rl_rows(h800(cat), gpu_hardware(cat.gpus["H100"], catalog=cat)) + carried
            + network_rows(cat) + default_rows(cat) + cost_rows(cat))


def uncarried_rows(catalog: Catalog | None = None) -> list[Row]:
    """The v3 rows the constants do not yet carry within their bands (shown, not asserted)."""
    cat = catalog or default_catalog()
    return [r for r in v3.v3_rows(cat, gpu_hardware, Row) if r.key in gaps.NOT_CARRIED]

