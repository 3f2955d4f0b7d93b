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


#: Consecutive samples further apart than this many usual intervals (and
#: than MIN_GAP_SECONDS) have a gap in the records between them: an
#: episode, a trend or a baseline never spans it, nor a restart.
GAP_FACTOR = 3.0
MIN_GAP_SECONDS = 10.0


def step_seconds(index) -> float:
    """The usual interval of a series' samples (the median), in seconds."""
    ns = np.asarray(pd.DatetimeIndex(index).as_unit("ns").asi8, dtype=np.int64)
    return float(np.median(np.diff(ns))) / 1e9 if len(ns) > 1 else 0.0


def segment_ids(index, restarts=(), min_gap_seconds: float = MIN_GAP_SECONDS) -> np.ndarray:
    """A number per sample, the same for samples of one stretch of records:
    a new stretch begins after a gap (see :data:`GAP_FACTOR`; no shorter
    than ``min_gap_seconds``) and after a restart (``restarts``: times of
    the host's restarts, on the index's clock)."""
    n = len(index)
    if n < 2:
        return np.zeros(n, dtype=np.int64)
    ns = np.asarray(pd.DatetimeIndex(index).as_unit("ns").asi8, dtype=np.int64)
    diffs = np.diff(ns) / 1e9
    step = float(np.median(diffs))
    cut = diffs > max(GAP_FACTOR * step, step + min_gap_seconds)
    if len(restarts):
        try:
            marks = np.asarray(pd.DatetimeIndex(restarts).as_unit("ns").asi8, dtype=np.int64)
        except (TypeError, ValueError):
            marks = np.array([], dtype=np.int64)
        if len(marks):
            # a restart between two samples (or stamped with the later one)
            pos = np.searchsorted(ns, np.sort(marks), side="left")
            pos = pos[(pos > 0) & (pos < n)]
            cut[pos - 1] = True
    return np.concatenate(([0], np.cumsum(cut)))


def episodes(series, mask, max_gap_samples: int = 1, peak="max", *, bridge_seconds: float = 60.0,
             min_duration_seconds: float = 0.0, segments=None) -> list[Episode]:
    """Contiguous runs where ``mask`` is True, with the peak of ``series``
    inside.

    Two runs are one episode when at most ``max_gap_samples`` samples or at
    most ``bridge_seconds`` separate them: sample counts keep the rule
    meaningful at a 10-minute interval, seconds at a 1-second one (where a
    one-sample dip is noise).  Episodes shorter than ``min_duration_seconds``
    (counting one interval for the last sample) are dropped, so a 1-second
    blip in 1-second data is not an incident while a single 10-minute sample
    still is.  ``segments`` (:func:`segment_ids`): an episode never spans
    a gap in the records or a restart.
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
    split = pos_gap & time_gap
    if segments is not None:
        seg = np.asarray(segments)
        split |= np.diff(seg[idx]) != 0
    breaks = np.flatnonzero(split)
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


def takeoff_before(series, ep: Episode, base: float, segments=None):
    """The first sample of the run just before ``ep``, in its stretch of
    records, already at or above a quarter of the episode's rise from
    ``base`` to its peak: where a series that climbed over its threshold
    in a few steps took off (a CPU stall at 19 % then 50 % of two
    1-second rows, the quota already holding the service back in the
    first).  None when the sample before the episode is still near base."""
    if base != base or ep.peak <= base:
        return None
    level = base + ONSET_FRACTION * (ep.peak - base)
    values = series.to_numpy(dtype=float)
    at = series.index.get_loc(ep.start)
    if not isinstance(at, (int, np.integer)):
        return None
    seg = np.asarray(segments) if segments is not None else None
    first = at
    while first > 0 and values[first - 1] >= level and (seg is None or seg[first - 1] == seg[at]):
        first -= 1
    return series.index[first] if first < at else None


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


def growth_onset(series, segments, t_end):
    """Where a series began to grow without coming back before ``t_end``
    (a sample time): walking back in its stretch of records while the
    samples step down (by more than its noise: three times the median
    change of its steps), never up, and stopping at a level it held for
    :data:`PLATEAU_SAMPLES` samples; the last sample at the lowest level
    reached.  A memory finding's onset is there, not where a threshold was
    crossed (nor where other memory use filled the host before a pause)."""
    v = series.to_numpy(dtype=float)
    seg = np.asarray(segments)
    pos = int(np.flatnonzero(series.index == t_end)[0])
    stretch = np.flatnonzero(seg[: pos + 1] == seg[pos])
    steps = np.diff(v[stretch])
    noise = float(np.nanmedian(np.abs(np.diff(steps)))) if len(steps) > 1 else 0.0
    tol = max(3 * noise, 1e-9 * max(1.0, float(np.nanmax(np.abs(v[stretch])))))
    low, low_at = v[pos], pos
    for i in range(pos - 1, int(stretch[0]) - 1, -1):
        if v[i] > low + tol:
            break                  # higher before: the growth began after it
        if v[i] < low - tol:
            low, low_at = v[i], i
        elif low_at - i + 1 >= PLATEAU_SAMPLES:
            break                  # it held this level: the growth had not begun
    return series.index[low_at]


#: Samples a level holds before a growth is said to start after it.
PLATEAU_SAMPLES = 3


def interval_words(seconds: float) -> str:
    """A sampling interval as an adjective: ``10-minute``, ``1-second``."""
    seconds = float(seconds)
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g}-hour"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g}-minute"
    return f"{seconds:g}-second"


def sampled(intervals: int, seconds: float) -> str:
    """How many samples back a change of ``seconds``: ``one 10-minute
    sample`` when it fell inside one interval, ``5 samples`` otherwise."""
    if intervals <= 1:
        return f"one {interval_words(round(seconds))} sample"
    return f"{intervals + 1} samples"


def how_long(start, end, elapsed) -> str:
    """How a rise from the sample at ``start`` to the one at ``end`` is
    told, as the samples allow (``elapsed``: its ``elapsed`` figure, with
    the samples of its span): ``in 4 min (6 samples)``; a rise seen
    between two consecutive samples happened somewhere in that interval:
    ``between 14:50:01 and 15:00:01 (one 10-minute sample)``."""
    if elapsed.samples <= 1:
        return f"by {fmt_time(end)}, the first sample of its records"
    if elapsed.samples == 2:
        return f"between {fmt_time(start)} and {fmt_time(end)} ({sampled(1, elapsed.value)})"
    return f"in {fmt_elapsed(elapsed.value)} ({sampled(elapsed.samples - 1, elapsed.value)})"


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
