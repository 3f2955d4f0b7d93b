"""What a CPU's thermal interrupt leaves in the kernel's log beside its
throttling line: on some CPUs an MCE record ("Machine check events
logged"), which is no hardware error (mcelog decodes it as a thermal
event).  Used by the machine-check detector to leave those out; the
throttling itself is the ``cpu-thermal-throttle`` detector's."""
from __future__ import annotations

import bisect

import pandas as pd

from sarsleuth.knowledge.signatures import fields_of

#: A thermal interrupt's MCE record is logged this close to its throttling line.
_THERMAL_MCE_S = 2.0


def thermal_moments(events) -> tuple:
    """(times, uptimes) of events, each sorted, NaN/NaT left out."""
    if events is None or not len(events):
        return (), ()
    times = sorted(t for t in events["timestamp"] if t is not None and not pd.isna(t))
    uptimes = sorted(float(u) for u in events.get("uptime", pd.Series(dtype=float)) if u is not None and u == u)
    return times, uptimes


def _near(sorted_values: list, value, within) -> bool:
    """Whether a value of ``sorted_values`` lies within ``within`` of ``value`` (a binary search)."""
    at = bisect.bisect_left(sorted_values, value - within)
    return at < len(sorted_values) and sorted_values[at] <= value + within


def thermal_record(row, thermal) -> bool:
    """A bare "Machine check events logged" just after a thermal throttling
    line: the record the thermal interrupt logged (mcelog decodes it as a
    thermal event), no hardware error."""
    if row.kind != "machine-check" or set((fields_of("machine-check", str(row.message)) or {})) != {"logged"}:
        return False
    times, uptimes = thermal
    up = getattr(row, "uptime", None)
    if up is not None and up == up and uptimes:
        return _near(uptimes, float(up), _THERMAL_MCE_S)
    t = row.timestamp
    return t is not None and not pd.isna(t) and bool(times) and _near(times, t, pd.Timedelta(seconds=_THERMAL_MCE_S))
