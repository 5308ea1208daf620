"""One colour-blind-safe look per option, the same in every figure, tab and scenario.

Palette: Okabe & Ito, "Color Universal Design" (2008), the eight colours below. Each option gets
a ``Style`` — colour, line dash, marker symbol and bar pattern — so that no figure relies on
colour alone:

- the **kind** fixes the dash and the bar pattern: owned solid (no pattern); rented dashed —
  on-demand ``dash`` (``/``), reserved ``longdash`` (``\\``), spot ``dot`` (``.``); hybrid
  ``dashdot`` (``x``); an option of unknown kind ``longdashdot`` (``+``);
- the kind also picks a **colour family**: owned warm (orange, vermillion), rented cool (blue,
  sky blue, bluish green), hybrid black and reddish purple. Under deuteranopia the warm and cool
  families stay apart (blue–yellow axis), so an own-vs-rent pair is distinct in colour as well
  as in dash (tests/plots/test_figures.py checks this with the Machado et al. 2009 matrix);
- within its family an option's **home colour** is ``sha256(name) mod family size``: a pure
  function of the name, so "own-256" has the same colour whatever other options exist.
  Collisions are resolved in sorted name order: the option whose name sorts first keeps its home
  colour, the next takes the family's next colour (in family order, wrapping); an option whose
  family is used up takes the first palette colour no option uses (yellow last: it is faint on
  white), then the first colour whose (colour, dash) pair is free. So a style changes between
  two option sets only when a same-kind option sorting before it collides with it there;
- the **marker symbol** follows the colour (orange circle, vermillion square, …), open when the
  colour is borrowed from another family, so two options never share colour and symbol either.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from costsim.results.contract import Results

import pandas as pd

from costsim.plan.facts import holding

# Okabe & Ito's palette, its three light colours darkened (hue and saturation kept, HLS lightness
# lowered) to 3:1 against the white plot (WCAG 2.1, 1.4.11 non-text contrast): orange E69F00,
# sky blue 56B4E9 and yellow F0E442 in the paper (2.25, 2.31 and 1.32:1 on white; tests/plots/test_palette_contrast.py).
# Owned and rented colours stay apart under deuteranopia (ΔE >= 53 in every pair, tests/plots/test_figures.py);
# the two owned colours are close there, and options of one family differ by marker and dash too.
ORANGE, SKY_BLUE, BLUISH_GREEN, YELLOW = "#C48800", "#1E9BE2", "#009E73", "#A1960D"
BLUE, VERMILLION, REDDISH_PURPLE, BLACK = "#0072B2", "#D55E00", "#CC79A7", "#000000"
# Okabe–Ito in their published order.
OKABE_ITO = (ORANGE, SKY_BLUE, BLUISH_GREEN, YELLOW, BLUE, VERMILLION, REDDISH_PURPLE, BLACK)
# Colours for categories that are not options (line items, phases, job classes): the palette
# without black (kept for marks such as the iteration diamond and goodput), yellow last.
CATEGORY_COLOURS = (BLUE, ORANGE, BLUISH_GREEN, VERMILLION, SKY_BLUE, REDDISH_PURPLE, YELLOW)
CATEGORY_PATTERNS = ("", "/", ".", "x", "\\", "+", "-", "|")

FAMILIES = {"owned": (ORANGE, VERMILLION), "rented": (BLUE, SKY_BLUE, BLUISH_GREEN),
            "hybrid": (BLACK, REDDISH_PURPLE), "other": OKABE_ITO}
# Borrowing order once a family is used up: most distinct first, yellow (close to orange and vermillion
# under deuteranopia) last.
_BORROW = (REDDISH_PURPLE, BLUISH_GREEN, SKY_BLUE, VERMILLION, BLUE, ORANGE, BLACK, YELLOW)
_SYMBOLS = {ORANGE: "circle", VERMILLION: "square", YELLOW: "diamond", BLUE: "triangle-up",
            SKY_BLUE: "triangle-down", BLUISH_GREEN: "cross", BLACK: "star", REDDISH_PURPLE: "hexagon"}
# (dash, bar pattern) per pricing; what the summary's ``pricing`` column holds, hybrids "a+b".
_LOOK = {"owned": ("solid", ""), "on_demand": ("dash", "/"), "reserved": ("longdash", "\\"),
         "spot": ("dot", "."), "hybrid": ("dashdot", "x"), "other": ("longdashdot", "+")}
# When every colour is taken with an option's dash, a second dash of the same family.
_SECOND_DASH = {"solid": "5px,2px", "dash": "12px,4px,2px,4px", "longdash": "20px,6px", "dot": "2px,6px",
                "dashdot": "8px,3px,2px,3px,2px,3px", "longdashdot": "16px,4px,2px,4px,2px,4px"}


@dataclass(frozen=True)
class Style:
    """How one option is drawn: ``color`` (hex), ``dash`` (plotly line dash), ``symbol`` (plotly
    marker symbol), ``pattern`` (plotly bar pattern shape, "" = solid) and its ``kind`` family
    (owned, rented, hybrid, other)."""

    color: str
    dash: str
    symbol: str
    pattern: str
    kind: str

    def line(self, width: float = 2.5) -> dict:
        return dict(color=self.color, dash=self.dash, width=width)

    def marker(self, size: float = 8) -> dict:
        return dict(color=self.color, symbol=self.symbol, size=size, line=dict(color="white", width=0.5))

    def bar_marker(self) -> dict:
        # overlay keeps the bar in its colour and draws the kind's pattern on top, in white
        return dict(color=self.color, line=dict(color=self.color, width=1),
                    pattern=dict(shape=self.pattern, fillmode="overlay", fgcolor="white", fgopacity=0.6, size=7))


def _entries(source: Any) -> list[tuple[str, str, str]]:
    """(name, family, look) per option, from a summary-like DataFrame (``option``, optional
    ``kind`` and ``pricing``), anything with ``.summary`` (Results) or ``.options`` (Scenario), a
    mapping name → kind, or an iterable of option models or names."""
    if hasattr(source, "summary") and isinstance(source.summary, pd.DataFrame):
        source = source.summary
    elif hasattr(source, "options") and not isinstance(source, (pd.DataFrame, Mapping)):
        source = source.options
    triples: Iterable[tuple[Any, Any, Any]]  # (name, kind, pricing) as the source holds them
    if isinstance(source, pd.DataFrame):
        if "option" not in source:
            raise ValueError("option_styles(): the table has no 'option' column")
        rows = source.drop_duplicates("option")
        kinds = rows["kind"] if "kind" in rows else [None] * len(rows)
        prices = rows["pricing"] if "pricing" in rows else [None] * len(rows)
        triples = zip(rows["option"], kinds, prices, strict=True)
    elif isinstance(source, Mapping):
        triples = ((name, kind, None) for name, kind in source.items())
    elif isinstance(source, Iterable) and not isinstance(source, (str, bytes)):
        triples = ((o, None, None) if isinstance(o, str) else (o.name, getattr(o, "kind", None), getattr(o, "pricing", None))
                   for o in source)
    else:
        raise ValueError(f"option_styles(): cannot read options from a {type(source).__name__}")
    out: dict[str, tuple[str, str, str]] = {}
    for name, kind, pricing in triples:
        out.setdefault(str(name), (str(name), *holding(kind, pricing)))  # (family, look)
    return list(out.values())


def home_index(name: str, family_size: int) -> int:
    """The option's preferred slot in its colour family: sha256 of its name (stable across runs
    and machines, unlike ``hash``) modulo the family size."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big") % family_size


def option_styles(source: Any) -> dict[str, Style]:
    """``{option name: Style}`` for every option of ``source`` (a summary table, a Results, a
    Scenario, a mapping name → kind, or option models / names), in the source's order. The rule
    is the module docstring's: dash and pattern from the kind, colour from the kind's family and
    the name's hash, collisions resolved in sorted name order. No two options share (colour, dash)
    while fewer than 8 options share a dash."""
    entries = _entries(source)
    colours: dict[str, str] = {}
    dashes: dict[str, str] = {}
    taken: set[tuple[str, str]] = set()
    left = []
    for name, family, look in sorted(entries):  # pass 1: home colours, then the family's next ones
        home = FAMILIES[family]
        start = home_index(name, len(home))
        in_family = {colours[n] for n, f, _ in entries if f == family and n in colours}
        free = [c for c in home[start:] + home[:start] if c not in in_family and (c, _LOOK[look][0]) not in taken]
        if free:
            colours[name], dashes[name] = free[0], _LOOK[look][0]
            taken.add((free[0], dashes[name]))
        else:
            left.append((name, family, look))
    for name, _family, look in left:  # pass 2: borrow an unused colour, else a free (colour, dash)
        dash = _LOOK[look][0]
        used = set(colours.values())
        unused = [c for c in _BORROW if c not in used]
        pairs = [(c, d) for d in (dash, _SECOND_DASH[dash]) for c in _BORROW if (c, d) not in taken]
        colour, dash = (unused[0], dash) if unused else (pairs[0] if pairs else (_BORROW[0], dash))
        colours[name], dashes[name] = colour, dash
        taken.add((colour, dash))
    styles = {}
    for name, family, look in entries:
        colour = colours[name]
        symbol = _SYMBOLS[colour] + ("" if colour in FAMILIES[family] or family == "other" else "-open")
        styles[name] = Style(colour, dashes[name], symbol, _LOOK[look][1], family)
    return styles


def class_looks(results: Results) -> dict[str, tuple[str, str]]:
    """(colour, pattern) per job class of ``results``: the scenario's classes in their order, then
    any other class the jobs table holds (trace jobs) in the order they first appear, so a class
    looks the same in every figure. The jobs' classes are turned into text in one step and read
    once each, not once a job (a year's table has thousands: one by one, 0.01-0.02 s a figure)."""
    classes = [c.name for c in getattr(results.scenario.workload, "classes", None) or []]
    return category_styles([*classes, *results.jobs["job_class"].astype(str).unique()])


def category_styles(names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """``{category: (colour, bar pattern)}`` for categories that are not options (line items,
    phases, job classes, hybrid parts), in the order given: colour and pattern both cycle, so
    categories stay apart without colour too."""
    names = list(dict.fromkeys(names))
    return {n: (CATEGORY_COLOURS[i % len(CATEGORY_COLOURS)], CATEGORY_PATTERNS[i % len(CATEGORY_PATTERNS)])
            for i, n in enumerate(names)}
