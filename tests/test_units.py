"""Printing quantities for people (pcieperf.units): rates with scaled units and significant
digits, durations in human units, times in ISO 8601 UTC (issue 27: a 14-day capture must not
read 0.000 Mpps, durations must not be raw seconds)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pcieperf.units import (
    duration_text,
    duration_token,
    parse_duration_ns,
    parse_rate,
    scaled,
    utc_text,
)


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        # The examples: 3 significant digits, SI prefixes (docs/units.md: k, M, G).
        (12.34, "pps", "12.3 pps"),
        (4560, "pps", "4.56 kpps"),
        (1e6, "pps", "1.00 Mpps"),
        (0.48e9, "b/s", "480 Mb/s"),
        (12.3e9, "b/s", "12.3 Gb/s"),
        (2048, "b/s", "2.05 kb/s"),
        # Rounded once: 999.6 is 1.00 k, not "1000 pps".
        (999.6, "pps", "1.00 kpps"),
        (999.4, "pps", "999 pps"),
        (0.5, "pps", "0.500 pps"),
        (0, "pps", "0 pps"),
        # 2 packets over 14 days and 2 hours (1 216 800 s): 1.64e-6 pps, not 0.000.
        (2 / 1_216_800, "pps", "1.64e-06 pps"),
    ],
)
def test_scaled_units_and_significant_digits(value, unit, text):
    assert scaled(value, unit) == text


@given(st.floats(1e-3, 9.9e11))  # parse_rate knows k, M and G
def test_a_scaled_rate_reads_back_within_its_three_digits(value):
    text = scaled(value, "pps")
    # Three significant digits: the number shown has three digits, and parse_rate (what --pps
    # takes) reads it back within half a unit of the third digit (relative 0.5 %).
    assert len(text.split()[0].replace(".", "").lstrip("0")) == 3
    assert parse_rate(text) == pytest.approx(value, rel=0.005)


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        # The examples.
        (4_999_000, "4.999 ms"),
        (7_390 * 10**9, "2 h 03 min 10 s"),
        ((14 * 24 + 2) * 3600 * 10**9, "14 d 2 h"),
        (999, "999 ns"),
        (1000, "1.000 µs"),
        (999_999_999, "1.000 s"),
        (125 * 10**9, "2 min 05 s"),
        # 59.9996 s rounds to 60.000: shown as the minute it is.
        (59_999_600_000, "1 min 00 s"),
        # From 23 h 30 min on, days and hours rounded to the hour.
        (23 * 3600 * 10**9 + 1800 * 10**9, "1 d 0 h"),
    ],
)
def test_durations_in_human_units(ns, text):
    assert duration_text(ns) == text


UNIT_NS = {"ns": 1, "µs": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9}
UNIT_NS |= {"h": 3600 * 10**9, "d": 86_400 * 10**9}


@given(st.integers(0, 10**17))
def test_a_duration_reads_back_within_half_its_last_unit(ns):
    parts = duration_text(ns).split()
    pairs = list(zip(parts[::2], parts[1::2], strict=True))
    total = sum(float(number) * UNIT_NS[unit] for number, unit in pairs)
    last_number, last_unit = pairs[-1]
    step = UNIT_NS[last_unit] * (0.001 if "." in last_number else 1)
    assert abs(total - ns) <= step / 2 * (1 + 1e-9)


@pytest.mark.parametrize(
    ("ns", "token"),
    [(1_000_000, "1ms"), (100_000, "100us"), (1_500_000, "1500us"), (10**9, "1s"), (7, "7ns")],
)
def test_a_window_is_written_as_windows_takes_it(ns, token):
    assert duration_token(ns) == token


@given(st.integers(1, 10**13))
def test_a_duration_token_parses_back_exactly(ns):
    assert parse_duration_ns(duration_token(ns)) == ns


def test_utc_text_truncates_to_the_digits_given():
    # `date -u -d @1700000000`: Tue Nov 14 22:13:20 UTC 2023; the fraction truncated, as
    # capinfos truncates (.4761905 at 6 digits is .476190).
    assert utc_text(1_700_000_000_123_456_789, 6) == "2023-11-14T22:13:20.123456Z"
    assert utc_text(1_700_000_000_476_190_500, 6) == "2023-11-14T22:13:20.476190Z"
    assert utc_text(1_700_000_000_999_999_999, 0) == "2023-11-14T22:13:20Z"
    assert utc_text(-1, 9) == "1969-12-31T23:59:59.999999999Z"


@given(st.integers(-(2**63) + 1, 2**63 - 1), st.integers(0, 9))  # -2^63 is numpy's NaT
def test_utc_text_is_numpys_iso_8601(ts, digits):
    # numpy's datetime64 formats the calendar with code of its own (datetime_as_string).
    theirs = str(np.datetime_as_string(np.datetime64(ts, "ns"), unit="ns"))
    assert utc_text(ts, digits) == (theirs[: 20 + digits] if digits else theirs[:19]) + "Z"
