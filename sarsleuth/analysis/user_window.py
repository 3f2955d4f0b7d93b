"""The user's ``--window``: its ends on the case's clock, which findings
fall inside it, what a window that misses every input says, and where
load-test reports without a time of their own are placed."""
from __future__ import annotations

import pandas as pd

from sarsleuth.errors import UsageError
from sarsleuth.model import Finding
from sarsleuth.timebase.clock import on_clock, zone_of


def in_window(f: Finding, window) -> bool:
    """Does a finding overlap the window?  Both are on the case's clock;
    an untimed finding is kept (it cannot be placed outside)."""
    if f.start is None or pd.isna(f.start):
        return True
    start, end = window
    f_end = f.end if f.end is not None and not pd.isna(f.end) else f.start
    return not (f_end < start or f.start > end)


def window_misses(sources, window, zone, given) -> str | None:
    """The sentence saying that ``window`` holds no data, when it misses
    every source's span (on the case's clock), else None."""
    spans = []
    for s in sources:
        a, b = s.span()
        if a is None or b is None:
            continue
        a, b = on_clock(pd.Timestamp(a), zone), on_clock(pd.Timestamp(b), zone)
        try:
            if not (b < window[0] or a > window[1]):
                return None
        except TypeError:       # a wall clock beside the window's zone: cannot be placed outside
            return None
        spans.append((a, b))
    if not spans:
        return None
    fmt = "%Y-%m-%d %H:%M:%S"
    try:
        lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
        covered = f"{lo.strftime(fmt)} to {hi.strftime(fmt)} ({zone_of(lo)})"
    except TypeError:
        covered = "other times"
    start, end = given
    return f"--window {start.isoformat()}..{end.isoformat()} holds no data: the inputs cover {covered}"


def dated(window, sources, zone):
    """``(window, note)``: ends given without a date (Timedeltas from
    midnight) put on a day: the other end's, else the day the inputs cover
    (on the case's clock), the last of them when they cover several (the
    note says which day, and how to name another); an end earlier than
    its start is the next day's.  Dated ends are kept."""
    if window is None or not any(isinstance(t, pd.Timedelta) for t in window):
        return window, None
    start, end = window
    note = None
    if isinstance(start, pd.Timedelta) and isinstance(end, pd.Timedelta):
        days = sorted({pd.Timestamp(on_clock(pd.Timestamp(t), zone)).date()
                       for s in sources for t in s.span() if t is not None and not pd.isna(t)})
        midnight = pd.Timestamp(days[-1] if days else pd.Timestamp.now().date())
        start_at, end_at = midnight + start, midnight + end
        shown = f"--window {_hm(start)}..{_hm(end)}: times without a date are read on {midnight.date().isoformat()}"
        if len(days) > 1:
            note = (f"{shown}, the last of the days the inputs cover ({days[0].isoformat()} to "
                    f"{days[-1].isoformat()}); give a date for another (--window {days[0].isoformat()}T{_hm(start)}.."
                    f"{_hm(end)})")
        else:
            note = f"{shown}, the day the inputs cover" if days else f"{shown}, today (no input has a time)"
    elif isinstance(start, pd.Timedelta):          # 15:00..2014-05-06T16:00
        end_at = pd.Timestamp(end)
        start_at = end_at.normalize() + start
    else:                                           # 2014-05-06T15:00..16:00
        start_at = pd.Timestamp(start)
        end_at = start_at.normalize() + end
    if isinstance(end, pd.Timedelta) and end_at < start_at:
        end_at += pd.Timedelta(days=1)              # 23:50..00:10: past midnight
    return (start_at, end_at), note


def _hm(t) -> str:
    if not isinstance(t, pd.Timedelta):
        return pd.Timestamp(t).isoformat()
    seconds = int(t.total_seconds())
    text = f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}"
    return text + (f":{seconds % 60:02d}" if seconds % 60 else "")


def window_on_clock(window, zone):
    """``--window`` ends on the case's clock: naive ends are in the case's
    zone; with no zone known, aware ends are read as wall clock.  An end
    in the hour a zone repeats when summer time ends is read so that the
    window holds both: its start as the first reading, its end as the
    second (:func:`window_readings` says so); an end in the hour skipped
    in spring is moved to the hour's end."""
    if window is None:
        return None
    out = []
    for i, ts in enumerate(window):
        if zone is None:
            out.append(ts.tz_localize(None) if ts.tzinfo is not None else ts)
        elif ts.tzinfo is None:
            out.append(ts.tz_localize(zone, ambiguous=i == 0, nonexistent="shift_forward"))
        else:
            out.append(ts.tz_convert(zone))
    if out[1] < out[0]:
        raise UsageError("--window: end is before start")
    return tuple(out)


def window_readings(window, zone) -> list[str]:
    """Notes on ends of ``--window`` a wall clock reads twice or never:
    which reading was taken, and how to choose the other."""
    if window is None or zone is None:
        return []
    notes = []
    for i, ts in enumerate(window):
        if ts.tzinfo is not None:
            continue
        end = ("start", "end")[i]
        first, second = (ts.tz_localize(zone, ambiguous=flag, nonexistent="NaT") for flag in (True, False))
        if first is pd.NaT:
            taken = ts.tz_localize(zone, nonexistent="shift_forward")
            notes.append(f"--window {end} {ts.isoformat()} does not exist in {zone} (the hour skipped when summer "
                         f"time begins): read as {taken.isoformat()}")
        elif first != second:
            taken, other = (first, second) if i == 0 else (second, first)
            notes.append(f"--window {end} {ts.isoformat()} falls in the hour {zone} repeats when summer time ends: "
                         f"read as {taken.isoformat()} (the {('first', 'second')[i]} time, so that the window holds "
                         f"both); give {other.isoformat()} for the other")
    return notes


def place_untimed_reports(sources, window) -> None:
    """Load-test reports that carry no time of their own were placed at the
    file's mtime; the user's window says better when they ran.  Returns the
    paths of the sources placed."""
    placed = set()
    for s in sources:
        for r in s.reports:
            if r.get("time_from") == "mtime":
                r.update(start=window[0], end=window[1], time_from="window")
                placed.add(s.path)
    return placed
