"""Zones: reading a host's wall clock as instants, and showing them.

A wall-clock time (``02:30`` in a syslog line) names an instant only with
the zone of the host that wrote it.  Around a DST change that is not a
one-to-one mapping: in autumn the hour from 02:00 repeats (the *fold*), in
spring it never happens.  :func:`localize_wall` reads them as the writer
meant them: repeated hours by the order of the lines (the first pass is
summer time, the pass after the clock went back is winter time), and a
time in the spring gap as written by a clock that had not moved yet (02:10
before the change is 01:10 standard time plus an hour: the same instant as
03:10 summer time), never dropped and never collapsed onto 03:00.
"""
from __future__ import annotations

import datetime as _dt

import numpy as np
import pandas as pd

#: Names that mean "UTC" wherever a zone name is recorded.
UTC_NAMES = frozenset({"UTC", "GMT", "Z", "UCT", "Etc/UTC", "Etc/GMT", "UTC+00:00", "+00:00", "tzutc()"})


def is_utc(zone) -> bool:
    return zone is not None and str(zone) in UTC_NAMES


def offset_at(zone, when) -> _dt.timedelta | None:
    """UTC offset of ``zone`` (IANA name, ``+08:00`` or tzinfo) at ``when``."""
    try:
        ts = pd.Timestamp(when)
        ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts
        return ts.tz_convert(zone).utcoffset()
    except (TypeError, ValueError, KeyError):
        return None


def localize_wall(series, zone):
    """Naive wall-clock Series -> aware Series in ``zone`` (see module doc).

    The order of the Series is taken as the order the times were written
    (file order, or per-series order in a long metrics table, where a jump
    back to an earlier time starts over)."""
    if not len(series):
        return series.dt.tz_localize(zone)
    try:
        return series.dt.tz_localize(zone, ambiguous="raise", nonexistent="raise")
    except (ValueError, TypeError):
        pass   # a DST change inside the data: resolve element by element below
    summer = series.dt.tz_localize(zone, ambiguous=np.ones(len(series), dtype=bool), nonexistent="NaT")
    winter = series.dt.tz_localize(zone, ambiguous=np.zeros(len(series), dtype=bool), nonexistent="NaT")
    ambiguous = (summer != winter) & summer.notna() & winter.notna()
    gap = summer.isna() & series.notna()
    out = summer
    if ambiguous.any():
        use_winter = _second_pass(series.to_numpy(), ambiguous.to_numpy())
        out = summer.where(~use_winter, winter)
    if gap.any():
        out = out.copy()
        out[gap] = _in_gap(series[gap], zone)
        out = _old_offset_after_gap(series, out, gap.to_numpy(), zone)
    return out


def _old_offset_after_gap(series, out, gap, zone):
    """A clock that wrote times inside the spring gap had not moved: the
    times it wrote next, in the same run (wall time still going forward),
    keep its old offset while the new one would send them back before the
    last gap time (02:59:59 then 03:20 is 03:20 standard time, not 20
    minutes earlier).  A run that starts over earlier is a new series."""
    walls = series.to_numpy()
    inst = out.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy().copy()
    offset = None
    changed = False
    for i in range(int(np.argmax(gap)), len(walls)):
        if gap[i]:
            offset = walls[i] - inst[i]
        elif offset is not None and walls[i] >= walls[i - 1] and inst[i] < inst[i - 1]:
            inst[i] = walls[i] - offset
            changed = True
        else:
            offset = None
    if not changed:
        return out
    return pd.Series(inst, index=series.index).dt.tz_localize("UTC").dt.tz_convert(zone)


def _second_pass(walls, ambiguous):
    """Boolean array: which ambiguous times are on the second pass of a
    repeated hour.  Inside a repeated hour the first pass is summer time; a
    step back while inside it means the clock went back, and the rest of
    that run is winter time.  Leaving the repeated hour (or starting over
    earlier, as a new series in a long table does) resets the pass."""
    out = np.zeros(len(walls), dtype=bool)
    idx = np.flatnonzero(ambiguous)
    second = False
    prev_i = -2
    for i in idx.tolist():
        if i != prev_i + 1:
            second = i > 0 and _came_from_fold_end(walls, i)
        elif walls[i] < walls[i - 1]:
            second = True
        out[i] = second
        prev_i = i
    return out


def _came_from_fold_end(w, i) -> bool:
    """A run that starts after a later time: a step back from just after the
    repeated hour (03:00 -> 02:10 would be a new series) is only a second pass
    when less than the hour went by; a new series starting earlier is not."""
    step = (w[i - 1] - w[i]) / np.timedelta64(1, "m")
    return 0 < step <= 60


def _in_gap(walls, zone):
    """Times in a spring-forward gap, as written by a clock still on the
    old offset: shifted forward by the size of the gap."""
    out = []
    for wall in walls:
        before = offset_at(zone, wall - pd.Timedelta(days=1))
        after = offset_at(zone, wall + pd.Timedelta(days=1))
        shift = (after - before) if before is not None and after is not None else pd.Timedelta(hours=1)
        out.append(pd.Timestamp(wall + shift).tz_localize(zone, nonexistent="shift_forward", ambiguous=False))
    return pd.Series(out, index=walls.index)


def to_clock(series, source_zone, display_zone):
    """A timestamp Series on the display clock: naive values read in
    ``source_zone`` first; ``display_zone`` None keeps naive wall clock."""
    aware = getattr(series.dt, "tz", None) is not None
    if display_zone is None:
        return series.dt.tz_localize(None) if aware else series
    if not aware:
        if source_zone is None:
            source_zone = display_zone
        series = localize_wall(series, source_zone)
    if str(series.dt.tz) == str(display_zone):
        return series
    return series.dt.tz_convert(display_zone)


def ts_to_clock(ts, source_zone, display_zone):
    """One Timestamp on the display clock (see :func:`to_clock`)."""
    if ts is None or ts is pd.NaT:
        return ts
    ts = pd.Timestamp(ts)
    if display_zone is None:
        return ts.tz_localize(None) if ts.tzinfo else ts
    if ts.tzinfo is None:
        ts = localize_wall(pd.Series([ts]), source_zone or display_zone).iloc[0]
    return ts.tz_convert(display_zone)
