"""A wall-clock time as a log prints it, leap seconds included.

During a positive leap second the kernel's and rsyslog's clocks print
``23:59:60`` (ntpd and chrony step or smear it, but a log written with
the kernel's own leap handling shows it).  Python's datetime has no
second 60: such a line was left undated (its kill untimed, its episode
split in two).  It is the last instant of its minute instead,
``23:59:59.999999``: after every line of second 59, before the next
minute's first.
"""
from __future__ import annotations

import datetime as dt


def wall_time(year, month, day, hour, minute, second, microsecond=0, tzinfo=None) -> dt.datetime:
    """``datetime(...)`` of printed fields, second 60 read as the last
    microsecond of second 59; ValueError for any other impossible field."""
    second, microsecond = leap(int(second), int(microsecond))
    return dt.datetime(int(year), int(month), int(day), int(hour), int(minute), second, microsecond, tzinfo=tzinfo)


def leap(second: int, microsecond: int = 0) -> tuple[int, int]:
    """(second, microsecond) with a leap second's 60 read as 59.999999."""
    return (59, 999999) if second == 60 else (second, microsecond)
