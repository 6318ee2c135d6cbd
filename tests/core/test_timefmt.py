"""Slurm's time formats (reference sections 1.2 and 6)."""

import math
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minislurm.core.timefmt import (format_duration, format_elapsed, format_limit, format_timestamp,
                                    parse_begin, parse_time_limit)


@pytest.mark.parametrize("text,minutes", [
    ("60", 60), ("90:30", 91), ("2:00:00", 120), ("1-0", 1440), ("1-2", 1560), ("1-2:30", 1590),
    ("1-2:03:04", 1564), ("0:01", 1), ("5:00", 5),
])
def test_every_time_format_rounds_up_to_minutes(text, minutes):
    assert parse_time_limit(text) == minutes


@pytest.mark.parametrize("text", ["0", "-1", "INFINITE", "UNLIMITED", "unlimited"])
def test_no_limit(text):
    assert parse_time_limit(text) == math.inf


@pytest.mark.parametrize("text", ["", "abc", "1:2:3:4", "1-", "-5", "1-2:3:4:5", "1.5"])
def test_bad_times_are_refused(text):
    with pytest.raises(ValueError, match="Invalid time specification"):
        parse_time_limit(text)


def test_squeue_time_columns():
    assert format_duration(0) == "0:00"
    assert format_duration(59) == "0:59"
    assert format_duration(3723) == "1:02:03"
    assert format_duration(90061) == "1-01:01:01"
    assert format_duration(math.inf) == "UNLIMITED"


def test_sinfo_and_sacct_columns():
    assert format_limit(1800) == "30:00"
    assert format_limit(math.inf) == "infinite"
    assert format_elapsed(65) == "00:01:05"
    assert format_elapsed(93784) == "1-02:03:04"


def test_timestamps():
    t = datetime(2026, 11, 29, 16, 7, 35).timestamp()
    assert format_timestamp(t) == "2026-11-29T16:07:35"
    assert format_timestamp(None) == "Unknown"


def test_begin_times():
    now = datetime(2026, 11, 29, 12, 0, 0).timestamp()
    assert parse_begin("now", now) == now
    assert parse_begin("now+60", now) == now + 60
    assert parse_begin("now+1hour", now) == now + 3600
    assert parse_begin("now+2days", now) == now + 2 * 86400
    assert parse_begin("now-5minutes", now) == now - 300  # sacct -S now-5minutes
    assert parse_begin("now-10", now) == now - 10
    assert parse_begin("16:00", now) == datetime(2026, 11, 29, 16, 0).timestamp()
    assert parse_begin("10:00", now) == datetime(2026, 11, 30, 10, 0).timestamp()  # past today: tomorrow
    assert parse_begin("2026-12-24T18:30", now) == datetime(2026, 12, 24, 18, 30).timestamp()
    assert parse_begin("tomorrow", now) == datetime(2026, 11, 30).timestamp()
    assert parse_begin("teatime", now) == datetime(2026, 11, 29, 16, 0).timestamp()
    with pytest.raises(ValueError):
        parse_begin("yesterday-ish", now)


@given(st.integers(0, 400), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_day_format_round_trip(d, h, m, s):
    total = ((d * 24 + h) * 60 + m) * 60 + s
    text = f"{d}-{h}:{m}:{s}"
    expected = math.inf if total == 0 else math.ceil(total / 60)
    assert parse_time_limit(text) == expected
    if total:
        assert parse_time_limit(format_duration(total)) == math.ceil(total / 60)


def test_a_date_and_time_parted_by_a_dash_or_space_as_torchx_sends_it():
    """torchx lists jobs with ``sacct --json -S1970-01-01-00:00:01``; Slurm takes a dash (or a
    blank) between the date and the time as it takes a ``T``."""
    at = datetime(1970, 1, 1, 0, 0, 1).timestamp()
    assert parse_begin("1970-01-01-00:00:01", 0) == parse_begin("1970-01-01T00:00:01", 0) == at
    assert parse_begin("2026-12-03 10:30", 0) == datetime(2026, 12, 3, 10, 30).timestamp()
