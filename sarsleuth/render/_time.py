"""Times as people read them in every output: the date and wall time, and
the zone said once (``UTC+08:00``, ``Europe/Paris, UTC+01:00`` or the host's
wall clock).  Kept here, beside the outputs, so that rendering depends on
the data model only, not on the narrative that also uses them.

Which clock a story is told on is decided here too (:func:`story_zone`):
an operator reads a host's incident on that host's wall clock, and a view
across hosts of different zones on one stated zone (UTC)."""
from __future__ import annotations

#: The zone a story across hosts of different zones is told in.
SHARED_ZONE = "UTC"


def story_zone(hosts, host_zones: dict, display_zone=None):
    """The zone the story of ``hosts`` is told in: their zone when they
    share one (each host's own clock), else ``SHARED_ZONE`` when their zones
    differ, else ``display_zone`` (the case's clock; None: as recorded)."""
    zones = _zones_of(hosts, host_zones)
    if len(zones) == 1:
        return zones.pop()
    if len(zones) > 1:
        return SHARED_ZONE
    return display_zone


def zones_differ(hosts, host_zones: dict) -> bool:
    """Do ``hosts`` keep different zones (so their story is on SHARED_ZONE)?"""
    return len(_zones_of(hosts, host_zones)) > 1


def _zones_of(hosts, host_zones: dict) -> set:
    return {str(host_zones[h]) for h in hosts if host_zones.get(h)}


def on_clock(ts, zone):
    """``ts`` (an instant) as read on ``zone``'s wall clock; a wall-clock
    time (no zone known), a missing one or ``zone`` None: unchanged."""
    import pandas as pd
    if zone is None or ts is None or pd.isna(ts):
        return ts
    ts = pd.Timestamp(ts)
    if ts.tzinfo is None:
        return ts
    return ts.tz_convert(str(zone))


def when(ts, with_date: bool = True, zone=None) -> str:
    """``2014-05-06 15:02:03`` (or the time alone) on ``zone``'s clock (the
    time's own when None); missing: said so."""
    import pandas as pd
    if ts is None or pd.isna(ts):
        return "at an unknown time"
    return pd.Timestamp(on_clock(ts, zone)).strftime("%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S")


def zone_of(ts, zone=None) -> str:
    """How the zone of a time (on ``zone``'s clock when given) is said:
    ``UTC``, ``UTC+08:00``, ``Europe/Paris, UTC+01:00`` or ``host wall
    clock, zone unknown``."""
    import pandas as pd
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
