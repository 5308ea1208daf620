"""AppTest harness for costsim.dashboard.decision_tabs: mounts one tab on the scenario file named by
COSTSIM_TABS_SCENARIO (a test's tiny scenario); COSTSIM_TABS_WHICH picks the tab ("sensitivity" or
"sweep"), COSTSIM_TABS_REPLICATIONS the sensitivity's replications."""

import os

import costsim
from costsim.dashboard.decision_tabs import sensitivity_tab, sweep_tab

scenario = costsim.load_scenario(os.environ["COSTSIM_TABS_SCENARIO"])
if os.environ.get("COSTSIM_TABS_WHICH", "sensitivity") == "sensitivity":
    sensitivity_tab(scenario, "tabs", replications=int(os.environ.get("COSTSIM_TABS_REPLICATIONS", "1")))
else:
    sweep_tab(scenario, "tabs")
