"""Times as people read them in every output: the date and wall time, and
the zone said once (``UTC+08:00``, ``Europe/Paris, UTC+01:00`` or the host's
wall clock).  Kept here, beside the outputs, so that rendering depends on
the data model only, not on the narrative that also uses them."""
from __future__ import annotations


def when(ts, with_date: bool = True) -> str:
    """``2014-05-06 15:02:03`` (or the time alone); missing: said so."""
    import pandas as pd
    if ts is None or pd.isna(ts):
        return "at an unknown time"
    return pd.Timestamp(ts).strftime("%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S")


def zone_of(ts) -> str:
    """How the zone of a time is said: ``UTC``, ``UTC+08:00``,
    ``Europe/Paris, UTC+01:00`` or ``host wall clock, zone unknown``."""
    import pandas as pd
    if ts is None or pd.isna(ts):
        return ""
    ts = pd.Timestamp(ts)
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
