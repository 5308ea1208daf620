"""One formatter for every number a user reads: hours, money, percent and counts.

The CLI, the dashboard and the report all print through these functions, so the same quantity
reads the same everywhere: thousands separators, a unit, and never scientific notation. Missing
values (NaN, None) read as "–"; infinities in words ("never", "unbounded"). Pure functions of
plain floats.
"""
from __future__ import annotations

import math

MISSING = "–"
MINUTES_BELOW_H = 1.0      # delays shorter than an hour read in minutes
HOURS_BELOW_H = 48.0       # ... shorter than two days in hours, longer in days
NOISE = 1e-9               # |x| below this is float noise of a sum that should be 0: it reads 0


def missing(x: object) -> bool:
    """True for None and NaN: a value the run did not measure."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def number(x: float | None, digits: int = 0, unit: str = "") -> str:
    """``x`` with ``digits`` decimals, thousands separators and ``unit`` after a space
    ("2,620 h", "0.32 %"); "–" when missing; "∞"/"−∞" for infinities. Never scientific."""
    if missing(x):
        return MISSING
    assert x is not None
    if math.isinf(x):
        text = "∞" if x > 0 else "−∞"
    else:
        text = f"{x:,.{digits}f}"
        if text.startswith("-"):
            text = "−" + text[1:]
        if text in ("−0", "−0." + "0" * digits):
            text = text[1:]
    return f"{text} {unit}" if unit else text


def significant(x: float | None, figures: int = 3, unit: str = "") -> str:
    """``x`` to ``figures`` significant figures, never in scientific notation: 0.000317 →
    "0.000317", 12345.6 → "12,346", 2.5 → "2.5"; below ``NOISE`` (−2.8e-16, a sum of zeros'
    rounding) "0"."""
    if missing(x) or (x is not None and math.isinf(x)):
        return number(x, 0, unit)
    assert x is not None
    if abs(x) < NOISE:
        return number(0.0, 0, unit)
    magnitude = math.floor(math.log10(abs(x)))
    digits = max(figures - 1 - magnitude, 0)
    text = number(round(x, digits), digits, "")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text} {unit}" if unit else text


def hours(h: float | None, digits: int = 1) -> str:
    """A duration in hours, as a table cell: "2,620.0 h"; infinite reads "never"."""
    if h is not None and not missing(h) and math.isinf(h):
        return "never"
    return number(h, digits, "h")


def duration(h: float | None) -> str:
    """A delay in words: "12 minutes", "3.2 h", "12 days", "2,620 days"; "no time" for 0,
    "never" for infinity, "–" when missing."""
    if missing(h):
        return MISSING
    assert h is not None
    if math.isinf(h):
        return "never"
    if h <= 0:
        return "no time"
    if h < MINUTES_BELOW_H:
        minutes = max(round(h * 60), 1)
        return "1 minute" if minutes == 1 else f"{minutes} minutes"
    if h < HOURS_BELOW_H:
        return f"{h:.1f} h" if h < 10 else f"{h:.0f} h"
    days = h / 24
    return f"{days:.1f} days" if days < 10 else f"{days:,.0f} days"


def money(usd: float | None) -> str:
    """Money in words, three significant figures: "$6.41 M", "$8.30 M", "$312 k", "$950", "−$1.34 M";
    "–" when missing."""
    if missing(usd):
        return MISSING
    assert usd is not None
    if math.isinf(usd):
        return "unbounded" if usd > 0 else "−unbounded"
    a = abs(usd)
    sign = "−" if usd < 0 and a >= 0.5 else ""  # "−$0" would read as a loss of nothing
    for scale, unit in ((1e9, " B"), (1e6, " M"), (1e3, " k")):
        if a >= scale * 0.9995:  # what rounds to 1,000 of the scale below reads as 1.00 of this one
            return f"{sign}${three_figures(a / scale)}{unit}"
    return f"{sign}${a:,.0f}"


def three_figures(x: float) -> str:
    """``x`` (0.995 ≤ x < 1,000 or so) to three significant figures, trailing zeros kept so
    amounts side by side read alike: 8.3 → "8.30", 9.996 → "10.0", 312.4 → "312"."""
    for digits in (2, 1):
        if round(x, digits) < 10 ** (3 - digits):
            return f"{round(x, digits):,.{digits}f}"
    return f"{round(x):,.0f}"


def money_exact(usd: float | None) -> str:
    """Money to the dollar, for tables and bills: "$1,234,567", "−$12"; "–" when missing."""
    if missing(usd):
        return MISSING
    assert usd is not None
    if math.isinf(usd):
        return money(usd)
    return f"−${-usd:,.0f}" if round(usd) < 0 else f"${abs(usd):,.0f}"


def percent(share: float | None, digits: int | None = None) -> str:
    """A share (0…1) as a percentage: whole percents, one decimal below 10 % unless ``digits``
    says otherwise ("97 %", "3.2 %"); "–" when missing."""
    if missing(share):
        return MISSING
    assert share is not None
    if digits is None:
        digits = 1 if abs(share) < 0.1 else 0
    return number(share * 100, digits, "%")


def percent_number(share: float | None, digits: int = 1) -> str:
    """A share (0…1) as a bare percentage, for a column whose header says "%": 0.975 → "97.5";
    "–" when missing."""
    if missing(share):
        return MISSING
    assert share is not None
    return number(share * 100, digits)


def count(n: float | None, unit: str = "") -> str:
    """A count with thousands separators: "6,203 jobs"; "–" when missing."""
    return number(n, 0, unit)


def per_gpu_hour(usd: float | None) -> str:
    """A price per GPU-hour, to the cent: "$2.99/GPU-h"; no minus on one that rounds to $0.00
    (−0.001 reads "$0.00/GPU-h"); "–" when missing."""
    if missing(usd):
        return MISSING
    assert usd is not None
    return f"−${-usd:,.2f}/GPU-h" if round(usd, 2) < 0 else f"${abs(usd):,.2f}/GPU-h"


def plain(x: float | None) -> str:
    """A value as a person would type it (a setting, a target, a catalog price): up to six
    significant figures, trailing zeros dropped, never scientific: 0.085 → "0.085", 1e6 →
    "1,000,000", 24.0 → "24"."""
    return significant(x, 6)


def seconds(s: float | None) -> str:
    """Seconds as a table cell, without the unit (the header carries it): one decimal, two below
    0.1 s so a short phase does not read as zero ("12.3", "0.04"); "–" when missing."""
    if missing(s):
        return MISSING
    assert s is not None
    return number(s, 2 if 0 < abs(s) < 0.1 else 1)


def millions(usd: float | None, digits: int = 2) -> str:
    """Dollars in millions as a bare number for a "$M" column: 12,345,678 → "12.35"; "–" when
    missing."""
    if missing(usd):
        return MISSING
    assert usd is not None
    return number(usd / 1e6, digits)


def decimals_for(values, figures: int = 3, most: int = 8) -> int:
    """Decimals a column of numbers needs so its smallest non-zero magnitude keeps ``figures``
    significant figures (0.000317 → 6; 12.5 → 1; 312 → 0; at most ``most``): one format per column that
    never rounds a small rate to "0.00". Values below ``NOISE`` count as 0 (float noise such as
    −2.8e-16 would otherwise ask for every decimal there is)."""
    finite = [abs(float(v)) for v in values if not missing(v) and not math.isinf(float(v)) and abs(float(v)) >= NOISE]
    if not finite:
        return 0
    magnitude = math.floor(math.log10(min(finite)))
    return min(max(figures - 1 - magnitude, 0), most)


def p_value(p: float | None) -> str:
    """A test's p-value: two significant figures, "< 0.001" below that (a smaller one says no more,
    and would need a run of zeros); "–" when missing."""
    if missing(p):
        return MISSING
    assert p is not None
    return "< 0.001" if p < 0.001 else significant(p, 2)


def who_pays_more(name_a: str, name_b: str, a_minus_b_usd: float) -> str:
    """A money difference that says in whose favour it is: "own-512 costs $1.34 M more than
    cloud-od" (positive: ``a`` pays more), "... less than ...", "the same as" when it rounds to
    zero dollars."""
    if missing(a_minus_b_usd):
        return f"the difference between {name_a} and {name_b} is unknown"
    if round(a_minus_b_usd) == 0:
        return f"{name_a} costs the same as {name_b}"
    word = "more" if a_minus_b_usd > 0 else "less"
    return f"{name_a} costs {money(abs(a_minus_b_usd))} {word} than {name_b}"


__all__ = ["MISSING", "count", "decimals_for", "duration", "hours", "millions", "missing", "money", "money_exact",
           "number", "p_value", "per_gpu_hour", "percent", "percent_number", "three_figures", "plain", "seconds", "significant", "who_pays_more"]


def with_interval(fmt, mean: float, low: float, high: float, stacked: bool = False) -> str:
    """``mean ± half-width`` of a symmetric t-interval (``stacked``: the ± on a second line); the
    mean alone where there is no interval (one replication) or no such figure (NaN: "–")."""
    if missing(mean):
        return MISSING
    if missing(low) or missing(high):
        return fmt(mean)
    return f"{fmt(mean)}{chr(10) if stacked else ' '}± {fmt((high - low) / 2).lstrip('$')}"
