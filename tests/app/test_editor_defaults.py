"""The editor's new options follow the shipped scenarios' conventions (costsim.dashboard.editor_ops):
every kind added to every shipped scenario validates; a new owned cluster or reservation queues
as that scenario's owned and reserved options do (backfill in the baseline, FIFO in the SLURM
replay), and as every shipped reservation does (backfill) where there is none to match; rented and
hybrid options keep the pricing tier and waiting policy the shipped files use. The conventions
are read from the YAML files themselves, not from costsim's models."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from paths import SHIPPED

import costsim
from costsim.dashboard import editor_ops as ops
from costsim.scenario import parse_yaml

SCENARIOS = sorted(SHIPPED.glob("*.yaml"))


def raw_options(path: Path) -> list[dict]:
    """The options as the file writes them (fields left out are absent)."""
    data, _ = parse_yaml(path.read_text(), str(path))
    return list(data["options"])


def queues(option: dict) -> bool:
    return option["kind"] == "owned" or (option["kind"] == "cloud" and option.get("pricing") == "reserved")


def scheduler_written(option: dict) -> str:
    return option.get("scheduler") or "fifo"  # left out: the schema's default for both kinds


def loaded(path: Path) -> dict:
    return costsim.load_scenario(path).model_dump(mode="json")


def test_the_shipped_files_have_one_reservation_convention():
    reserved = [o for p in SCENARIOS for o in raw_options(p) if o["kind"] == "cloud" and o.get("pricing") == "reserved"]
    assert reserved and {scheduler_written(o) for o in reserved} == {"backfill"}
    assert {o.get("placement", "best_fit") for p in SCENARIOS for o in raw_options(p)} == {"best_fit"}


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
@pytest.mark.parametrize("kind", ops.KINDS)
def test_a_new_option_of_every_kind_validates_and_queues_as_the_file_does(path, kind):
    data = loaded(path)
    out, i = ops.add_option(data, kind)
    new = out["options"][i]
    if queues(new):
        written = {scheduler_written(o) for o in raw_options(path) if queues(o)}
        expected = written.pop() if len(written) == 1 else "backfill"
        assert (new["scheduler"], new["placement"]) == (expected, "best_fit")
    scenario, errors = ops.validate(out, path.parent)
    if errors and all("could never run" in m for m in errors.values()):
        pytest.skip(f"{path.stem}'s jobs are larger than a new {ops.NEW_OPTION_GPUS}-GPU option")
    assert errors == {} and scenario is not None
    assert scenario.options[i].name == new["name"]


def test_the_baseline_and_the_slurm_replay():
    """By hand: the baseline's clusters backfill, so a reservation added to it does too (it ran FIFO
    before); the SLURM replay is FIFO throughout, so a cluster added to it is FIFO."""
    base = ops.add_option(loaded(SCENARIOS[0].parent / "baseline.yaml"), "reserved")[0]["options"][-1]
    assert base["scheduler"] == "backfill"
    slurm = ops.add_option(loaded(SCENARIOS[0].parent / "slurm-lab.yaml"), "owned")[0]["options"][-1]
    assert slurm["scheduler"] == "fifo"


def test_with_nothing_to_match_the_shipped_reservations_convention():
    data = loaded(SCENARIOS[0].parent / "baseline.yaml")
    data["options"] = [o for o in data["options"] if o["kind"] == "cloud"]
    reserved = {scheduler_written(o) for p in SCENARIOS for o in raw_options(p)
                if o["kind"] == "cloud" and o.get("pricing") == "reserved"}
    for kind in ("owned", "reserved"):
        out, i = ops.add_option(data, kind)
        assert {out["options"][i]["scheduler"]} == reserved
        assert ops.validate(out, SCENARIOS[0].parent)[1] == {}
    mixed = loaded(SCENARIOS[0].parent / "baseline.yaml")
    mixed["options"][1]["scheduler"] = "sjf"  # the clusters disagree: the convention decides
    assert ops.add_option(mixed, "owned")[0]["options"][-1]["scheduler"] == "backfill"


def test_rented_and_hybrid_options_keep_the_shipped_tier_and_waiting_policy():
    options = [o for p in SCENARIOS for o in raw_options(p)]
    data = loaded(SCENARIOS[0].parent / "baseline.yaml")
    tiers = {o.get("price_tier", "neocloud") for o in options if o["kind"] == "cloud"}
    for kind in ("on_demand", "spot", "reserved"):
        assert {ops.new_option(data, kind)[0]["price_tier"]} == tiers
    policies = Counter(o.get("wait_policy", "constant") for o in options if o["kind"] == "hybrid")
    assert ops.new_option(data, "hybrid")[0]["wait_policy"] == policies.most_common(1)[0][0]
