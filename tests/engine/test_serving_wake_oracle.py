"""The cluster's looks on the hour under serving against an oracle: the same scenarios run again
with the hourly look every hour while jobs wait (the engine's rule before it looked only on the
hours its last pass named). Extra looks can only add passes that, by the engine's claim, start
nothing, so equal job tables mean no pass that would start a job was skipped: in a fleet of two
owned pools and a burst, on a cluster of tranches with a lease given back, and under backfill,
each with node failures and a daily swing of serving."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers import cloud, owned, scenario

import costsim
from costsim.engine import owned as owned_engine
from costsim.engine.events import ARRIVAL, At

SERVING = {"gpus": {"base": 4, "diurnal_amplitude": 0.5, "growth_per_year": 3.0}, "priority": True}
FAILING = {"node_failures_per_1000_node_days": 50, "repair_hours": 7.5}


def hourly_looks(monkeypatch) -> None:
    """Every owned cluster with serving also looks every whole hour while jobs wait."""
    real = owned_engine.OwnedCluster.__init__

    def init(self, *args, **kwargs):
        real(self, *args, **kwargs)
        if self.serving is None:
            return

        def tick(_e):
            if self.waiting:
                self.decider.request()
            At(self.env, 1.0, ARRIVAL, tick)

        At(self.env, 1.0, ARRIVAL, tick)

    monkeypatch.setattr(owned_engine.OwnedCluster, "__init__", init)


def rows(seed: int, n: int = 160, days: float = 12.0) -> list[tuple[float, int, float]]:
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, days * 24, n))
    if seed % 2:  # whole hours: ties between ends, looks and starts
        submit = np.floor(submit)
    return list(zip(submit.tolist(), rng.choice([1, 2, 4, 8], n).tolist(),
                    np.round(rng.lognormal(1.2, 1.0, n) + 0.1, 2).tolist(), strict=True))


def options(case: str) -> list[dict]:
    if case == "fleet":
        return [owned("a", gpus=24, gpus_per_node=8, scheduler="backfill", failures=FAILING),
                owned("b", gpus=16, gpus_per_node=8, scheduler="fifo", failures=FAILING), cloud(),
                {"name": "fleet", "kind": "fleet",
                 "parts": [{"option": "a"}, {"option": "b"}, {"option": "cloud", "max_wait_h": 6}]}]
    if case == "lease":
        # leased from day 2 for a month: given back on day 32 of the 40
        lease = {"gpus": 8, "order_day": 2, "payment": "lease", "lease_term_months": 1, "lease_rate_per_year": 0.0}
        own = owned("own", gpus_per_node=8, scheduler="backfill", failures=FAILING, tranches=[{"gpus": 16}, lease])
        del own["gpus"]  # the tranches' total
        return [own,
                cloud(), {"name": "hyb", "kind": "hybrid", "base": "own", "burst": "cloud", "max_wait_h": 8}]
    return [owned("own", gpus=24, gpus_per_node=8, scheduler=case, failures=FAILING)]


@pytest.mark.parametrize("case", ["fleet", "lease", "backfill", "fifo"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_same_jobs_as_with_a_look_every_hour(tmp_path, monkeypatch, case, seed):
    days = 36.0 if case == "lease" else 12.0
    sc = scenario(tmp_path, rows(seed, n=int(14 * days), days=days), options(case), horizon_days=days + 4,
                  serving=SERVING, seed=seed)
    looked_on_named_hours = costsim.simulate(sc).jobs
    hourly_looks(monkeypatch)
    every_hour = costsim.simulate(sc).jobs
    pd.testing.assert_frame_equal(looked_on_named_hours, every_hour)
    waited = (looked_on_named_hours.start_h - looked_on_named_hours.submit_h).fillna(np.inf)
    assert (waited > 0).sum() > 10  # jobs did wait: the looks had something to do
