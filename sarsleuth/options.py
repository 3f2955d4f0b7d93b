"""The options a user gives, checked in one place, once.

Whoever takes options from the user (the command line, :meth:`sarsleuth.Case.load`
and :func:`sarsleuth.fleet.analyze` called with keywords) makes them into
one immutable :class:`Options` with :func:`check_options`, and hands that
object down: the stages of the analysis, a fleet's workers (it pickles)
and the exports read it and never check again.  A bad ``--tz`` or
``--window`` is the same one-line usage error whichever way it came in.
Nothing here needs pandas until a window is given.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd

from sarsleuth.errors import UsageError

SEVERITY_NAMES = ("low", "medium", "high", "critical")
DATE_ORDERS = ("mdy", "dmy")
#: Years a syslog line may be given with ``--year`` (pandas holds 1678-2261;
#: anything outside this range is a typo, not a post-mortem).
YEAR_RANGE = (1970, 2100)


@dataclass(frozen=True)
class Options:
    """Checked options of one analysis (or one ``parse``)."""

    tz: str | None = None                 # IANA zone for times that carry none, and for display
    year: int | None = None               # year of syslog lines that carry none
    window: tuple | None = None           # (start, end) Timestamps as given: zoned later, on the case's clock
    link_speed_bps: float | None = None   # NIC capacity in bits/s
    date_order: str | None = None         # "mdy" or "dmy" for ambiguous sar banners
    min_severity: str | None = None
    config: str | None = None             # the user's TOML configuration file (sarsleuth.config)


def check_options(*, tz=None, year=None, window=None, link_speed=None, date_order=None,
                  min_severity=None, config=None) -> Options:
    """Every option checked, or one UsageError naming the option."""
    if tz is not None:
        tz = check_tz(tz)
    if year is not None:
        year = check_year(year)
    if date_order is not None and date_order not in DATE_ORDERS:
        raise UsageError(f"--date-order {date_order!r}: expected mdy or dmy")
    if min_severity is not None and min_severity not in SEVERITY_NAMES:
        raise UsageError(f"--min-severity {min_severity!r}: expected one of {', '.join(SEVERITY_NAMES)}")
    return Options(tz=tz, year=year, window=parse_window(window), link_speed_bps=parse_link_speed(link_speed),
                   date_order=date_order, min_severity=min_severity,
                   config=str(config) if config is not None else None)


#: A fixed offset as outputs print it (``UTC+08:00``) or as people write it
#: (``+08:00``, ``+0800``, ``GMT-5``).
_OFFSET = re.compile(r"(?:UTC|GMT)?\s*([+-])(\d{1,2})(?::?(\d{2}))?", re.I)


def check_tz(tz: str) -> str:
    """An IANA zone name as given, or a fixed offset as ``+08:00`` (pandas
    reads it so; outputs print it ``UTC+08:00``)."""
    offset = _OFFSET.fullmatch(str(tz).strip())
    if offset:
        sign, hours, minutes = offset.group(1), int(offset.group(2)), int(offset.group(3) or 0)
        if hours > 14 or minutes > 59 or (hours == 14 and minutes):
            raise UsageError(f"--tz {tz!r}: an offset is at most 14 hours from UTC")
        return f"{sign}{hours:02d}:{minutes:02d}"
    try:
        ZoneInfo(tz)
    except Exception:
        raise UsageError(f"--tz {tz!r}: not a known time zone (an IANA name such as Asia/Shanghai, Europe/Paris, "
                         "UTC, or an offset such as +08:00 or UTC+08:00)") from None
    return tz


def check_year(year: Any) -> int:
    try:
        value = int(year)
    except (TypeError, ValueError):
        raise UsageError(f"--year {year!r}: expected a year such as 2014") from None
    if not (YEAR_RANGE[0] <= value <= YEAR_RANGE[1]):
        raise UsageError(f"--year {year}: expected a year between {YEAR_RANGE[0]} and {YEAR_RANGE[1]}")
    return value


#: An end of ``--window`` given as a time of day, without a date.
_TIME_OF_DAY = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2})(\.\d+)?)?")


def _window_end(text, window):
    """A Timestamp, or a Timedelta from midnight for a time without a date
    (placed on the case's day once the case is read)."""
    if not isinstance(text, str):
        return pd.Timestamp(text)
    text = text.strip()
    m = _TIME_OF_DAY.fullmatch(text)
    if m:
        hours, minutes, seconds = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        if hours > 23 or minutes > 59 or seconds > 60:
            raise UsageError(f"--window {window!r}: {text} is not a time of day")
        return pd.Timedelta(hours=hours, minutes=minutes, seconds=seconds) + pd.Timedelta(m.group(4) or "0s")
    return pd.Timestamp(text)


def parse_window(window):
    """``START..END`` (ISO 8601 or anything pandas reads) into a pair of
    Timestamps, naive unless the text carries an offset.  The zone of naive
    ends is the case's, known only once every source is read; an end
    without a date (``15:00``) is a Timedelta from midnight, put on the
    case's day then (:func:`sarsleuth.analysis.user_window.dated`)."""
    if window is None:
        return None
    if isinstance(window, tuple):
        a, b = window
    else:
        if ".." not in str(window):
            raise UsageError(f"--window {window!r}: expected START..END, e.g. 2014-05-06T15:00..2014-05-06T15:10")
        a, b = str(window).split("..", 1)
    try:
        start, end = _window_end(a, window), _window_end(b, window)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--window {window!r}: {exc}") from None
    if start is pd.NaT or end is pd.NaT:
        raise UsageError(f"--window {window!r}: both ends are needed")
    dated = not isinstance(start, pd.Timedelta) and not isinstance(end, pd.Timedelta)
    if dated and (start.tzinfo is None) == (end.tzinfo is None) and end < start:
        raise UsageError(f"--window {window!r}: end is before start")
    return (start, end)


_BYTES = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)b?\s*", re.IGNORECASE)
#: The least memory a fleet's worker is given: the interpreter and pandas
#: alone take about 150 MiB; below this a worker is killed and restarted
#: for ever instead of analysing a host.
MIN_WORKER_MEMORY = 256 * 2**20


def check_worker_memory(value) -> int | None:
    """``--worker-memory``: ``2GiB``, ``1500MB``, ``auto`` (None: memory
    shared out), as bytes; at least :data:`MIN_WORKER_MEMORY`."""
    if value is None or str(value).strip().lower() == "auto":
        return None
    m = _BYTES.fullmatch(str(value))
    if not m:
        raise UsageError(f"--worker-memory {value!r}: expected a size such as 2GiB, 1500MB or auto")
    power = "kmgt".find(m.group(2).lower()) + 1 if m.group(2) else 0
    size = float(m.group(1)) * (1024 if m.group(3) else 1000) ** power
    if size < MIN_WORKER_MEMORY:
        raise UsageError(f"--worker-memory {value}: a worker needs at least 256MiB (the interpreter and pandas "
                         "alone take about 150 MiB)")
    return int(size)


_LINK_SPEED = re.compile(r"\s*([\d.]+)\s*([kKmMgGtT]?)(?:bit|b|bps|bit/s)?\s*")


def parse_link_speed(value):
    """``20G``, ``10Gbit``, ``1000M`` or a number of bits/s."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise UsageError(f"--link-speed {value!r}: expected e.g. 10G, 20Gbit, 1000M")
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        m = _LINK_SPEED.fullmatch(str(value))
        if not m:
            raise UsageError(f"--link-speed {value!r}: expected e.g. 10G, 20Gbit, 1000M")
        try:
            number = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2).lower()]
        except ValueError:
            raise UsageError(f"--link-speed {value!r}: expected e.g. 10G, 20Gbit, 1000M") from None
    if not (number > 0 and number < float("inf")):
        raise UsageError(f"--link-speed {value!r}: must be a positive, finite speed")
    return number
