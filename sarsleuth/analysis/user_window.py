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
