"""Time in an sa file: record dates, the writer's zone, clocks that jump.

Every record carries UTC epoch seconds and the writer's local wall clock
(hour, minute, second), both taken by sadc from one reading of the clock:
their difference is the writer's UTC offset, a whole number of quarter
hours.  When it is not, the epoch seconds cannot be trusted as they are
(sysstat's own test file of a big-endian writer is one), and records are
shown the way sar renders them: the date of the file header, the time of
day of the record, the day moving on when that time goes back.

A record whose epoch time goes back, or whose uptime goes back without a
restart record in between (a reboot sadc did not see), cannot be compared
with the record before it: it starts a new segment, with a warning, instead
of giving a negative interval (a gap of a day, or rates of wrapped counters).
"""
from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd

from sarsleuth.errors import located

#: A record this far (seconds) from the file's creation date is not dated by
#: its own epoch time.
MAX_DRIFT_FROM_HEADER = 7 * 86400

#: Uptimes beyond this (1/100 s, about 350 years) are not real uptimes.
MAX_PLAUSIBLE_UPTIME = 1 << 40


def _local_seconds(hms: np.ndarray) -> np.ndarray:
    hms = hms.astype(np.int64)
    return hms[:, 0] * 3600 + hms[:, 1] * 60 + np.minimum(hms[:, 2], 59)


def _raw_offsets(ust: np.ndarray, hms: np.ndarray) -> np.ndarray:
    local = _local_seconds(hms)
    return (local - ust % 86400 + 86400 + 12 * 3600) % 86400 - 12 * 3600


def utc_offset(ust: np.ndarray, hms: np.ndarray) -> int | None:
    """The writer's UTC offset in seconds (most common value), or None when
    local clock and epoch time do not differ by whole quarter hours."""
    if not len(ust):
        return None
    diff = _raw_offsets(ust, hms)
    values, counts = np.unique(diff, return_counts=True)
    best = int(values[np.argmax(counts)])
    if best % 900 == 0 and -12 * 3600 <= best <= 14 * 3600:
        return best
    # a leap second or a clock stepped between the two readings: round
    rounded = int(round(best / 900.0)) * 900
    if abs(rounded - best) <= 2 and -12 * 3600 <= rounded <= 14 * 3600:
        return rounded
    return None


def check_clock(path, index, layout, warnings) -> int:
    """Date the records (re-anchoring them on the file header when their
    epoch times cannot be right), split segments where a clock goes back;
    return the writer's UTC offset in seconds."""
    ust, hms = _stamps(index)
    offset = utc_offset(ust, hms)
    if offset is None and len(ust):
        offset = 0
        warnings.append(located(path, "record times and local clock times disagree (not whole quarter hours "
                                "apart): times are shown in UTC", offset=layout.data_offset))
    if index.count and _far_from_header(index.ust, layout):
        _anchor_on_header(index, layout, offset)
        warnings.append(located(path, "record epoch times are far from the file header's date "
                                f"{_header_date(layout)}: records are dated from the file header and "
                                "their time of day, as sar shows them", offset=layout.data_offset))
    if index.count:
        _split_where_clock_goes_back(path, index, warnings)
    return offset


def _stamps(index):
    if index.count:
        return index.ust, index.hms
    ust = np.array([s.ust for s in index.specials], dtype=np.int64)
    hms = np.array([s.hms for s in index.specials], dtype=np.int64).reshape(-1, 3)
    return ust, hms


def _header_date(layout) -> str:
    return dt.datetime.fromtimestamp(layout.file_time, dt.timezone.utc).strftime("%Y-%m-%d")


def _header_midnight(layout) -> int:
    """Midnight (UTC) of the day the file header says the file was made."""
    return int(layout.file_time) // 86400 * 86400


def _far_from_header(ust: np.ndarray, layout) -> bool:
    if not 0 < layout.file_time < 1 << 33:
        return False
    return bool(abs(int(ust[0]) - int(layout.file_time)) > MAX_DRIFT_FROM_HEADER)


def _anchor_on_header(index, layout, offset) -> None:
    """sar's rendering: the header's date, each record's time of day, one
    day more each time the time of day goes back."""
    midnight = _header_midnight(layout) - (offset or 0)
    tod = index.ust % 86400
    rollover = np.concatenate([[0], np.cumsum(np.diff(tod) < 0)])
    index.ust = midnight + tod + rollover * 86400
    for special in index.specials:
        special.ust = midnight + special.ust % 86400


def _split_where_clock_goes_back(path, index, warnings) -> None:
    seg = index.segment
    same = np.zeros(index.count, dtype=bool)
    same[1:] = seg[1:] == seg[:-1]
    ust_back = same.copy()
    ust_back[1:] &= index.ust[1:] < index.ust[:-1]
    up = index.uptime
    plausible = up < MAX_PLAUSIBLE_UPTIME
    up_back = same.copy()
    up_back[1:] &= (up[1:] < up[:-1]) & plausible[1:] & plausible[:-1]
    breaks = ust_back | up_back
    if not breaks.any():
        return
    new_segment = np.zeros(index.count, dtype=np.int32)
    change = np.zeros(index.count, dtype=bool)
    change[1:] = ~same[1:] | breaks[1:]
    new_segment[:] = np.cumsum(change)
    index.segment = new_segment
    for i in np.flatnonzero(breaks):
        what = "record time goes back" if ust_back[i] else "uptime goes back (a reboot without a restart record)"
        stamp = dt.datetime.fromtimestamp(int(index.ust[i]), dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        warnings.append(located(path, f"{what} at {stamp}: the record starts a new segment and is not "
                                "compared with the one before", offset=int(index.offsets[i])))


def zone(offset):
    """The fixed offset the file records (sa records carry UTC instants)."""
    return dt.timezone(dt.timedelta(seconds=offset or 0))


def tz_name(tz) -> str:
    if isinstance(tz, str):
        return tz
    seconds = int(tz.utcoffset(None).total_seconds())
    sign = "+" if seconds >= 0 else "-"
    seconds = abs(seconds)
    return f"{sign}{seconds // 3600:02d}:{seconds % 3600 // 60:02d}"


def timestamps(ust: np.ndarray, tz):
    stamps = pd.to_datetime(ust.astype("int64"), unit="s", utc=True).as_unit("ns")
    return stamps.tz_convert(tz)
