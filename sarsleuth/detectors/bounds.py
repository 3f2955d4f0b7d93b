"""The physical bounds of sar's figures (``knowledge/bounds.toml``): a
value outside them is a counter anomaly, never evidence.

:func:`valid` keeps the samples of a series that lie within its bounds
(the detectors read every series through it, see
:meth:`~sarsleuth.detectors.context.Context.series`, and so does the
audit); :func:`counter_anomalies` says, once per source and series, which
values were left out: the file, the record (its time, and its line for a
text file) and the raw values of that record.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from sarsleuth.knowledge import read_toml
from sarsleuth.knowledge.metric_names import mapping_of
from sarsleuth.metric_store.runs import _timestamp


@dataclass(frozen=True)
class Bound:
    """Where a figure may lie: from ``low`` (None: no lower bound) to ``high``."""

    low: float | None
    high: float
    slack: float

    def outside(self, values) -> np.ndarray:
        """Which of ``values`` lie outside (NaN is not outside: it is a
        time the writer recorded nothing for)."""
        v = np.asarray(values, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            out = v > self.high + self.slack
            if self.low is not None:
                out |= v < self.low - self.slack
        return out

    def said(self) -> str:
        high = "100" if self.high == 100 else "2^63"
        return f"0-{high}" if self.low is not None else f"below {high}"


@lru_cache(maxsize=1)
def _data() -> dict:
    return read_toml("bounds.toml")


@lru_cache(maxsize=65536)
def bound_of(section: str, metric: str) -> Bound | None:
    """The bound of a figure of sar's vocabulary, or None for one outside
    it (a tsar column): not judged."""
    mapping = mapping_of(section, metric)
    if mapping is None:
        return None
    data = _data()
    percent = mapping.family.unit == "percent" and metric not in data["over_100"].get(section, ())
    signed = metric in data["signed"].get(section, ())
    return Bound(low=None if signed else 0.0, high=100.0 if percent else float(data["wrapped"]),
                 slack=float(data["slack"]))


def valid(series, section: str, metric: str):
    """``series`` without the samples outside its bounds (itself when none is)."""
    bound = bound_of(section, metric)
    if series is None or bound is None or not len(series):
        return series
    out = bound.outside(series.to_numpy())
    return series[~out] if out.any() else series


def counter_anomalies(sources, clock) -> list[str]:
    """One warning per source and item (a disk, a CPU, an interface...)
    holding values outside their bounds: the first record holding one
    (its time on the host's clock, its line as the file has it, or for a
    binary file the record's figures of the item), the figures outside
    there, and how many more the item holds."""
    out, told = [], set()
    for src in sources:
        store = getattr(src, "store", None)
        if not store:
            continue
        items: dict = {}
        for key, run in store.runs.items():
            bound = bound_of(key[1], key[3])
            if bound is None:
                continue
            bad = np.flatnonzero(bound.outside(run.values))
            if len(bad):
                items.setdefault(key[:3], []).append((key, run, bad, bound))
        for item, found in items.items():
            # one record read through two files (an sa file and its sadf -d) is told once
            first = (item, min(int(r.stamps[b[0]]) for _k, r, b, _bd in found))
            if first not in told:
                told.add(first)
                out.append(_said(src, store, found, clock))
    for src in sources:
        out.extend(_summary_rows_outside(src))
    return out


def _summary_rows_outside(src) -> list[str]:
    """sar's ``Average:`` rows outside their bounds, once per item: they
    are no samples (nothing is judged on them), but a figure no counter can
    reach says the paste's counters went wrong, whatever its rows show."""
    averages = (getattr(src, "meta", None) or {}).get("averages")
    if averages is None or not len(averages):
        return []
    values = averages["value"].to_numpy(dtype=np.float64)
    outside = np.zeros(len(averages), dtype=bool)
    for (section, metric), rows in averages.groupby(["section", "metric"], sort=False).indices.items():
        bound = bound_of(section, metric)
        if bound is not None:
            outside[rows] = bound.outside(values[rows])
    out = []
    index = src.meta.get("line_index")
    for (section, device), rows in averages[outside].groupby(["section", "device"], sort=False):
        first = rows[rows["line"] == rows["line"].min()]       # the item's first row holding one
        there = [f"{r.metric} {_num(float(r.value))} (outside {bound_of(section, r.metric).said()})"
                 for r in first.itertuples(index=False)]
        number = int(first["line"].iloc[0])
        line = index.read_line(number) if index is not None and number >= 0 else None
        out.append(f"{src.path}: {section}{' ' + device if device else ''} {first['label'].iloc[0]} row: "
                   f"{', '.join(there)}: counter anomal{'y' if len(there) == 1 else 'ies'}"
                   + (f" (line {number}: {' '.join(line.split())})" if line else ""))
    return out


def _said(src, store, found, clock) -> str:
    (host, section, device, _m), run, bad, _b = min(found, key=lambda f: int(f[1].stamps[f[2][0]]))
    stamp = int(run.stamps[bad[0]])
    when = clock.on_host_clock(_timestamp(stamp, run.tz), host).strftime("%Y-%m-%d %H:%M:%S")
    there = [f"{key[3]} {_num(float(r.values[b[0]]))} (outside {bound.said()})"
             for key, r, b, bound in found if int(r.stamps[b[0]]) == stamp]
    text = (f"{src.path}: {section}{' ' + device if device else ''} at {when}: {', '.join(there)}: "
            f"counter anomal{'y' if len(there) == 1 else 'ies'}, left out of the analysis")
    record = _record(src, store, (host, section, device), run, int(bad[0]))
    if record:
        text += f" (record: {record})"
    total = sum(len(b) for _k, _r, b, _bd in found)
    if total > len(there):
        text += f"; {total - len(there):,} more such value(s) of that {'item' if device else 'section'}"
    return text


def _record(src, store, item, run, i: int) -> str:
    """The raw values of the record holding value ``i`` of ``run``: its line
    for a text file, else its figures of the same item."""
    index = src.meta.get("line_index")
    if run.lines is not None and index is not None and int(run.lines[i]) >= 0:
        line = index.read_line(int(run.lines[i]))
        if line is not None:
            return f"line {int(run.lines[i])}: {' '.join(line.split())}"
    host, section, device = item
    stamp = run.stamps[i]
    parts = []
    for (h, s, d, m), other in store.runs.items():
        if (h, s, d) != (host, section, device):
            continue
        at = np.flatnonzero(other.stamps == stamp)[:1]
        if len(at) and not np.isnan(float(other.values[at[0]])):
            parts.append(f"{m} {_num(float(other.values[at[0]]))}")
    return ", ".join(parts)


def _num(value: float) -> str:
    return f"{value:.0f}" if value.is_integer() else f"{value:.2f}"
