"""The one formatter: hand-written expectations for each kind of number a user reads."""
import math

from costsim.present import formats as f


def test_hours_beyond_a_thousand_have_separators_not_exponents():
    assert f.hours(2620.4) == "2,620.4 h"
    assert f.hours(2620.4, 0) == "2,620 h"
    assert "e+" not in f.hours(1.23e7)
    assert f.hours(1.23e7, 0) == "12,300,000 h"


def test_duration_in_words():
    assert f.duration(0) == "no time"
    assert f.duration(0.2) == "12 minutes"
    assert f.duration(3.24) == "3.2 h"
    assert f.duration(30) == "30 h"
    assert f.duration(72) == "3.0 days"
    assert f.duration(2620 * 24) == "2,620 days"


def test_money_in_millions_and_thousands():
    assert f.money(6_412_345) == "$6.41 M"
    assert f.money(-1_340_000) == "−$1.34 M"
    assert f.money(312_400) == "$312 k"
    assert f.money(950) == "$950"
    assert f.money(2.5e9) == "$2.50 B"
    assert f.money(999_999) == "$1.00 M"
    assert f.money_exact(7_463_187) == "$7,463,187"
    assert f.money_exact(-12.2) == "−$12"
    assert f.money_exact(-0.4) == "$0"


def test_nan_and_infinity_in_words():
    for fn in (f.hours, f.duration, f.money, f.money_exact, f.percent, f.count):
        assert fn(math.nan) == "–"
        assert fn(None) == "–"
    assert f.duration(math.inf) == "never"
    assert f.hours(math.inf) == "never"
    assert f.money(math.inf) == "unbounded"
    assert f.number(math.inf, 1, "h") == "∞ h"


def test_percent_and_counts():
    assert f.percent(0.975) == "98 %"
    assert f.percent(0.975, 1) == "97.5 %"
    assert f.percent(0.032) == "3.2 %"
    assert f.count(6203, "jobs") == "6,203 jobs"
    assert f.per_gpu_hour(2.99) == "$2.99/GPU-h"


def test_significant_never_scientific():
    assert f.significant(0.00031666666666666665) == "0.000317"
    assert f.significant(12345.6) == "12,346"
    assert f.significant(2.5) == "2.5"
    assert f.significant(0) == "0"
    assert f.number(-0.0001, 2) == "0.00"


def test_who_pays_more_names_the_side():
    assert f.who_pays_more("own-512", "cloud-od", 1_340_000) == "own-512 costs $1.34 M more than cloud-od"
    assert f.who_pays_more("own-512", "cloud-od", -7_463_187) == "own-512 costs $7.46 M less than cloud-od"
    assert f.who_pays_more("a", "b", 0.3) == "a costs the same as b"


def test_money_never_reads_minus_zero_and_rounds_up_a_scale():
    assert f.money(-0.4) == "$0"
    assert f.money(-0.6) == "−$1"
    assert f.money(999.6) == "$1.00 k"  # not "$1,000" beside "$1 k"
    assert f.money(1_234) == "$1.23 k"


def test_plain_is_a_value_as_typed():
    assert f.plain(0.085) == "0.085"
    assert f.plain(24.0) == "24"
    assert f.plain(1e6) == "1,000,000"  # f"{1e6:g}" is "1e+06"
    assert f.plain(0.99 * 100) == "99"  # 98.99999999999999 as typed
    assert f.plain(2.5e-5) == "0.000025"


def test_seconds_millions_and_p_values():
    assert f.seconds(12.345) == "12.3" and f.seconds(0.04) == "0.04" and f.seconds(0) == "0.0"
    assert f.seconds(math.nan) == "–"
    assert f.millions(12_345_678) == "12.35" and f.millions(-2_500_000) == "−2.50"
    assert f.p_value(0.4567) == "0.46" and f.p_value(3e-12) == "< 0.001" and f.p_value(math.nan) == "–"


def test_decimals_for_a_column_keep_its_smallest_value():
    assert f.decimals_for([0.00031666666666666665, 0.5]) == 6  # 0.000317
    assert f.decimals_for([12.5, 300.0]) == 1  # 12.5 to three figures
    assert f.decimals_for([1500.0, 2620.0]) == 0
    assert f.decimals_for([1e-8]) == 8  # at most ``most`` (1e-12 would be float noise: 0)
    assert f.decimals_for([0.0, math.nan, math.inf]) == 0  # nothing to measure


def test_money_keeps_three_figures_so_amounts_side_by_side_read_alike():
    assert f.money(8_300_000) == "$8.30 M"
    assert f.money(9_030_000) == "$9.03 M"
    assert f.money(9_996_000) == "$10.0 M"
    assert f.money(1_000_000) == "$1.00 M"
    assert f.money(312_400) == "$312 k"
    assert f.money(45_000) == "$45.0 k"


def test_money_moves_to_the_next_scale_only_where_three_figures_of_this_one_round_up():
    assert f.money(999_400) == "$999 k"
    assert f.money(999_500) == "$1.00 M"
    assert f.money(999.4) == "$999"
    assert f.money(999.5) == "$1.00 k"
