"""The optimize frontier table in a narrow terminal: the names that say what a row is stay whole."""
from types import SimpleNamespace

import pandas as pd
from rich.console import Console

from costsim.cli.optimize import frontier_table


def test_a_narrow_terminal_never_cuts_an_option_name_or_a_path_part():
    frontier = pd.DataFrame({
        "options.own-256.gpus": [256.0, 640.0], "option": ["own-256", "cloud-od-neocloud"],
        "fair_total_usd": [4_573_923.0, 10_500_000.0], "total_cost_usd": [4_540_108.0, 10_490_000.0],
        "cash_spent_usd": [13_371_215.0, 26_000_000.0], "queue_delay_p95_h": [260.1, 2.7],
        "completion": [0.995, 1.0], "meets": [False, True], "on_frontier": [True, True]})
    optimum = SimpleNamespace(values={"options.own-256.gpus": (256, 640)}, frontier=frontier)
    console = Console(width=100, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(frontier_table(optimum, "frontier"))
    lines = console.export_text().splitlines()
    text = "\n".join(lines)
    assert max(map(len, lines)) <= 100
    for whole in ("cloud-od-neocloud", "own-256", "options.", "own-256.", "gpus", "$10,500,000", "260.10",
                  "done", "99.5", "meets", "yes"):
        assert any(whole in line for line in lines), (whole, text)
