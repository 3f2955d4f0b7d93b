"""The times of a list across incidents or hosts (the incident table of
every output, the HTML report's findings), on the clock its heading names.

Each incident is told on its hosts' clock (``Incident.zone``); a list of
incidents that all keep one clock is on that clock, named once in its
heading, so a time reads the same in the list and in the incident's own
story.  Where the items keep different clocks (a bundle of a Paris host
and a Shanghai host), each time is on its item's own clock with its UTC
offset beside it, and the heading says so: never a list in UTC above
stories told at 15:02:03 +08:00.
"""
from __future__ import annotations

import pandas as pd

from sarsleuth.timebase.clock import on_clock, when, zone_of

#: What a heading says of a list whose items keep their own clocks.
OWN_CLOCKS = "each on its host's clock, its UTC offset beside it"


class ListedTimes:
    """How the times of one list are said (``zones``: the clock of each
    item, None for a wall clock of no known zone)."""

    def __init__(self, zones, fallback=None):
        zones = [str(z) if z is not None else None for z in zones]
        distinct = set(zones)
        self.zone = next(iter(distinct)) if len(distinct) == 1 else (fallback if not distinct else None)
        self.one_clock = len(distinct) <= 1

    @classmethod
    def of_incidents(cls, case) -> "ListedTimes":
        return cls([inc.zone for inc in case.incidents], fallback=case.tz)

    @classmethod
    def of_findings(cls, case) -> "ListedTimes":
        return cls([case.clock.story_zone([f.host], otherwise=case.tz) for f in case.findings
                    if f.start is not None and not pd.isna(f.start)], fallback=case.tz)

    def when(self, ts, zone=None) -> str:
        """``ts`` as the list says it (``zone``: its item's clock)."""
        if ts is None or pd.isna(ts):
            return ""
        if self.one_clock:
            return when(ts, zone=self.zone)
        return f"{when(ts, zone=zone)} {_offset(on_clock(ts, zone))}".rstrip()

    def heading(self, example=None) -> str:
        """The clock the heading names: the one zone, or :data:`OWN_CLOCKS`."""
        if not self.one_clock:
            return OWN_CLOCKS
        return zone_of(example, self.zone) if example is not None else (self.zone or "")


def _offset(ts) -> str:
    """``UTC+08:00`` of an aware time, '' of a wall-clock one."""
    ts = pd.Timestamp(ts)
    if ts.tzinfo is None:
        return ""
    off = ts.strftime("%z")
    return f"UTC{off[:3]}:{off[3:]}" if off not in ("", "+0000") else "UTC"
