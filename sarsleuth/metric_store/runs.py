"""A series' run of times and values, and turning runs into pandas objects."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

#: Label columns of the long table, in the order of a series key.
KEY_COLUMNS = ("host", "section", "device", "metric")


@dataclass(eq=False)
class Run:
    """The values of one series with their times (int64 nanoseconds: UTC
    when ``tz`` is set, wall clock when it is None) and, for values read
    from a text file, the line each was read from."""

    stamps: object
    values: object
    tz: object = None
    lines: object = None

    @property
    def count(self) -> int:
        """Values held (NaN marks a time the writer recorded nothing for
        this series, and does not count); counted once."""
        counted = self.__dict__.get("_count")
        if counted is None or counted[0] is not self.values:
            v = self.values
            if v.dtype.kind != "f":
                n = len(v)
            else:
                import numpy as np
                n = int(len(v) - np.count_nonzero(np.isnan(v)))
            counted = self.__dict__["_count"] = (v, n)
        return counted[1]


def empty_long():
    """The long table with no rows (its columns typed)."""
    return pd.DataFrame({
        "timestamp": pd.Series([], dtype="datetime64[ns]"),
        "host": pd.Series([], dtype=object),
        "section": pd.Series([], dtype=object),
        "device": pd.Series([], dtype=object),
        "metric": pd.Series([], dtype=object),
        "value": pd.Series([], dtype="float64"),
    })


def joined_series(parts):
    """Pieces of one series (from several sources or hosts) as one, in time
    order, one value per time (the first piece's)."""
    out = pd.concat(parts)
    return out[~out.index.duplicated(keep="first")].sort_index(kind="stable")


def run_series(run):
    """A run as a float64 Series on a DatetimeIndex named ``timestamp``:
    in time order, one value per time (the first seen), NaN left out."""
    stamps, values = run.stamps, run.values
    if values.dtype.kind == "f":
        keep = ~np.isnan(values)
        if not keep.all():
            stamps, values = stamps[keep], values[keep]
    if len(stamps) > 1 and not (np.diff(stamps) > 0).all():
        order = np.argsort(stamps, kind="stable")
        ordered = stamps[order]
        first = np.concatenate(([True], ordered[1:] != ordered[:-1]))
        order = order[first]
        stamps, values = stamps[order], values[order]
    index = _index(stamps, run.tz)
    index.name = "timestamp"
    return pd.Series(values.astype(np.float64), index=index, name="value")


def _index(stamps, tz):
    index = pd.DatetimeIndex(stamps.view("M8[ns]"))
    if tz is not None:
        index = index.tz_localize("UTC").tz_convert(tz)
    return index


def _stamps_of(times) -> tuple:
    """(int64 ns, tz) of a Series or index of timestamps: UTC for aware
    times, the wall clock for naive ones."""
    index = pd.DatetimeIndex(times)
    if index.unit != "ns":
        index = index.as_unit("ns")
    return np.asarray(index.asi8, dtype=np.int64), index.tz


def _timestamp(ns: int, tz):
    ts = pd.Timestamp(ns, unit="ns")
    return ts.tz_localize("UTC").tz_convert(tz) if tz is not None else ts
