"""The clock of a case, as a value: which zone each host's times were read
in, the zone every frame of the case is on, and which clock a story is told
on.  :func:`~sarsleuth.timebase.settle` decides it once; the case carries
it, and hands it to the detectors, the correlation, the narrative and the
outputs, so that none of them decides a zone of its own.

An operator reads a host's incident on that host's wall clock, and a view
across hosts of different zones on one stated zone (:data:`SHARED_ZONE`);
with ``--tz`` every story is told on the zone it names.  The functions
below the class read and say times on a given zone (``2014-05-06
15:02:03``, ``UTC+08:00``), and compare instants across the hosts of a
fleet (in UTC)."""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

#: The zone a story across hosts of different zones is told in.
SHARED_ZONE = "UTC"


@dataclass(frozen=True)
class Clock:
    #: the case's clock: every frame is on it (None: the hosts' wall clock)
    zone: str | None = None
    #: host -> zone its wall-clock times were read in
    host_zones: dict = field(default_factory=dict)
    #: ``--tz`` named one clock for everything: no story on its host's own
    one_clock: bool = False

    def host_zone(self, host):
        """The zone ``host``'s story is told on: its own, or None when it is
        unknown or ``--tz`` named one clock for all."""
        return None if self.one_clock else self.host_zones.get(host)

    def story_zone(self, hosts, otherwise=None):
        """The zone the story of ``hosts`` is told in: their zone when they
        share one (each host's own clock), :data:`SHARED_ZONE` when their
        zones differ, else ``otherwise``."""
        zones = self._zones_of(hosts)
        if len(zones) == 1:
            return zones.pop()
        if len(zones) > 1:
            return SHARED_ZONE
        return otherwise

    def zones_differ(self, hosts) -> bool:
        """Do ``hosts`` keep different zones (so their story is on SHARED_ZONE)?"""
        return len(self._zones_of(hosts)) > 1

    def on_host_clock(self, times, host):
        """Times (an index or a Timestamp) on ``host``'s clock: the same
        instants, read as the host's wall clock shows them; unchanged when
        the host's zone is not told or the times are wall clock."""
        zone = self.story_zone([host])
        if zone is None or getattr(times, "tz", None) is None:
            return times
        return times.tz_convert(zone) if hasattr(times, "tz_convert") else on_clock(times, zone)

    def _zones_of(self, hosts) -> set:
        return {str(zone) for h in hosts if (zone := self.host_zone(h))}


def on_clock(ts, zone):
    """``ts`` (an instant) as read on ``zone``'s wall clock; a wall-clock
    time (no zone known), a missing one or ``zone`` None: unchanged."""
    if zone is None or ts is None or pd.isna(ts):
        return ts
    ts = pd.Timestamp(ts)
    if ts.tzinfo is None:
        return ts
    return ts.tz_convert(str(zone))


def when(ts, with_date: bool = True, zone=None) -> str:
    """``2014-05-06 15:02:03`` (or the time alone) on ``zone``'s clock (the
    time's own when None); missing: said so."""
    if ts is None or pd.isna(ts):
        return "at an unknown time"
    return pd.Timestamp(on_clock(ts, zone)).strftime("%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S")


def zone_of(ts, zone=None) -> str:
    """How the zone of a time (on ``zone``'s clock when given) is said:
    ``UTC``, ``UTC+08:00``, ``Europe/Paris, UTC+01:00`` or ``host wall
    clock, zone unknown``."""
    if ts is None or pd.isna(ts):
        return ""
    ts = pd.Timestamp(on_clock(ts, zone))
    if ts.tzinfo is None:
        return "host wall clock, zone unknown"
    name = str(ts.tzinfo)
    off = ts.strftime("%z")
    off = f"{off[:3]}:{off[3:]}" if off else ""
    if name in ("UTC", "Z", "Etc/UTC") and off in ("+00:00", ""):
        return "UTC"
    if name in ("UTC", off) or name.startswith("UTC") or name.startswith("pytz.FixedOffset") or name[:1] in "+-":
        return f"UTC{off}"
    return f"{name}, UTC{off}"


def on_fleet_clock(ts):
    """``(time, wall)``: a finding's time comparable across the hosts of a
    fleet, each of which keeps its own zone: an aware time as a UTC instant
    (naive after conversion), ``wall`` False; a wall-clock time as it is,
    ``wall`` True; a missing one ``(None, False)``."""
    if ts is None or pd.isna(ts):
        return None, False
    ts = pd.Timestamp(ts)
    if ts.tzinfo is None:
        return ts, True
    return ts.tz_convert("UTC").tz_localize(None), False
