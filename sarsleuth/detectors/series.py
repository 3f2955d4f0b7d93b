"""Small time-series helpers shared by the metric detectors."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sarsleuth.model import iso


@dataclass
class Episode:
    start: object     # first timestamp where the condition held
    end: object       # last timestamp where it held
    peak_time: object
    peak: float
    samples: int
    step_s: float = 0.0   # the series' sampling interval: what a sample stamped at T covers


def episodes(series, mask, max_gap_samples: int = 1, peak="max", *, bridge_seconds: float = 60.0,
             min_duration_seconds: float = 0.0) -> list[Episode]:
    """Contiguous runs where ``mask`` is True, with the peak of ``series``
    inside.

    Two runs are one episode when at most ``max_gap_samples`` samples or at
    most ``bridge_seconds`` separate them: sample counts keep the rule
    meaningful at a 10-minute interval, seconds at a 1-second one (where a
    one-sample dip is noise).  Episodes shorter than ``min_duration_seconds``
    (counting one interval for the last sample) are dropped, so a 1-second
    blip in 1-second data is not an incident while a single 10-minute sample
    still is.
    """
    flags = np.asarray(mask, dtype=bool)
    if not flags.any():
        return []
    idx = np.flatnonzero(flags)
    times = series.index
    # nanoseconds whatever the index's unit (pandas 2 keeps us/ms/s units)
    ns = np.asarray(pd.DatetimeIndex(times).as_unit("ns").asi8, dtype=np.int64)
    step_s = float(np.median(np.diff(ns))) / 1e9 if len(ns) > 1 else 0.0
    pos_gap = np.diff(idx) > max_gap_samples + 1
    time_gap = np.diff(ns[idx]) / 1e9 > bridge_seconds
    breaks = np.flatnonzero(pos_gap & time_gap)
    starts = np.concatenate(([idx[0]], idx[breaks + 1]))
    ends = np.concatenate((idx[breaks], [idx[-1]]))
    values = series.to_numpy(dtype=float)
    out = []
    for s, e in zip(starts, ends):
        if (ns[e] - ns[s]) / 1e9 + step_s < min_duration_seconds:
            continue
        window = values[s:e + 1]
        k = int(np.nanargmax(window) if peak == "max" else np.nanargmin(window))
        out.append(Episode(times[s], times[e], times[s + k], float(window[k]), int(e - s + 1), step_s))
    return out


#: Share of an episode's rise (from its baseline to its peak) a series must
#: reach for the anomaly to have taken off.
ONSET_FRACTION = 0.25


def onset_ref(series, ep: Episode, base: float) -> dict:
    """Refs ``onset``: the first sample of the episode at or above a
    quarter of its rise from ``base`` to its peak, when that is later than
    the episode's start (the series crept over its threshold first)."""
    if base != base or ep.peak <= base:
        return {}
    level = base + ONSET_FRACTION * (ep.peak - base)
    window = series[(series.index >= ep.start) & (series.index <= ep.end)]
    hits = window[window >= level]
    if not len(hits) or hits.index[0] == ep.start:
        return {}
    return {"onset": iso(hits.index[0])}


def baseline(series, quantile: float = 0.5) -> float:
    """The host's own usual level: a quantile over the whole series (robust to
    a short incident inside a long day)."""
    v = series.to_numpy(dtype=float)
    v = v[~np.isnan(v)]
    return float(np.quantile(v, quantile)) if len(v) else float("nan")


def value_at(series, ts) -> float | None:
    try:
        return float(series.loc[ts])
    except (KeyError, TypeError):
        return None


def fmt_elapsed(seconds: float) -> str:
    """How long, as an operator says it: "24 s", "3 min", "2 h 5 min"."""
    seconds = max(0, int(round(seconds)))
    if seconds < 120:
        return f"{seconds} s"
    minutes = int(round(seconds / 60))
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h {minutes % 60} min"


def fmt_time(ts) -> str:
    if ts is None or pd.isna(ts):
        return "unknown time"
    return pd.Timestamp(ts).strftime("%H:%M:%S")


def fmt_kib(kib: float) -> str:
    """A size the kernel prints in kB (which are KiB: ``anon-rss:408320kB``)
    in the unit that keeps its digits: 64 KiB, 398.8 MiB, 7.48 GiB; never
    0 MiB for a size that is not 0."""
    if kib < 1024:
        return f"{kib:.0f} KiB"
    if kib < 1024 * 1024:
        return f"{kib / 1024:.1f} MiB"
    return f"{kib / 1024 / 1024:.2f} GiB"


def severity_for(value: float, levels: list[tuple[float, str]], default: str = "low") -> str:
    """Map a value to a severity with ``levels`` = [(threshold, severity)...]
    sorted from the highest threshold down."""
    for threshold, sev in levels:
        if value >= threshold:
            return sev
    return default


def peak_ref(ep: Episode) -> dict:
    """Refs naming when an episode peaked (ISO 8601), for the narrative,
    and the sampling interval (``sample_seconds``): a value sar stamps at T
    stands for the interval before T, so what it shows may have begun that
    much earlier."""
    out = {"peak_time": iso(ep.peak_time)}
    if ep.step_s:
        out["sample_seconds"] = ep.step_s
    return out
