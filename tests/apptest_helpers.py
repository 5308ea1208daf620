"""Shared by the dashboard's AppTest tests (tests/app/): the short baseline they upload, the keys,
cards and knobs they read, and every string on a page."""

from __future__ import annotations

import re
from collections.abc import Sequence

from paths import APP
from streamlit.testing.v1 import AppTest

import costsim
from costsim.dashboard import SCENARIO_DIR, content_key, decode_scenario, encode_scenario

DAYS = 30

TINY_LAB = """\
name: tiny
seed: 0
horizon_days: 20
warmup_days: 0
workload:
  classes:
    - name: rl-7b
      arrivals_per_day: 8
      gpus: 16
      iterations: {mean: 300, cv: 0.5}
      model_params_b: 7
      rollout:
        prompts: 256
        samples_per_prompt: 8
        prompt_tokens: 512
        response_tokens: {mean: 2000, cv: 1.0, max: 16384}
options:
  - {name: own-128, kind: owned, gpu_type: H100, gpus: 128, network: infiniband, lead_time_days: 0, scheduler: backfill}
  - {name: cloud-od, kind: cloud, gpu_type: H100, pricing: on_demand, price_tier: neocloud}
"""
"""One owned cluster, one cloud option, one RL class, 20 days: every sidebar knob has a case on it
(tests/app/test_app_knobs.py); the palette's browser test shows its first screen."""


def short(text: str | None = None, **replace: str) -> str:
    """The baseline over ``DAYS`` days (named "short"), with literal text replacements."""
    text = text or (SCENARIO_DIR / "baseline.yaml").read_text()
    text = text.replace("horizon_days: 365\n", f"horizon_days: {DAYS}\n").replace("name: baseline\n", "name: short\n")
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    return text


def key(data: str, gen: int = 0) -> str:
    """The widget key prefix of an uploaded file (no trace) with this text."""
    digest = content_key(data.encode() + bytes(1))
    return f"{digest}.{gen}"


def start() -> AppTest:
    """The app opened on a link to the short baseline (so no test pays for the full year first)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(short())
    return at.run()


def upload(at: AppTest, text: str, name: str = "short.yaml") -> AppTest:
    return at.sidebar.file_uploader(key="upload").upload(name, text.encode(), "application/yaml").run()


def cards(at: AppTest, label: str) -> list[str]:
    """A card metric's values in the scenario's option order (the page shows the recommended
    option's card first: tests/app/test_app_first_screen.py), read from the scenario in the URL."""
    values = [m.value for m in at.metric if m.label.rstrip(" ★") == label]
    names = [re.sub(r"\\(.)", r"\1", m.group(1)) for m in (CARD_NAME.match(md.value) for md in at.markdown) if m]
    if not values:
        return values
    link = at.query_params["s"]
    shown = costsim.load_scenario_text(decode_scenario(link[0] if isinstance(link, list) else link, 10**6), "s.yaml",
                                       SCENARIO_DIR)
    by_name = dict(zip(names, values, strict=True))
    return [by_name[o.name] for o in shown.options]


CARD_NAME = re.compile(r"^\*\*(.+?)\*\*( — recommended)?  \n")  # a card's first line: its option's name


def knob(at: AppTest, suffix: str):
    """The sidebar number input whose key ends with ``suffix`` (the prefix changes with edits)."""
    found = [w for w in at.sidebar.number_input if w.key.endswith(f":{suffix}")]
    assert len(found) == 1, [w.key for w in at.sidebar.number_input]
    return found[0]


def submit(at: AppTest, suffix: str, value) -> AppTest:
    knob(at, suffix).set_value(value)
    return at.button(key="FormSubmitter:knobs-Run").click().run()


def ran(at: AppTest) -> costsim.Scenario:
    """The scenario that ran: the one written into the URL."""
    s = at.query_params["s"]
    s = s[0] if isinstance(s, list) else s
    return costsim.load_scenario_text(decode_scenario(s, 10**6), "s.yaml", SCENARIO_DIR)


def page_strings(at: AppTest) -> list[str]:
    """Every string field of every element and block on the page."""
    out: list[str] = []

    def proto_strings(msg) -> None:
        for _, value in msg.ListFields():
            values = list(value) if isinstance(value, Sequence) and not isinstance(value, str | bytes) else [value]
            for v in values:
                if isinstance(v, str):
                    out.append(v)
                elif isinstance(v, bytes):
                    out.append(v.decode("utf-8", "replace"))
                elif hasattr(v, "ListFields"):
                    proto_strings(v)

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "ListFields"):
            proto_strings(proto)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return out
