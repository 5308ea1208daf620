"""Published figures against costsim (DESIGN.md section 13): the table in ``docs/validation.md``.

Every row is one published figure, the setting it was measured in and the band a test accepts
(``validation_rows``, ``validation_v3``), and the value costsim's own pure functions give for
that setting.

    python -m costsim.calibration.validation               # writes docs/validation.md (--out: elsewhere)
    python -m costsim.calibration.validation --calibrate   # the decode constants' grids, prints the best

The decode constants of each rollout engine are fitted once, to all of its rows together
(``validation_fit``); the calibration never edits the catalog.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from costsim.calibration import validation_fit as vf
from costsim.calibration import validation_gaps as gaps
from costsim.calibration import validation_rows as vr
from costsim.calibration import validation_v3 as v3
from costsim.catalog.load import Catalog, default_catalog

DOC = Path("docs") / "validation.md"  # relative to where it runs: `make validate` runs it from the repository


def band_text(row: vr.Row) -> str:
    """A row's band as the table shows it."""
    if row.band_text:
        return row.band_text
    if math.isinf(row.low):
        return "≤ " + row.fmt.format(row.high)
    if math.isinf(row.high):
        return "≥ " + row.fmt.format(row.low)
    return f"{row.fmt.format(row.low)} – {row.fmt.format(row.high)}"


def how_computed(cat: Catalog) -> list[str]:
    """The section that says how every kind of row is computed."""
    return [
        "## How the rows are computed",
        "",
        "- **Settings**: each row says what its source publishes, then every assumption the row rests on, "
        "marked [A]: the spread of response lengths and prompt lengths no source publishes, how a published "
        "layout maps onto the model's fields, and the class defaults the row keeps (the training MFU, the "
        "verifier's seconds a sample, the optimizer steps a batch where the source gives none).",
        "- **RL rows** call `rl.phase_times` on per-iteration length draws (`sampling.length_draws`, seed "
        f"{vr.SEED}, {vr.ITERATIONS} iterations of {vr.SAMPLES:,} responses for the AReaL and rollout-share "
        f"settings; seed {v3.SEED}, {v3.ITERATIONS} iterations of the row's own batch for the v3 rows). "
        "Speed-up = mean synchronous iteration ÷ mean asynchronous iteration over the same draws; decode per "
        "generating GPU = Σ response tokens ÷ (rollout GPUs × Σ rollout seconds); rollout share = Σ rollout ÷ "
        "Σ iteration. A published mean generated length is the capped mean: the row's lognormal is the one "
        "whose capped draws average it.",
        "- **Hardware**: catalog GPUs through `plan.hardware`, as an owned option would see them: H800 for "
        "AReaL (an H100 with NVLink busbw 200 GB/s, which also caps its node's cross-node busbw), H100 for "
        "NeMo RL and the rollout-share rows, H20 for verl.",
        "- **Bus bandwidth**: `network.inter_node_busbw_gb_s` of the catalog's H100 node (8 NICs × 47 GB/s × "
        "fabric efficiency, capped by NVLink); RoCE ÷ IB is the catalog's fabric efficiency.",
        f"- **Owned cost**: `economics` functions on catalog values for {vr.OWNED_GPUS:,} H100 over a fully busy "
        "year in service: capital as an annuity at cost_of_capital over the depreciation life, energy, "
        "colocation, maintenance, staff, and the one-time setup spread over the depreciation life; "
        "break-even utilisation = that ÷ the on-demand price (`economics.breakeven_utilization`). The "
        "published ≈ $1.6–1.9 spans straight-line (≈ $1.63) to an 8 % annuity (≈ $1.91); the band's upper "
        "end is read at the figure's one-decimal precision ($1.95), since the same section's ≈ 64 % × $2.99 "
        "and ≈ 28 % × $6.88 imply $1.91–1.93.",
        "- **v3 rows** (`costsim.calibration.validation_v3`): NeMo RL's GRPO steps on H100, dense and MoE, "
        "with the layouts of its table and the memory fraction and refit transport of its recipes; verl's 7B "
        "DAPO on H20; weight sync per model, rank count and method (verl's checkpoint-engine ablation on H20, "
        "NeMo RL's DeepSeek-V3 refit on H100). MoE models by total, active, experts, top-k and layers from "
        "their configs (Qwen3-30B-A3B 30.5B / 3.3B / 128 / 8 / 48, Qwen3-235B-A22B 235B / 22B / 128 / 8 / 94, "
        "DeepSeek-V3 671B / 37B / 256 / 8 / 61).",
        "- **Bands**: speed-ups, step and generation times ± 25 %, decode rates ×/÷ 1.6, weight sync ×/÷ 1.5, "
        "ranges as published; the ratio is against the published point or the middle of a published range.",
        "",
        "## Calibrated constants",
        "",
        "One set of catalog constants carries every RL row, never one per row. Decode per engine: vLLM "
        f"η_mem = {cat.rl['hbm_efficiency']:g} and t_floor = {cat.rl['decode_step_floor_s'] * 1000:g} ms "
        f"(`rl.hbm_efficiency`, `rl.decode_step_floor_s`), SGLang η_mem = {cat.rl['sglang_hbm_efficiency']:g} and "
        f"t_floor = {cat.rl['sglang_decode_step_floor_s'] * 1000:g} ms (`rl.sglang_*`); prefill at "
        f"`rl.prefill_mfu` {cat.rl['prefill_mfu']:g}; training fixed costs `rl.optimizer_step_s` "
        f"{cat.rl['optimizer_step_s']:g} s a step and `rl.microbatch_s` {cat.rl['microbatch_s']:g} s a micro-batch "
        f"of `rl.microbatch_tokens` {cat.rl['microbatch_tokens']:,.0f}; weight sync `rl.sync_*` (NCCL "
        f"{cat.rl['sync_nccl_latency_s'] * 1000:g} ms a transfer at {cat.rl['sync_nccl_efficiency']:g} of the path, "
        f"checkpoint engine {cat.rl['sync_checkpoint_engine_latency_s'] * 1000:g} ms at "
        f"{cat.rl['sync_checkpoint_engine_efficiency']:g}, NIXL {cat.rl['sync_nixl_latency_s'] * 1000:g} ms at "
        f"{cat.rl['sync_nixl_efficiency']:g}). `python -m costsim.calibration.validation --calibrate` searches "
        "SGLang's η_mem ∈ {0.40, 0.45, …, 0.75} × t_floor ∈ {4, 5, …, 14} ms against the AReaL and "
        "rollout-share rows, and vLLM's η_mem ∈ {0.30, 0.35, …, 0.50} × t_floor ∈ {8, 10, 12, 14} ms against "
        "every carried NeMo RL and verl row, each for the pair whose worst row is closest to its figure, and "
        "prints them beside the catalog's scores. The weight-sync constants were set once against verl's "
        "ablation (NCCL and checkpoint engine, latency and efficiency, then held); NIXL takes the checkpoint "
        "engine's, since NeMo RL's NIXL refit is its checkpoint-engine interface, and with them carries NeMo "
        "RL's DeepSeek-V3 NIXL row without a constant of its own; its NCCL refit packs tensors into buffers "
        "(`sync.method: nccl_packed`: NeMo RL's buffers of 2 % of GPU memory, at most 5 GiB), which takes "
        "NCCL's constants, one latency a buffer, without a constant of its own; but that it leaves the sender's "
        "node through every NIC of it, not the sender's own, is an assumption with no source (NeMo RL's refit "
        "group holds one trainer rank) chosen on its DeepSeek-V3 NCCL row, which is therefore in sample for it: "
        "that row is what the assumption was chosen on (its setting gives the time through one NIC). A rollout "
        "replica whose tensor parallelism spans NVLink domains all-reduces twice a layer every decode step at "
        f"the latency NCCL's tuning model gives a small tree all-reduce (`rl.tp_allreduce_latency_s` "
        f"{cat.rl['tp_allreduce_latency_s'] * 1e6:g} µs across two domains, `rl.tp_allreduce_doubling_s` "
        f"{cat.rl['tp_allreduce_doubling_s'] * 1e6:g} µs more a doubling), sourced, not fitted: LL's latency "
        "with the bytes at the full bus bandwidth, a lower bound for a batched step's all-reduce, and it "
        "carries none of the rows across nodes (see above). A refit loads every expert tensor on every "
        "receiving rank (tensor parallelism shares the bytes, not the tensors: NeMo RL counts 45,395 a vLLM "
        "rank of DeepSeek-V3), 3 a routed expert a layer, with the layers from the model's config. What "
        "bends training with more GPUs is structure, not a constant: a micro-batch packs TP · PP GPUs' worth "
        "of tokens, and the data-parallel rank holding an optimizer step's longest sequence sets the step "
        "(`training.imbalance`), so `rl.optimizer_step_s` is a small sourced figure (0 to 2.5 s were "
        "checked: 0.1 is as good as none). Everything else is a datasheet figure, a configuration or a "
        "stated assumption.",
        "",
    ]


def markdown(table: list[vr.Row], catalog: Catalog | None = None, uncarried: list[vr.Row] | None = None) -> str:
    """docs/validation.md: the table, the rows not yet carried, and how they are computed."""
    cat = catalog or default_catalog()
    others = vr.uncarried_rows(cat) if uncarried is None else uncarried
    lines = [
        "# Validation: published figures against costsim",
        "",
        "Generated by `make validate` (`python -m costsim.calibration.validation`); do not edit by hand. "
        "`tests/calibration/test_published_validation.py` asserts every row within its band and that this file is what the "
        "generator writes now.",
        "",
        "| # | figure | setting | source | published | band (test) | simulated | ratio | pass |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(table, 1):
        ratio = "—" if r.ratio is None else f"{r.ratio:.2f}"
        lines.append(f"| {i} | {r.figure} | {r.setting} | {r.source} | {r.published_text} | {band_text(r)} | "
                     f"{r.fmt.format(r.simulated)} | {ratio} | {'pass' if r.passed else 'FAIL'} |")
    lines += [
        "",
        f"{sum(r.passed for r in table)} of {len(table)} rows pass. Worst AReaL or rollout-share row "
        f"(|log(simulated ÷ published)|, band rows by their distance to the band): {vf.score(table):.3f}.",
        "",
        "## Not yet carried (out of sample, not asserted)",
        "",
        f"{len(others)} published v3 figures the one set of constants does not bring within their bands; "
        "they are computed the same way and shown so the gap stays visible, each with why it is not carried.",
        "",
        "| figure | setting | source | published | band | simulated | ratio | why not carried |",
        "|---|---|---|---|---|---|---|---|",
        *(f"| {r.figure} | {r.setting} | {r.source} | {r.published_text} | {band_text(r)} | "
          f"{r.fmt.format(r.simulated)} | {r.ratio:.2f} | {gaps.NOT_CARRIED.get(r.key, '')} |" for r in others),
        "",
        *how_computed(cat),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calibrate", action="store_true", help="print each engine's grid best (η_mem, t_floor) and exit")
    ap.add_argument("--out", type=Path, default=DOC, help=f"the Markdown file to write (default: {DOC})")
    args = ap.parse_args(argv)
    cat = default_catalog()
    if args.calibrate:
        for engine, prefix, fit, now_of in (("SGLang", "sglang_", vf.calibrate, vf.rl_score),
                                            ("vLLM", "", vf.calibrate_vllm, vf.vllm_score)):
            (eta, floor), best, _ = fit(cat)
            given = (float(cat.rl[f"{prefix}hbm_efficiency"]), float(cat.rl[f"{prefix}decode_step_floor_s"]))
            now = now_of(*given, cat)
            print(f"{engine} grid best: hbm_efficiency {eta:.2f}, decode_step_floor_s {floor:.3f} (score {best:.4f}, "
                  f"worst ratio ×/÷ {math.exp(best):.3f}); catalog {given[0]:g}, {given[1]:g} (score {now:.4f}, "
                  f"worst ratio ×/÷ {math.exp(now):.3f})")
        return
    table = vr.rows(cat)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(markdown(table, cat), encoding="utf-8")
    failed = [r.key for r in table if not r.passed]
    print(f"wrote {args.out}: {len(table) - len(failed)} of {len(table)} rows pass" + (f"; FAIL: {', '.join(failed)}"
                                                                                 if failed else ""))


if __name__ == "__main__":
    main()
