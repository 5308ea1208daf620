"""AppTest harness for costsim.dashboard.plan_tab: the Plan tab on the scenario file named by
COSTSIM_TABS_SCENARIO (a test's tiny scenario), with one run of it simulated here (no pool: the
app script is ``__main__``)."""

import os

import costsim
from costsim.dashboard.plan_tab import plan_tab

scenario = costsim.load_scenario(os.environ["COSTSIM_TABS_SCENARIO"])
plan_tab(scenario, [costsim.simulate(scenario)], "plan")
