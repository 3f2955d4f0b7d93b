"""One clock for a fleet: every host keeps its own zone, the fleet compares
instants in UTC."""
from __future__ import annotations


def on_fleet_clock(ts):
    """A finding's time comparable across hosts: an aware time as UTC (naive
    after conversion); a wall-clock time as it is."""
    import pandas as pd
    if ts is None or pd.isna(ts):
        return None, False
    ts = pd.Timestamp(ts)
    if ts.tzinfo is None:
        return ts, True
    return ts.tz_convert("UTC").tz_localize(None), False
