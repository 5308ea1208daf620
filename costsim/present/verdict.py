"""The verdict in words: which option, why, how sure and what would change it, in one sentence,
from ``costsim.decisions.verdict``'s record of numbers (money in USD, fair totals unless named).

``decide`` is ``costsim.decide``: the verdict with its words (``WordedVerdict``: ``sentence``,
``time_to_target`` and ``utilization_flip_reason`` beside every number of the ``Verdict``). The
sentence names the totals it compares, the targets met with the recommended option's values,
always the delay trade, the target that binds, a tie as a tie, and the flips that are flips; with
no option to recommend, the closest and what it misses."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from costsim.decisions import verdict as numbers
from costsim.decisions.flips import Simulate
from costsim.decisions.targets import Target, shortfall
from costsim.decisions.verdict import TIE_TOLERANCE, Verdict
from costsim.present.formats import duration, money, per_gpu_hour, plain
from costsim.present.to_target import target_sentence
from costsim.present.wording import (
    capitalised,
    delay_trade,
    describe,
    flip_reason,
    horizon,
    met_clause,
    misses,
    pct,
    targets_text,
)


@dataclass(frozen=True, kw_only=True)
class WordedVerdict(Verdict):
    """A ``Verdict`` with its words: ``sentence``, the recommendation in one sentence with its
    confidence and what would flip it (the time-to-target sentence appended); ``lead``: that
    sentence's first clause as a sentence of its own (which option, its cost against the option it
    is compared with, and how sure; the sentence starts with it); ``details``: each of the
    sentence's further clauses as a sentence of its own (the targets met, the delay trade, the
    cheaper option a target rules out, the flips, the options set aside, a target not measured),
    so a page can lead with the decision and show the rest on request; ``time_to_target``: that
    sentence alone ("" when no class has ``scaling`` or there is nothing to compare);
    ``utilization_flip_reason``: why no utilisation flips it ("" when one does or none was looked
    for)."""

    sentence: str
    lead: str = ""
    details: tuple[str, ...] = ()
    time_to_target: str = ""
    utilization_flip_reason: str = ""


def decide(source, targets=None, variant: str | None = None, *, flips: bool = True,
           simulate: Simulate | None = None) -> WordedVerdict:
    """``costsim.decisions.verdict.decide`` (the same arguments), with its words."""
    return worded(numbers.decide(source, targets, variant, flips=flips, simulate=simulate))


def worded(v: Verdict) -> WordedVerdict:
    """``v`` with its sentence, its lead and details, time-to-target sentence and flip reason."""
    lead, _ = _parts(v)
    return WordedVerdict(**{f.name: getattr(v, f.name) for f in fields(Verdict)}, sentence=sentence(v),
                         lead=f"{lead}.", details=details(v), time_to_target=time_to_target(v),
                         utilization_flip_reason=flip_reason(v.utilization_search))


def time_to_target(v: Verdict) -> str:
    """How soon and for how much the recommended option reaches its target score against the option
    the verdict sets it against there ("" when there is nothing to compare)."""
    if v.option is None or v.to_target is None or v.to_target_versus is None:
        return ""
    return target_sentence(v.to_target, v.option, v.to_target_versus)


# A clause after the lead: as the sentence joins it (with its "; " or ", ") and as a sentence alone.
Clause = tuple[str, str]


def _parts(v: Verdict) -> tuple[str, list[Clause]]:
    """The sentence's first clause (no full stop) and its further clauses."""
    if v.option is None:
        return _none_parts(v)
    if v.versus is None:
        return _only_parts(v)
    return _pair_parts(v)


def sentence(v: Verdict) -> str:
    """The verdict in one sentence (see the module), the time-to-target sentence appended."""
    lead, rest = _parts(v)
    said = lead + "".join(joined for joined, _ in rest) + "." + _unmeasured_note(v.unmeasured)
    to_target = time_to_target(v)
    return f"{said} {to_target}" if to_target else said


def details(v: Verdict) -> tuple[str, ...]:
    """The sentence after its lead, a clause a sentence (the note on unmeasured targets last)."""
    _, rest = _parts(v)
    note = _unmeasured_note(v.unmeasured).strip()
    return tuple(alone for _, alone in rest) + ((note,) if note else ())


def _row(v: Verdict, option: str):
    """An option's row of ``v.options``."""
    return v.options[v.options["option"] == option].iloc[0]


def _unmeasured_note(unmeasured: tuple[Target, ...]) -> str:
    """" The target p95 queue delay ≤ 24 h is not measured: no job was submitted after the
    warm-up." ("" when every target was measured)."""
    if not unmeasured:
        return ""
    said = targets_text(unmeasured)
    return (f" The target{'s' if len(unmeasured) > 1 else ''} {said} {'are' if len(unmeasured) > 1 else 'is'} not "
            "measured (no job was submitted after the warm-up) and did not decide.")


def _binding_words(v: Verdict, best) -> str:
    """"own-256 would cost 20 % less but misses p95 queue delay ≤ 24 h (p95 queue delay 6.6 days)"
    for the cheaper option the binding target rules out ("" when none is)."""
    if not v.binding_option:
        return ""
    row = _row(v, v.binding_option)
    saving = 1 - row.fair_total_usd / best.fair_total_usd
    return f"{row.option} would cost {pct(saving)} less but misses {'; '.join(misses(shortfall(row, v.targets)))}"


def _size(v: Verdict, alt) -> str:
    rel = -v.relative
    if v.replications >= 2 and not math.isnan(v.difference_low_usd):
        half = (v.difference_high_usd - v.difference_low_usd) / 2 / alt.fair_total_usd
        return f"{pct(rel)} ± {pct(half)}"
    return pct(rel)


def _fair_words(v: Verdict) -> str:
    price = v.waiting_usd_per_gpu_hour
    waiting = f", waiting at {per_gpu_hour(price)}" if price > 0 else ""
    return f"fair totals: amortised cost, with unfinished work and unmet serving at the cheapest rent{waiting}"


def _pair_parts(v: Verdict) -> tuple[str, list[Clause]]:
    assert v.option is not None and v.versus is not None  # a pair compared
    best, alt, scenario = _row(v, v.option), _row(v, v.versus), v.scenario
    a, b = describe(best.option, scenario), describe(alt.option, scenario)
    when = met_clause(best, v.targets)
    if v.same_cost:
        why = ("the 95 % interval of the paired difference spans zero" if v.close_call
               else f"within {plain(TIE_TOLERANCE * 100)} %")
        lead = (f"{capitalised(a)} and {b} cost the same over {horizon(scenario)} ({why}; {_fair_words(v)}: "
                f"{money(best.fair_total_usd)} against {money(alt.fair_total_usd)}); {best.option} is listed first")
    else:
        lead = (f"{capitalised(a)} costs {_size(v, alt)} less than {b} over {horizon(scenario)} "
                f"({_fair_words(v)}: {money(best.fair_total_usd)} against {money(alt.fair_total_usd)})")
    if v.replications < 2:
        lead += " (one run: no confidence interval; replications give one)"
    rest: list[Clause] = [(f"; {line}", f"{line}.") for line in _lines_clauses(best, alt)]
    if when:
        rest.append((f", meeting {when}", f"{best.option} meets {when}."))
    trade = delay_trade(best.option, best, alt.option, alt)
    rest.append((f"; {trade}", f"{capitalised(trade)}."))
    binding = _binding_words(v, best)
    if binding:
        rest.append((f"; {binding}", f"{binding}."))
    flips = []
    u, e = v.utilization_flip, v.electricity_flip_usd_per_kwh
    if best.side == "build" and alt.side == "rent":
        if not math.isnan(u):
            flips.append(f"below {pct(u)} utilisation of {best.option} ({pct(best.utilization)} now)")
        if not math.isnan(e) and best.cost_energy_usd > alt.cost_energy_usd:
            flips.append(f"above ${e:.2f} per kWh")
    elif best.side == "rent" and alt.side == "build":
        if not math.isnan(u):
            flips.append(f"above {pct(u)} utilisation of {alt.option} ({pct(alt.utilization)} now)")
        if not math.isnan(e) and best.cost_energy_usd < alt.cost_energy_usd:
            flips.append(f"below ${e:.2f} per kWh")
    if flips and not v.same_cost:
        flip = f"{best.option} stops being cheaper {' or '.join(flips)}"
        rest.append((f"; {flip}", f"{flip}."))
    return lead, rest


def _lines_clauses(*rows) -> list[str]:
    """What the fair totals of ``rows`` hold beyond the amortised cost and unfinished work, when
    anything: "own-384's fair total includes $436 k of serving it could not give"."""
    parts = []
    for r in rows:
        held = [f"{money(r.serving_unmet_rent_usd)} of serving it could not give"] if r.serving_unmet_rent_usd > 0 else []
        held += [f"{money(r.waiting_cost_usd)} of waiting"] if r.waiting_cost_usd > 0 else []
        if held:
            parts.append(f"{r.option}'s fair total includes {' and '.join(held)}")
    return parts


def _only_parts(v: Verdict) -> tuple[str, list[Clause]]:
    assert v.option is not None  # one option to recommend
    best, wanted = _row(v, v.option), v.targets
    a = describe(best.option, v.scenario)
    lead = f"{capitalised(a)} is the only option that keeps up" + (f" and meets {targets_text(wanted)}" if wanted else "")
    lead += f" ({money(best.fair_total_usd)} fair total, p95 queue delay {duration(best.queue_delay_p95_h)})"
    rest: list[Clause] = []
    binding = _binding_words(v, best)
    if binding:
        rest.append((f"; {binding}", f"{binding}."))
    table = v.options
    left = table[~table["eligible"] & (table["option"] != v.binding_option)]
    rest += [(f"; {w}", f"{w}.") for w in (_missed_words(r, wanted) for _, r in left.iterrows())]
    return lead, rest


def _missed_words(row, wanted: tuple[Target, ...]) -> str:
    """"own-256 cannot keep up (…) and misses p95 queue delay ≤ 24 h (…)", "own-384 misses …"."""
    missed = misses(shortfall(row, wanted))
    lost = [m for m in missed if m.startswith("cannot keep up")]
    targets = [m for m in missed if not m.startswith("cannot keep up")]
    words = lost + ([f"misses {'; '.join(targets)}"] if targets else [])
    return f"{row.option} {' and '.join(words)}"


def _none_parts(v: Verdict) -> tuple[str, list[Clause]]:
    assert v.closest is not None  # with no option to recommend, the closest is named
    table, wanted, closest = v.options, v.targets, v.closest
    what = f"keeps up and meets {targets_text(wanted)}" if wanted else "keeps up"
    row = table.set_index("option").loc[closest]
    words = _missed_words(row.rename(closest).to_frame().T.assign(option=closest).iloc[0], wanted)
    lead = (f"No option {what}. The closest is {describe(closest, v.scenario)} at {money(row.fair_total_usd)} fair "
            f"total, which {words.removeprefix(closest + ' ')}")
    rest = table[table["option"] != closest]
    others = [_missed_words(r, wanted) for _, r in rest.iterrows()]
    return lead, [(f"; the others: {w}" if i == 0 else f"; {w}", f"{w}.") for i, w in enumerate(others)]
