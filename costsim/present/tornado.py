"""The sensitivity tornado in words: what flips the verdict and what swings it most, from a
``costsim.decisions.sensitivity.Tornado`` (differences in USD, build − rent fair totals)."""

from __future__ import annotations

import numpy as np

from costsim.decisions.sensitivity import Tornado
from costsim.present.formats import money, plain
from costsim.present.wording import describe


def _at(row, end: str) -> str:
    """An input's value at ``end`` ("low" or "high") in its unit: "×0.67", "$0.190/kWh", "27 % off", "364 days"."""
    v = row[end]
    if row["unit"].startswith("×"):
        return f"×{plain(v)}"
    if row["unit"] == "USD/kWh":
        return f"${v:.3f}/kWh"
    if row["unit"].startswith("share"):
        return f"{v * 100:.0f} % off"
    return f"{plain(v)}{' ' + row['unit'] if row['unit'] else ''}"


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def sentence(t: Tornado) -> str:
    """"Owning 256 H100s (own-256) costs $1.63 M less than renting on-demand H100s (cloud-od); the
    verdict flips if cloud price is ×0.67 or lead time 364 days; the largest swing is arrival scale
    ($3.56 M)." Each flipping input is named at the end(s) where the difference changes sign or
    where the recommendation changes (``flips_at``)."""
    table, base_difference_usd = t.table, t.base_difference_usd
    a, b = describe(t.build, t.scenario), describe(t.rent, t.scenario)
    if base_difference_usd > 0:
        a, b = b, a
    head = f"{a[0].upper()}{a[1:]} costs {money(abs(base_difference_usd))} less than {b} (fair totals)"
    flips = []
    for _, row in table[table["flips"]].iterrows():
        ends = [e for e in str(row.get("flips_at") or "").split(",") if e] or \
            [e for e in ("low", "high") if np.sign(row[f"{e}_difference_usd"]) == -np.sign(base_difference_usd)]
        flips.append(f"{row['input']} is {' or '.join(_at(row, e) for e in ends)}")
    ran = table[table["swing_usd"].notna()]
    s = head + ("; the verdict flips if " + _listed(flips) if flips else
                "; no single input flips the verdict within its range")
    if not ran.empty:
        top = ran.iloc[0]
        s += f"; the largest swing is {top['input']} ({money(top['swing_usd'])})"
    return s + "."
