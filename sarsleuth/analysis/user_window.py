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
    zone; with no zone known, aware ends are read as wall clock."""
    if window is None:
        return None
    out = []
    for ts in window:
        if zone is None:
            out.append(ts.tz_localize(None) if ts.tzinfo is not None else ts)
        elif ts.tzinfo is None:
            out.append(ts.tz_localize(zone, ambiguous=True, nonexistent="shift_forward"))
        else:
            out.append(ts.tz_convert(zone))
    if out[1] < out[0]:
        raise UsageError("--window: end is before start")
    return tuple(out)


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
